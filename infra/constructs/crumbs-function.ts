/**
 * The one function construct of crumbs: every Lambda is built here, so runtime, architecture, bundling, tracing,
 * logging and alarms cannot differ between functions. Grants are made only through `bind*` helpers, each of which
 * sets the environment variable the handler reads (names from `ENV` in the topology) AND the least-privilege grant
 * for it, so a function can never have a permission without knowing the resource, or the reverse.
 */

import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { ArnFormat, Duration, Stack } from 'aws-cdk-lib';
import { Alarm, ComparisonOperator, TreatMissingData } from 'aws-cdk-lib/aws-cloudwatch';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import type { IEventBus } from 'aws-cdk-lib/aws-events';
import { type IRole, PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Architecture, Runtime, Tracing } from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { IBucket } from 'aws-cdk-lib/aws-s3';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { NagSuppressions } from 'cdk-nag';
import { Construct } from 'constructs';
import { DEFAULT_AGENT_SECRET_PREFIX } from '#shared/config.ts';
import { type EmbeddingsSetting, embeddingsSettingText } from '#shared/domain/embeddings-setting.ts';
import { ENV_ATTACHMENTS, FINALIZED_PREFIX, STAGING_PREFIX } from '#shared/rooms/attachments/reference.ts';
import {
  ENV,
  type ExecutorRunner,
  type FunctionDeclaration,
  METRICS_NAMESPACE,
  topology,
} from '#shared/topology.ts';
import { bundlingOptionsFor, type ExtraFiles, REPO_ROOT } from './bundling-options.ts';

/** What a function is, as the topology declares it (`dlqHandler` has no trigger of its own, hence the Pick). */
export type CrumbsFunctionDeclaration = Pick<
  FunctionDeclaration,
  'name' | 'entry' | 'timeoutSeconds' | 'memoryMb' | 'uses' | 'bundling'
>;

export interface CrumbsFunctionProps {
  /** The function's declaration in `shared/topology.ts`: entry, timeout and memory come from here. */
  readonly declaration: CrumbsFunctionDeclaration;
  /** Deployment stage, part of the function name (`crumbs-<stage>-<name>`). */
  readonly stage: string;
  /**
   * Absolute path of the handler module.
   * @default - the declaration's `entry`, resolved against the repository root
   */
  readonly entry?: string;
  /**
   * How long function logs are kept.
   * @default RetentionDays.ONE_MONTH
   */
  readonly logRetention?: RetentionDays;
  /**
   * Extra environment variables; resource-related variables are set by the `bind*` helpers instead.
   * @default - none
   */
  readonly environment?: Readonly<Record<string, string>>;
  /**
   * A folder copied beside the bundle (as `<bundle>/<name>`), for functions that serve files (the dashboard).
   * @default - nothing besides the bundle
   */
  readonly extraFiles?: ExtraFiles;
}

export type TableAccess = 'read' | 'read-write';

/** The EventBridge rule management actions the rule manager uses, and nothing else (all scoped to its prefix). */
export const RULE_MANAGEMENT_ACTIONS = [
  'events:PutRule',
  'events:DeleteRule',
  'events:DescribeRule',
  'events:PutTargets',
  'events:RemoveTargets',
  'events:ListTargetsByRule',
  'events:EnableRule',
  'events:DisableRule',
] as const;

/** ARN of every rule on `bus` whose name starts with `prefix`: what the rule manager may manage. */
export function ruleArnPattern(scope: Construct, bus: IEventBus, prefix: string): string {
  return Stack.of(scope).formatArn({
    service: 'events',
    resource: 'rule',
    resourceName: `${bus.eventBusName}/${prefix}*`,
    arnFormat: ArnFormat.SLASH_RESOURCE_NAME,
  });
}

/** `prefix` as a literal inside a cdk-nag `appliesTo` regex (resolved templates spell ARNs in several forms). */
function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

