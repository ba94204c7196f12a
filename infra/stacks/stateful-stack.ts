/**
 * What outlives a deployment: the breadcrumbs table, the crumbs event buses — the pool of `crumbs:buses` that
 * definitions' rules are spread over (`topology.bus.pool`), each with its archive, so events can be replayed after
 * a bad rule or a DLQ incident (the first bus receives every event; the others the events of the workspaces whose
 * rules they hold) and, with no issuer of the operator's, the user pool people sign in to. Kept apart from the
 * functions so a stateless change can never
 * replace data, and so the stateless stack can be destroyed and redeployed freely.
 */
import { CfnOutput, CustomResource, Duration, RemovalPolicy, Stack, type StackProps } from 'aws-cdk-lib';
import { AttributeType, BillingMode, ProjectionType, StreamViewType, Table } from 'aws-cdk-lib/aws-dynamodb';
import { type Archive, EventBus } from 'aws-cdk-lib/aws-events';
import type { Construct } from 'constructs';
import { poolBusNames, topology } from '#shared/topology.ts';
import { BlobBucket } from '../constructs/blob-bucket.ts';
import { CrumbsFunction } from '../constructs/crumbs-function.ts';
import { CrumbsUserPool } from '../constructs/user-pool.ts';
import { stageName } from '../constructs/work-queue.ts';

export interface StatefulStackProps extends StackProps {
  /** Deployment stage; suffix of the table, bus and archive names. */
  readonly stage: string;
  /**
   * Buses in the pool (`crumbs:buses`).
   * @default topology.bus.pool.defaultSize
   */
  readonly buses?: number;
  /**
   * Create the Cognito user pool people sign in to (no `crumbs:jwtIssuer`): `userPool`.
   * @default false
   */
  readonly userPool?: boolean;
  /**
   * Whether `cdk destroy` keeps the table (`crumbs:retainData`): retained with deletion protection, to be adopted by
   * the next deploy of the stage (`cdk deploy --import-existing-resources`); otherwise deleted with the stack.
   * @default false
   */
  readonly retainData?: boolean;
}

export class StatefulStack extends Stack {
  /** The breadcrumbs table: every breadcrumb, definition and status record, with a stream of every change. */
  public readonly table: Table;
  /** The first crumbs event bus: every change event, the system rules, and definition rules while it has room. */
  public readonly bus: EventBus;
  /** Every bus of the pool, `bus` first: change events from the publisher, routed by the compiled rules. */
  public readonly buses: readonly EventBus[];
  /** Archive of the first bus's crumbs events, for replay. */
  public readonly archive: Archive;
  /** The archive of each bus of `buses`, in the same order. */
  public readonly archives: readonly Archive[];
  /** Attachments and spilled contexts (the attachments room): one bucket per stage. */
  public readonly blobs: BlobBucket;
  /** The user pool and its sign-in domain, when the stack has no issuer of its own (`props.userPool`). */
  public readonly userPool?: CrumbsUserPool;
  /** The names of `buses`, in the same order: what the stateless stack refers to them by. */
  public readonly busNames: readonly string[];
  /** Removes the rule manager's rules from a bus before CloudFormation deletes it (`bus-sweeper.ts`). */
  public readonly busSweeper: CrumbsFunction;
  /** One custom resource per bus of `buses`, in the same order: its Delete sweeps that bus. */
  public readonly busSweeps: readonly CustomResource[];

