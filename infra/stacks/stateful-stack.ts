/**
 * What outlives a deployment: the breadcrumbs table and the crumbs event bus (with its archive, so events can be
 * replayed after a bad rule or a DLQ incident). Kept apart from the functions so a stateless change can never
 * replace data, and so the stateless stack can be destroyed and redeployed freely.
 */
import { CfnOutput, Duration, RemovalPolicy, Stack, type StackProps } from 'aws-cdk-lib';
import { AttributeType, BillingMode, ProjectionType, StreamViewType, Table } from 'aws-cdk-lib/aws-dynamodb';
import { type Archive, EventBus } from 'aws-cdk-lib/aws-events';
import type { Construct } from 'constructs';
import { topology } from '#shared/topology.ts';
import { stageName } from '../constructs/work-queue.ts';

export interface StatefulStackProps extends StackProps {
  /** Deployment stage; suffix of the table, bus and archive names. */
  readonly stage: string;
}

export class StatefulStack extends Stack {
  /** The breadcrumbs table: every breadcrumb, definition and status record, with a stream of every change. */
  public readonly table: Table;
  /** The crumbs event bus: change events from the publisher, routed by the compiled definition rules. */
  public readonly bus: EventBus;
  /** Archive of the bus's crumbs events, for replay. */
  public readonly archive: Archive;

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
      deletionProtection: true,
      removalPolicy: RemovalPolicy.RETAIN,
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

    this.bus = new EventBus(this, 'Bus', { eventBusName: stageName(topology.bus.name, props.stage) });
    this.archive = this.bus.archive('Archive', {
      archiveName: stageName(`${topology.bus.name}-archive`, props.stage),
      description: 'Change events of the crumbs bus, kept for replay',
      eventPattern: { source: [topology.bus.source] },
      retention: Duration.days(topology.bus.archiveRetentionDays),
    });

    new CfnOutput(this, 'TableName', { value: this.table.tableName, description: 'The breadcrumbs table' });
    new CfnOutput(this, 'EventBusName', {
      value: this.bus.eventBusName,
      description: 'The crumbs event bus',
    });
  }
}