/** The stack's span export (`crumbs:otlpEndpoint`, `crumbs:otlpHeadersSecret`, `crumbs:otelCaptureContent`). */
export interface OtlpSetting {
  /** `xray`, `none`, or an http(s) OTLP traces URL. */
  readonly endpoint: string;
  /** A Secrets Manager secret (name or ARN) holding the endpoint's headers as a JSON object. */
  readonly headersSecret?: string | undefined;
  /** Prompts and completions on model calls' spans. */
  readonly captureContent: boolean;
}

/** What `CrumbsFunction.bindSecrets` grants: secrets named `<prefix>*`, and how the function learns of them. */
export interface SecretsBinding {
  /** Environment variables set on the function (names from `ENV`). */
  readonly environment: Readonly<Record<string, string>>;
  /** Secret name prefix; the grant covers `<prefix>*` and nothing else. */
  readonly prefix: string;
  /** Statement id of the grant in the function's role policy. */
  readonly sid: string;
  readonly actions: readonly string[];
  /** Why the prefix wildcard is needed (the cdk-nag AwsSolutions-IAM5 suppression). */
  readonly wildcardReason: string;
  /** Also `secretsmanager:ListSecrets`, which IAM grants on `*` only (it has no resource-level permissions). */
  readonly listsAll?: boolean;
}

/**
 * LLM provider keys: `CRUMBS_SECRET_PREFIX` and `secretsmanager:GetSecretValue` on secrets named `<prefix>*` only
 * (read by name at run time, `<prefix><provider>`).
 */
export function llmProviderKeys(prefix: string): SecretsBinding {
  return {
    environment: { [ENV.secretPrefix]: prefix },
    prefix,
    sid: 'ReadLlmProviderKeys',
    actions: ['secretsmanager:GetSecretValue', 'secretsmanager:DescribeSecret'],
    wildcardReason:
      'LLM provider keys are secrets named <secret prefix><provider>, chosen by definitions at run time; ' +
      'the grant covers that name prefix only (the trailing * also matches the random ARN suffix).',
  };
}

/**
 * The OpenAI-compatible embeddings endpoint's key (`crumbs:embeddings=openai-compatible/<model>`):
 * `CRUMBS_SECRET_PREFIX` and `secretsmanager:GetSecretValue` on the one secret `<prefix>embeddings`, read by name
 * at run time as the LLM providers' keys are (`shared/adapters/llm/api-keys.ts`).
 */
export function embeddingsKey(prefix: string): SecretsBinding {
  return {
    environment: { [ENV.secretPrefix]: prefix },
    prefix: `${prefix}embeddings`,
    sid: 'ReadEmbeddingsKey',
    actions: ['secretsmanager:GetSecretValue', 'secretsmanager:DescribeSecret'],
    wildcardReason:
      "The embeddings endpoint's key is the one secret <secret prefix>embeddings; the trailing * matches only the " +
      'random suffix Secrets Manager appends to its ARN.',
  };
}

/**
 * Agent credentials: `CRUMBS_SECRET_SOURCE=secretsmanager`, `CRUMBS_AGENT_SECRET_PREFIX`, and on secrets named
 * `crumbs/agents/*` only `secretsmanager:GetSecretValue` (`read`: executors that send credentials) or
 * `secretsmanager:DescribeSecret` (`describe`: the rule manager, which checks that a `secret_ref` names a secret of
 * its workspace, never its value). Each workspace's secrets are `crumbs/agents/<workspace>/<name>`
 * (`shared/adapters/secrets/secret-source.ts`). IAM cannot narrow this to one workspace: one function serves every
 * workspace and learns which from each message, so the grant is the prefix, and the workspace boundary is enforced
 * in code (the name is checked to be one plain word before `<prefix><workspace>/` is put in front of it, where the
 * definition is validated and again at call time). IAM could narrow it with attribute-based access — a reader role
 * assumed with the workspace as a session tag, its policy on `crumbs/agents/${aws:PrincipalTag/workspace}/*` — at
 * an STS call per workspace per container; that is not built.
 */