  constructor(scope: Construct, id: string, props: StatefulStackProps) {
    super(scope, id, props);
    const declared = topology.table;

    this.table = new Table(this, 'Breadcrumbs', {
      tableName: stageName(declared.name, props.stage),
      partitionKey: { name: declared.partitionKey, type: AttributeType.STRING },
      sortKey: { name: declared.sortKey, type: AttributeType.STRING },
      billingMode: BillingMode.PAY_PER_REQUEST,
      // The publisher needs both images: deletes carry only the old one, updates are diffed for routing fields.
      stream: StreamViewType.NEW_AND_OLD_IMAGES,
      timeToLiveAttribute: declared.ttlAttribute,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      // Kept on destroy only when the operator says so; kept, its fixed name is what the next deploy adopts it by.
      deletionProtection: props.retainData === true,
      removalPolicy: props.retainData === true ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY,
    });
    for (const gsi of declared.gsis) {
      this.table.addGlobalSecondaryIndex({
        indexName: gsi.name,
        partitionKey: { name: gsi.partitionKey, type: AttributeType.STRING },
        sortKey: { name: gsi.sortKey, type: AttributeType.STRING },
        // Queries by schema or tag return whole breadcrumbs; ALL avoids a second read per item. The thread and
        // change index projects only what a trace or a change notice shows (table-design.md).
        ...(gsi.include
          ? { projectionType: ProjectionType.INCLUDE, nonKeyAttributes: [...gsi.include] }
          : { projectionType: ProjectionType.ALL }),
      });
    }

    const count = props.buses ?? topology.bus.pool.defaultSize;
    const names = poolBusNames(stageName(topology.bus.name, props.stage), count);
    const archiveNames = poolBusNames(stageName(`${topology.bus.name}-archive`, props.stage), count);
    // The first bus keeps the construct ids it always had, so adding buses replaces nothing.
    this.busNames = names;
    this.buses = names.map(
      (eventBusName, i) => new EventBus(this, i === 0 ? 'Bus' : `Bus${i + 1}`, { eventBusName }),
    );
    this.archives = this.buses.map((bus, i) =>
      bus.archive(i === 0 ? 'Archive' : `Archive${i + 1}`, {
        archiveName: archiveNames[i],
        description: `Change events of the crumbs bus ${names[i]}, kept for replay`,
        eventPattern: { source: [topology.bus.source] },
        retention: Duration.days(topology.bus.archiveRetentionDays),
      }),
    );
    this.bus = this.buses[0] as EventBus;
    this.archive = this.archives[0] as Archive;

    this.blobs = new BlobBucket(this, 'Blobs', {
      stage: props.stage,
      retainData: props.retainData === true,
    });
    new CfnOutput(this, 'BlobBucketName', {
      value: this.blobs.bucket.bucketName,
      description: 'Attachments and spilled contexts, keys under ws/<workspace>/',
    });

    if (props.userPool === true)
      this.userPool = new CrumbsUserPool(this, { stage: props.stage, retainData: props.retainData === true });
    // EventBridge refuses to delete a bus that has rules, and the compiled rules are made at run time: each bus has a
    // sweep that depends on it, so CloudFormation deletes the sweep first (which removes those rules), then the bus
    // — when the stage is destroyed and when a shrinking pool drops the bus.
    this.busSweeper = new CrumbsFunction(this, 'BusSweeper', {
      declaration: topology.functions.busSweeper,
      stage: props.stage,
    }).bindRuleSweep(names, topology.bus.ruleNamePrefix);
    this.busSweeps = this.buses.map((bus, i) => {
      const sweep = new CustomResource(this, i === 0 ? 'BusSweep' : `BusSweep${i + 1}`, {
        serviceToken: this.busSweeper.function.functionArn,
        resourceType: 'Custom::CrumbsBusSweep',
        properties: { EventBusName: names[i], RulePrefix: topology.bus.ruleNamePrefix },
      });
      sweep.node.addDependency(bus);
      // The grant must outlive the sweep: the role's policy is deleted only after it.
      sweep.node.addDependency(this.busSweeper.role);
      return sweep;
    });

    new CfnOutput(this, 'TableName', { value: this.table.tableName, description: 'The breadcrumbs table' });
    new CfnOutput(this, 'EventBusName', {
      value: this.bus.eventBusName,
      description: 'The first crumbs event bus (every change event; the system rules)',
    });
    new CfnOutput(this, 'EventBusPool', {
      value: names.join(','),
      description: "The crumbs event buses definitions' rules are spread over, the first first",
    });
  }
}