export function agentCredentials(
  access: 'read' | 'describe' | 'erase',
  prefix = DEFAULT_AGENT_SECRET_PREFIX,
): SecretsBinding {
  const grant = {
    read: { sid: 'ReadAgentCredentials', action: 'secretsmanager:GetSecretValue' },
    describe: { sid: 'DescribeAgentCredentials', action: 'secretsmanager:DescribeSecret' },
    // Deleting a workspace removes its credentials (`secret-eraser.ts`), found by name with ListSecrets.
    erase: { sid: 'EraseAgentCredentials', action: 'secretsmanager:DeleteSecret' },
  }[access];
  return {
    environment: { [ENV.secretSource]: 'secretsmanager', [ENV.agentSecretPrefix]: prefix },
    prefix,
    sid: grant.sid,
    actions: [grant.action],
    ...(access === 'erase' ? { listsAll: true } : {}),
    wildcardReason:
      'Agent credentials are secrets named <agent secret prefix><workspace>/<secret_ref>, chosen by definitions ' +
      'at run time; one function serves every workspace, so the grant covers that name prefix only (the ' +
      'trailing * also matches the random ARN suffix) and the workspace is enforced in code.',
  };
}

export class CrumbsFunction extends Construct {
  public readonly function: NodejsFunction;
  public readonly role: IRole;
  public readonly logGroup: LogGroup;
  public readonly errorsAlarm: Alarm;
  public readonly throttlesAlarm: Alarm;
  public readonly declaration: CrumbsFunctionDeclaration;

  constructor(scope: Construct, id: string, props: CrumbsFunctionProps) {
    super(scope, id);
    const { declaration, stage } = props;
    this.declaration = declaration;
    const functionName = `crumbs-${stage}-${declaration.name}`;
    const entry = props.entry ?? join(REPO_ROOT, declaration.entry);
    if (!existsSync(entry)) {
      throw new Error(
        `crumbs function ${declaration.name}: handler ${declaration.entry} does not exist (${entry})`,
      );
    }

    this.logGroup = new LogGroup(this, 'Logs', {
      logGroupName: `/aws/lambda/${functionName}`,
      retention: props.logRetention ?? RetentionDays.ONE_MONTH,
    });

    // An own role instead of the AWSLambdaBasicExecutionRole managed policy: logs only to this function's group.
    const role = new Role(this, 'Role', {
      assumedBy: new ServicePrincipal('lambda.amazonaws.com'),
      description: `crumbs ${declaration.name} (${stage})`,
    });
    this.logGroup.grantWrite(role);
    this.role = role;

    this.function = new NodejsFunction(this, 'Function', {
      functionName,
      entry,
      handler: 'handler',
      projectRoot: REPO_ROOT,
      depsLockFilePath: join(REPO_ROOT, 'package-lock.json'),
      runtime: Runtime.NODEJS_22_X,
      architecture: Architecture.ARM_64,
      timeout: Duration.seconds(declaration.timeoutSeconds),
      memorySize: declaration.memoryMb,
      tracing: Tracing.ACTIVE,
      logGroup: this.logGroup,
      role,
      bundling: bundlingOptionsFor(declaration.bundling, props.extraFiles),
      environment: {
        POWERTOOLS_SERVICE_NAME: `crumbs-${declaration.name}`,
        POWERTOOLS_METRICS_NAMESPACE: METRICS_NAMESPACE,
        // Checks of data past a slice: one worker beside an executor's event loop (Lambda gives a function under
        // 1,769 MB less than one vCPU: the worker keeps the batch's other messages moving, it adds no CPU); none
        // where an instance serves one request at a time.
        [ENV.checkWorkers]: declaration.uses.checks === 'pool' ? '1' : '0',
        ...props.environment,
      },
    });

    this.errorsAlarm = new Alarm(this, 'ErrorsAlarm', {
      alarmName: `${functionName}-errors`,
      alarmDescription: `${functionName} returned errors (unhandled exceptions or timeouts)`,
      metric: this.function.metricErrors({ period: Duration.minutes(1) }),
      threshold: 0,
      comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 1,
      treatMissingData: TreatMissingData.NOT_BREACHING,
    });
    this.throttlesAlarm = new Alarm(this, 'ThrottlesAlarm', {
      alarmName: `${functionName}-throttles`,
      alarmDescription: `${functionName} was throttled (account or reserved concurrency exhausted)`,
      metric: this.function.metricThrottles({ period: Duration.minutes(1) }),
      threshold: 0,
      comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 1,
      treatMissingData: TreatMissingData.NOT_BREACHING,
    });

    NagSuppressions.addResourceSuppressions(
      this.function,
      [
        {
          id: 'AwsSolutions-L1',
          reason:
            'crumbs pins Node.js 22 (an LTS runtime supported by Lambda) on purpose: bundles target node22 and ' +
            'the code is tested on it; moving to a newer runtime is a deliberate change, not an automatic one.',
        },
      ],
      true,
    );
    NagSuppressions.addResourceSuppressions(
      role,
      [
        {
          id: 'AwsSolutions-IAM5',
          reason:
            'xray:PutTraceSegments and xray:PutTelemetryRecords (active tracing) support no resource-level ' +
            'permissions, so AWS requires Resource "*" for them.',
          appliesTo: ['Resource::*'],
        },
      ],
      true,
    );
  }

  /** Adds one environment variable; resource variables go through the `bind*` helpers. */
  addEnvironment(name: string, value: string): this {
    this.function.addEnvironment(name, value);
    return this;
  }

  /** `CRUMBS_TABLE_NAME` and item-level access to the table and its indexes. */
  bindTable(table: ITable, access: TableAccess): this {
    this.function.addEnvironment(ENV.tableName, table.tableName);
    if (access === 'read') table.grantReadData(this.function);
    else table.grantReadWriteData(this.function);
    this.suppressIndexWildcard();
    return this;
  }

  /**
   * The blob bucket (`CRUMBS_BLOB_BUCKET`): `read` gets objects under `ws/*` (spilled contexts, attachments for a
   * model); `read-write` also puts and deletes them, the staged uploads and their markers, and lists the bucket (a
   * workspace's share, export and deletion). Nothing else of S3.
   */
  bindBlobs(bucket: IBucket, access: 'read' | 'read-write'): this {
    this.function.addEnvironment(ENV_ATTACHMENTS.bucket, bucket.bucketName);
    const objects = access === 'read' ? ['ws/*'] : ['ws/*', `${STAGING_PREFIX}*`, `${FINALIZED_PREFIX}*`];
    this.function.addToRolePolicy(
      new PolicyStatement({
        sid: access === 'read' ? 'ReadBlobs' : 'ReadWriteBlobs',
        actions: access === 'read' ? ['s3:GetObject'] : ['s3:GetObject', 's3:PutObject', 's3:DeleteObject'],
        resources: objects.map((prefix) => bucket.arnForObjects(prefix)),
      }),
    );
    // HeadObject of a missing key answers 404 only with ListBucket (403 otherwise), which `head` relies on.
    this.function.addToRolePolicy(
      new PolicyStatement({ sid: 'ListBlobs', actions: ['s3:ListBucket'], resources: [bucket.bucketArn] }),
    );
    NagSuppressions.addResourceSuppressions(
      this.role,
      [
        {
          id: 'AwsSolutions-IAM5',
          reason:
            'Blobs are content-addressed keys under each workspace (ws/<workspace>/blobs/<sha256>), made at run time: ' +
            'the grant is to the prefixes crumbs writes, in the stage bucket only.',
          appliesTo: [{ regex: '/^Resource::.*Blobs.*\\/(ws|staging|finalized)\\/\\*$/g' }],
        },
      ],
      true,
    );
    return this;
  }

  /**
   * Read access to the table's stream only (the event source mapping polls it). Not `grantStreamRead`: that also
   * grants `dynamodb:ListStreams` on `*`, which Lambda does not need when it is given the stream ARN.
   */
  bindTableStream(table: ITable): this {
    table.grantStream(
      this.function,
      'dynamodb:DescribeStream',
      'dynamodb:GetRecords',
      'dynamodb:GetShardIterator',
    );
    return this;
  }

  /**
   * `CRUMBS_EVENT_BUS_NAME` (the first bus), `CRUMBS_EVENT_BUS_POOL` and `CRUMBS_BUS_PLACEMENT_CACHE_MS`, and
   * `events:PutEvents` on the buses of the pool only.
   */
  bindBus(buses: readonly IEventBus[], access: 'put-events'): this {
    this.bindBusPool(buses);
    if (access === 'put-events') for (const bus of buses) bus.grantPutEventsTo(this.function);
    return this;
  }

  private bindBusPool(buses: readonly IEventBus[]): void {
    const [first] = buses;
    if (!first) throw new Error(`${this.declaration.name}: the bus pool is empty`);
    this.function.addEnvironment(ENV.busName, first.eventBusName);
    this.function.addEnvironment(ENV.busPool, Stack.of(this).toJsonString(buses.map((b) => b.eventBusName)));
    this.function.addEnvironment(
      ENV.busPlacementCacheMs,
      String(topology.bus.pool.placementCacheSeconds * 1000),
    );
  }

  /**
   * What the rule manager needs: the bus pool's env vars (see `bindBus`), `CRUMBS_RULE_NAME_PREFIX`, `CRUMBS_EXECUTOR_QUEUE_ARNS`,
   * `CRUMBS_RULE_TARGETS_DLQ_ARN` (every target's DeadLetterConfig; an SQS DLQ needs no grant), management of rules named `<prefix>*` on the buses of the pool and nothing else (it places rules in the pool;
   * it creates no buses), and `events:ListRules` (the one
   * EventBridge action without resource-level permissions; it lists names, it changes nothing).
   *
   * The rule manager cannot point rules anywhere but the crumbs executor queues: it has no `iam:PassRole`, so
   * only targets with a resource policy can receive events, and the only queues whose policy admits EventBridge
   * for rules under this prefix are the executor queues (see `allowRuleDelivery` in `work-queue.ts`).
   */
  bindRuleManagement(
    buses: readonly IEventBus[],
    prefix: string,
    queues: Readonly<Record<ExecutorRunner, IQueue>>,
    ruleTargetsDlq: IQueue,
  ): this {
    this.bindBusPool(buses);
    this.function.addEnvironment(ENV.ruleNamePrefix, prefix);
    const arns: Record<string, string> = {};
    for (const [kind, queue] of Object.entries(queues)) arns[kind] = queue.queueArn;
    this.function.addEnvironment(ENV.executorQueueArns, Stack.of(this).toJsonString(arns));
    // Named in every target's DeadLetterConfig; no grant: EventBridge sends under the queue's own policy.
    this.function.addEnvironment(ENV.ruleTargetsDlqArn, ruleTargetsDlq.queueArn);
    this.function.addToRolePolicy(
      new PolicyStatement({
        sid: 'ManageOwnRules',
        actions: [...RULE_MANAGEMENT_ACTIONS],
        resources: buses.map((bus) => ruleArnPattern(this, bus, prefix)),
      }),
    );
    this.function.addToRolePolicy(
      new PolicyStatement({ sid: 'ListRules', actions: ['events:ListRules'], resources: ['*'] }),
    );
    NagSuppressions.addResourceSuppressions(
      this.role,
      [
        {
          id: 'AwsSolutions-IAM5',
          reason:
            'Rule management is scoped to rule/<crumbs bus>/<rule name prefix>* on each bus of the pool: the rule ' +
            'manager creates one rule per definition, named with that prefix, and may touch no other rule. events:ListRules supports no ' +
            'resource-level permissions, so it is granted on "*" (it reads rule names, it changes nothing).',
          appliesTo: [
            { regex: `/^Resource::arn:.+:events:.*:rule\\/.+\\/${escapeRegex(prefix)}\\*$/g` },
            'Resource::*',
          ],
        },
      ],
      true,
    );
    return this;
  }

  /**
   * What the bus sweeper needs (`shared/core/rules/bus-sweeper.ts`): to list, untarget and delete rules named
   * `<prefix>*` on the buses of the pool, and nothing else; `events:ListRules` on `*` as for the rule manager.
   */
  bindRuleSweep(busNames: readonly string[], prefix: string): this {
    this.function.addToRolePolicy(
      new PolicyStatement({
        sid: 'SweepOwnRules',
        actions: ['events:ListTargetsByRule', 'events:RemoveTargets', 'events:DeleteRule'],
        resources: busNames.map((name) =>
          Stack.of(this).formatArn({
            service: 'events',
            resource: 'rule',
            resourceName: `${name}/${prefix}*`,
            arnFormat: ArnFormat.SLASH_RESOURCE_NAME,
          }),
        ),
      }),
    );
    this.function.addToRolePolicy(
      new PolicyStatement({ sid: 'ListRules', actions: ['events:ListRules'], resources: ['*'] }),
    );
    NagSuppressions.addResourceSuppressions(
      this.role,
      [
        {
          id: 'AwsSolutions-IAM5',
          reason:
            "The sweeper removes the rule manager's rules, rule/<crumbs bus>/<rule name prefix>*, from the buses of " +
            'the pool before CloudFormation deletes them; events:ListRules supports no resource-level permissions.',
          appliesTo: [
            { regex: `/^Resource::arn:.+:events:.*:rule\\/.+\\/${escapeRegex(prefix)}\\*$/g` },
            'Resource::*',
          ],
        },
      ],
      true,
    );
    return this;
  }

  /**
   * Timers and schedules (`uses.timers`): the env vars naming the schedule group, the timers queue, its DLQ and the
   * scheduler role; scheduler:Create/Update/Delete/GetSchedule on schedules of that group only; and iam:PassRole on
   * that one role, passed to Scheduler only, so every schedule this function makes can only reach the timers queue.
   */
  bindTimers(timers: {
    scheduleGroupName: string;
    scheduleArnPattern(): string;
    queue: { queue: IQueue; deadLetterQueue: IQueue };
    schedulerRole: { roleArn: string };
  }): this {
    this.function.addEnvironment(ENV.scheduleGroup, timers.scheduleGroupName);
    this.function.addEnvironment(ENV.timersQueueArn, timers.queue.queue.queueArn);
    this.function.addEnvironment(ENV.timersDlqArn, timers.queue.deadLetterQueue.queueArn);
    this.function.addEnvironment(ENV.schedulerRoleArn, timers.schedulerRole.roleArn);
    this.function.addToRolePolicy(
      new PolicyStatement({
        sid: 'ManageTimerSchedules',
        actions: [
          'scheduler:CreateSchedule',
          'scheduler:UpdateSchedule',
          'scheduler:DeleteSchedule',
          'scheduler:GetSchedule',
        ],
        resources: [timers.scheduleArnPattern()],
      }),
    );
    this.function.addToRolePolicy(
      new PolicyStatement({
        sid: 'PassSchedulerRole',
        actions: ['iam:PassRole'],
        resources: [timers.schedulerRole.roleArn],
        conditions: { StringEquals: { 'iam:PassedToService': 'scheduler.amazonaws.com' } },
      }),
    );
    NagSuppressions.addResourceSuppressions(
      this.role,
      [
        {
          id: 'AwsSolutions-IAM5',
          reason:
            'Timer schedules are created per run step and named by hash at run time; the grant covers the schedules ' +
            'of the crumbs schedule group only (schedule/<group>/*).',
          appliesTo: [
            {
              regex: `/^Resource::arn:.+:scheduler:.*:schedule\\/${escapeRegex(timers.scheduleGroupName)}\\/\\*$/g`,
            },
          ],
        },
      ],
      true,
    );
    return this;
  }

  /**
   * Cancelling timers (`uses.timers: 'cancel'`: a workspace's deletion): the schedule group's name, and
   * scheduler:ListSchedules (which takes no resource: `*`) and scheduler:DeleteSchedule on schedules of that group
   * only. No role to pass, so this function can create nothing.
   */
  bindTimerCancellation(timers: { scheduleGroupName: string; scheduleArnPattern(): string }): this {
    this.function.addEnvironment(ENV.scheduleGroup, timers.scheduleGroupName);
    this.function.addToRolePolicy(
      new PolicyStatement({
        sid: 'DeleteTimerSchedules',
        actions: ['scheduler:DeleteSchedule'],
        resources: [timers.scheduleArnPattern()],
      }),
    );
    this.function.addToRolePolicy(
      new PolicyStatement({
        sid: 'ListTimerSchedules',
        actions: ['scheduler:ListSchedules'],
        resources: ['*'],
      }),
    );
    NagSuppressions.addResourceSuppressions(
      this.role,
      [
        {
          id: 'AwsSolutions-IAM5',
          reason:
            "A workspace's deletion finds its timers by name prefix: scheduler:ListSchedules supports no resource " +
            'type (`*` is the only resource it takes); deletes are limited to the crumbs schedule group.',
          appliesTo: [
            'Resource::*',
            {
              regex: `/^Resource::arn:.+:scheduler:.*:schedule\\/${escapeRegex(timers.scheduleGroupName)}\\/\\*$/g`,
            },
          ],
        },
      ],
      true,
    );
    return this;
  }

  /**
   * Where the function sends its OpenTelemetry spans (`shared/adapters/tracing/otel.ts`): `xray` (X-Ray's OTLP
   * endpoint in the stack's region, SigV4 with the function's role: `xray:PutSpans`, and `PutSpansForIndexing` for
   * Transaction Search's indexed spans), an OTLP/HTTP URL (headers from a Secrets Manager secret, read access to
   * that secret alone), or `none`.
   */
  bindOtlp(tracing: OtlpSetting): this {
    this.function.addEnvironment(ENV.otlpEndpoint, tracing.endpoint);
    if (tracing.endpoint === 'none') return this;
    if (tracing.captureContent) this.function.addEnvironment(ENV.otelCaptureContent, 'true');
    if (tracing.endpoint === 'xray') {
      this.function.addToRolePolicy(
        new PolicyStatement({
          sid: 'SendSpansToXRayOtlp',
          actions: ['xray:PutSpans', 'xray:PutSpansForIndexing'],
          resources: ['*'],
        }),
      );
      NagSuppressions.addResourceSuppressions(
        this.role,
        [
          {
            id: 'AwsSolutions-IAM5',
            reason:
              "xray:PutSpans and xray:PutSpansForIndexing (X-Ray's OTLP endpoint) support no resource-level " +
              'permissions, so AWS requires Resource "*" for them.',
            appliesTo: ['Resource::*'],
          },
        ],
        true,
      );
      return this;
    }
    if (tracing.headersSecret !== undefined) {
      const stack = Stack.of(this);
      const arn = tracing.headersSecret.startsWith('arn:')
        ? tracing.headersSecret
        : stack.formatArn({
            service: 'secretsmanager',
            resource: 'secret',
            // A name: Secrets Manager appends `-XXXXXX` to the ARN.
            resourceName: `${tracing.headersSecret}-??????`,
            arnFormat: ArnFormat.COLON_RESOURCE_NAME,
          });
      this.function.addEnvironment(ENV.otlpHeadersSecret, tracing.headersSecret);
      this.function.addToRolePolicy(
        new PolicyStatement({
          sid: 'ReadOtlpHeaders',
          actions: ['secretsmanager:GetSecretValue'],
          resources: [arn],
        }),
      );
    }
    return this;
  }

  /**
   * Read access to one family of secrets, named `<prefix>*` (see `llmProviderKeys` and `agentCredentials`): the
   * environment variables that tell the function where they are, the actions it needs on names with that prefix
   * only, and the cdk-nag reason for the prefix wildcard.
   */
  bindSecrets(secrets: SecretsBinding): this {
    for (const [name, value] of Object.entries(secrets.environment))
      this.function.addEnvironment(name, value);
    this.function.addToRolePolicy(
      new PolicyStatement({
        sid: secrets.sid,
        actions: [...secrets.actions],
        // Secrets Manager appends `-XXXXXX` to secret ARNs, so a prefix grant must end in `*`.
        resources: [
          Stack.of(this).formatArn({
            service: 'secretsmanager',
            resource: 'secret',
            resourceName: `${secrets.prefix}*`,
            arnFormat: ArnFormat.COLON_RESOURCE_NAME,
          }),
        ],
      }),
    );
    if (secrets.listsAll) {
      this.function.addToRolePolicy(
        new PolicyStatement({
          sid: 'ListSecrets',
          actions: ['secretsmanager:ListSecrets'],
          resources: ['*'],
        }),
      );
      NagSuppressions.addResourceSuppressions(
        this.role,
        [
          {
            id: 'AwsSolutions-IAM5',
            reason:
              'secretsmanager:ListSecrets has no resource-level permissions; it lists names and metadata, never ' +
              'values, and the function deletes only names under the agent secret prefix.',
            appliesTo: ['Resource::*'],
          },
        ],
        true,
      );
    }
    NagSuppressions.addResourceSuppressions(
      this.role,
      [
        {
          id: 'AwsSolutions-IAM5',
          reason: secrets.wildcardReason,
          appliesTo: [
            { regex: `/^Resource::arn:.+:secretsmanager:.*:secret:${escapeRegex(secrets.prefix)}\\*$/g` },
          ],
        },
      ],
      true,
    );
    return this;
  }

  /**
   * `CRUMBS_EMBEDDINGS` as the operator set it (`crumbs:embeddings`), and for a Bedrock model `bedrock:InvokeModel`
   * on that one model: every function that indexes or searches vectors must use the same model, so they all get
   * this binding or none does. Off (`none`), nothing is granted; an OpenAI-compatible endpoint gets its base URL.
   */
  bindEmbeddings(setting: EmbeddingsSetting): this {
    this.function.addEnvironment(ENV.embeddings, embeddingsSettingText(setting));
    if (setting.kind === 'openai-compatible') {
      this.function.addEnvironment(ENV.embeddingsBaseUrl, setting.baseUrl);
    }
    if (setting.kind !== 'bedrock') return this;
    this.function.addToRolePolicy(
      new PolicyStatement({
        sid: 'InvokeEmbeddingModel',
        actions: ['bedrock:InvokeModel'],
        resources: [
          Stack.of(this).formatArn({
            service: 'bedrock',
            account: '',
            resource: 'foundation-model',
            resourceName: setting.model,
            arnFormat: ArnFormat.SLASH_RESOURCE_NAME,
          }),
        ],
      }),
    );
    return this;
  }

  /**
   * Invoke (and stream) Bedrock models for `bedrock/<modelId>` LLM calls. Which model is up to each definition
   * at run time, so the grant covers foundation models (in any region: cross-region inference profiles route to
   * other regions) and this account's inference profiles; other providers go through `bindSecrets(llmProviderKeys(…))`.
   */
  bindLlmModels(): this {
    const stack = Stack.of(this);
    this.function.addToRolePolicy(
      new PolicyStatement({
        sid: 'InvokeLlmModels',
        actions: ['bedrock:InvokeModel', 'bedrock:InvokeModelWithResponseStream'],
        resources: [
          stack.formatArn({
            service: 'bedrock',
            region: '*',
            account: '',
            resource: 'foundation-model',
            resourceName: '*',
            arnFormat: ArnFormat.SLASH_RESOURCE_NAME,
          }),
          stack.formatArn({
            service: 'bedrock',
            resource: 'inference-profile',
            resourceName: '*',
            arnFormat: ArnFormat.SLASH_RESOURCE_NAME,
          }),
        ],
      }),
    );
    NagSuppressions.addResourceSuppressions(
      this.role,
      [
        {
          id: 'AwsSolutions-IAM5',
          reason:
            'Agent and tool definitions choose their Bedrock model at run time (bedrock/<modelId>), so invoking is ' +
            "granted on foundation models and this account's inference profiles, and on no other Bedrock action.",
          appliesTo: [
            { regex: '/^Resource::arn:.+:bedrock:\\*::foundation-model\\/\\*$/g' },
            { regex: '/^Resource::arn:.+:bedrock:.*:inference-profile\\/\\*$/g' },
          ],
        },
      ],
      true,
    );
    return this;
  }

  private suppressIndexWildcard(): void {
    NagSuppressions.addResourceSuppressions(
      this.role,
      [
        {
          id: 'AwsSolutions-IAM5',
          reason:
            'Queries go through the breadcrumbs table global secondary indexes (by schema, by tag); the grant is ' +
            '<table ARN>/index/* of the crumbs table only, not of any other table.',
          appliesTo: [{ regex: '/^Resource::.*\\/index\\/\\*$/g' }],
        },
      ],
      true,
    );
  }
}
