/**
 * Everything that can be destroyed and redeployed without losing data: the functions, their queues and DLQs, the
 * rule manager's static rule, the HTTP API and the alarms. Built from `shared/topology.ts`: which functions exist,
 * their triggers and batch settings, and which resources each one uses (`uses`) all come from there.
 */
import { join } from 'node:path';
import { CfnOutput, Duration, Stack, type StackProps } from 'aws-cdk-lib';
import {
  HttpApi,
  HttpMethod,
  HttpNoneAuthorizer,
  HttpStage,
  LogGroupLogDestination,
} from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpJwtAuthorizer } from 'aws-cdk-lib/aws-apigatewayv2-authorizers';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import type { Alarm } from 'aws-cdk-lib/aws-cloudwatch';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { type IEventBus, Rule } from 'aws-cdk-lib/aws-events';
import { SqsQueue } from 'aws-cdk-lib/aws-events-targets';
import { StartingPosition } from 'aws-cdk-lib/aws-lambda';
import { SqsDlq, SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Queue } from 'aws-cdk-lib/aws-sqs';
import { NagSuppressions } from 'cdk-nag';
import type { Construct } from 'constructs';
import { TITAN_V2_MODEL_ID } from '#shared/adapters/embeddings/titan-embedder.ts';
import type { WorkspaceQuotaOverrides } from '#shared/config.ts';
import { DEFAULT_EMBEDDED_SCHEMAS } from '#shared/core/stream/vector-search.ts';
import type { LlmProvider } from '#shared/domain/llm-model.ts';
import {
  ENV,
  EXECUTOR_RUNNERS,
  type ExecutorRunner,
  type FunctionDeclaration,
  type HttpTrigger,
  indexerPattern,
  ruleManagerPattern,
  type SqsTrigger,
  type StreamTrigger,
  topology,
  workspaceQuotaDefaults,
} from '#shared/topology.ts';
import { buildDashboard } from '../../ui/build.ts';
import type { TenantLimits } from '../config.ts';
import {
  CrumbsFunction,
  type CrumbsFunctionDeclaration,
  type ExtraFiles,
  REPO_ROOT,
  ruleArnPattern,
} from '../constructs/crumbs-function.ts';
import { RuleTargetDeadLetters } from '../constructs/rule-target-dead-letters.ts';
import { Timers } from '../constructs/timers.ts';
import {
  DEAD_LETTER_RETENTION,
  deadLetterAlarm,
  SECURE_QUEUE,
  stageName,
  WorkQueue,
} from '../constructs/work-queue.ts';

export interface StatelessStackProps extends StackProps {
  /** Deployment stage; part of every function, queue and API name. */
  readonly stage: string;
  /** The breadcrumbs table (from the stateful stack); it must have a stream. */
  readonly table: ITable;
  /** The first crumbs event bus (from the stateful stack): the system rules are on it. */
  readonly bus: IEventBus;
  /**
   * Every bus of the pool, `bus` first (from the stateful stack): the publisher puts events and the rule manager
   * places rules on these.
   * @default [bus]
   */
  readonly buses?: readonly IEventBus[];
  /** Issuer URL of the JWTs the HTTP API accepts (for example a Cognito user pool or an OIDC provider). */
  readonly jwtIssuer: string;
  /** Accepted `aud` (or `client_id`) values of those JWTs. */
  readonly jwtAudience: readonly string[];
  /** The JWT claim listing the workspaces a caller may use. */
  readonly workspacesClaim: string;
  /** Name prefix of the Secrets Manager secrets holding LLM provider keys (`<prefix><provider>`). */
  readonly llmSecretPrefix: string;
  /** Where a model id without a provider runs; given to the functions whose topology `uses.llm`. */
  readonly defaultLlmProvider: LlmProvider;
  /** What one workspace may take (`TENANT_LIMITS`); set on the functions whose topology `uses.limits`. */
  readonly tenantLimits: TenantLimits;
  /**
   * What one workspace may hold of the shared capacity: definitions, and rules on the bus pool (given to the rule
   * manager as `ENV.maxDefinitionsPerWorkspace`, `ENV.maxRulesPerWorkspace`).
   * @default - `workspaceQuotaDefaults` of the pool
   */
  readonly workspaceQuotas?: {
    readonly definitions: number;
    readonly rules: number;
    readonly workspaces?: WorkspaceQuotaOverrides;
  };
  /**
   * The operator's ceiling on response bodies of definitions' requests (`CRUMBS_MAX_RESPONSE_BYTES`), set on every
   * function (the executors read it when they call out, the rule manager when it checks a definition).
   * @default - unset: the guard's 5 MiB
   */
  readonly maxResponseBytes?: number;
  /**
   * Handler paths by function name, replacing the topology's entries. Only for local experiments while a
   * handler does not exist yet; the deployed app never sets it.
   * @default - every function's `entry` from the topology
   */
  readonly entryOverrides?: Readonly<Record<string, string>>;
}

/**
 * Functions that index (publisher) or search (API, agent, tool, context builder) breadcrumb embeddings. The
 * topology's `uses` does not declare embeddings yet; until it does, this list (checked by the template tests
 * against the handlers) says which functions get the Bedrock embedding model.
 */

function sqsTrigger(declaration: FunctionDeclaration): SqsTrigger {
  if (declaration.trigger.kind !== 'sqs') throw new Error(`${declaration.name}: expected an SQS trigger`);
  return declaration.trigger;
}

function httpTrigger(declaration: FunctionDeclaration): HttpTrigger {
  if (declaration.trigger.kind !== 'http') throw new Error(`${declaration.name}: expected an HTTP trigger`);
  return declaration.trigger;
}

function streamTrigger(declaration: FunctionDeclaration): StreamTrigger {
  if (declaration.trigger.kind !== 'dynamodb-stream') {
    throw new Error(`${declaration.name}: expected a DynamoDB stream trigger`);
  }
  return declaration.trigger;
}

export class StatelessStack extends Stack {
  public readonly api: CrumbsFunction;
  /** Serves the dashboard's files at `/ui` (public; the dashboard's data calls need the JWT). */
  public readonly ui: CrumbsFunction;
  public readonly publisher: CrumbsFunction;
  public readonly ruleManager: CrumbsFunction;
  public readonly executors: Readonly<Record<ExecutorRunner, CrumbsFunction>>;
  public readonly dlqHandler: CrumbsFunction;
  /** Keeps embeddings in step with breadcrumbs, from change events (never on the publishing path). */
  public readonly indexer: CrumbsFunction;
  public readonly indexerQueue: WorkQueue;
  /** The indexer's static rule: changes of embedded schemas → indexer queue. */
  public readonly indexerRule: Rule;
  public readonly ruleManagerQueue: WorkQueue;
  /** Timers and schedules: the Scheduler group, the timers queue (DLQ, alarm) and the scheduler role. */
  public readonly timers: Timers;
  /** Turns fired timers and schedules into breadcrumbs. */
  public readonly timer: CrumbsFunction;
  public readonly executorQueues: Readonly<Record<ExecutorRunner, WorkQueue>>;
  /** On-failure destination of the publisher's stream event source (records it gave up on). */
  public readonly publisherFailures: Queue;
  /** Where executor dead letters go that the DLQ handler itself failed to handle. */
  public readonly parkedDeadLetters: Queue;
  /** The compiled rule targets' DLQ (`topology.bus.ruleTargets`), with its policy and alarm. */
  public readonly ruleTargetDeadLetters: RuleTargetDeadLetters;
  /** The rule manager's own static rule: definition changes and sync requests → rule-manager queue. */
  public readonly ruleManagerRule: Rule;
  public readonly httpApi: HttpApi;
  public readonly httpStage: HttpStage;
  /** Every alarm of the stack: DLQ depth, function errors and throttles. */
  public readonly alarms: readonly Alarm[];

  private readonly props: StatelessStackProps;

  constructor(scope: Construct, id: string, props: StatelessStackProps) {
    super(scope, id, props);
    this.props = props;
    const { stage, table, bus } = props;
    const f = topology.functions;
    const alarms: Alarm[] = [];

    // Dead letters the DLQ handler fails on are parked, not retried until they expire.
    this.parkedDeadLetters = new Queue(this, 'ParkedDeadLetters', {
      ...SECURE_QUEUE,
      queueName: stageName('crumbs-dead-letters-parked', stage),
      retentionPeriod: DEAD_LETTER_RETENTION,
    });
    alarms.push(
      deadLetterAlarm(
        this,
        'ParkedDeadLettersAlarm',
        this.parkedDeadLetters,
        'The DLQ handler failed on executor dead letters; they are parked for manual inspection',
      ),
    );

    // Timers first: the workflow executor and the rule manager create schedules that target the timers queue.
    this.timers = new Timers(this, 'Timers', {
      stage,
      queue: sqsTrigger(f.timer).queue,
      scheduleGroup: topology.timers.scheduleGroup,
      schedulerRoleName: topology.timers.schedulerRoleName,
    });
    alarms.push(this.timers.deadLetterAlarm);
    const timerTrigger = sqsTrigger(f.timer);
    this.timer = this.crumbsFunction(f.timer);
    this.timer.function.addEventSource(
      new SqsEventSource(this.timers.queue.queue, {
        batchSize: timerTrigger.batchSize,
        maxBatchingWindow: Duration.seconds(timerTrigger.maxBatchingWindowSeconds),
        maxConcurrency: timerTrigger.maxConcurrency,
        reportBatchItemFailures: true,
      }),
    );

    // Executor queues: compiled definition rules deliver here; each runner's Lambda consumes its queue.
    const compiledRules = this.buses().map((b) => ruleArnPattern(this, b, topology.bus.ruleNamePrefix));
    const executorQueues: Partial<Record<ExecutorRunner, WorkQueue>> = {};
    const executors: Partial<Record<ExecutorRunner, CrumbsFunction>> = {};
    for (const kind of EXECUTOR_RUNNERS) {
      const declaration = f.executors[kind];
      const trigger = sqsTrigger(declaration);
      const queue = new WorkQueue(this, `${pascal(declaration.name)}Queue`, {
        declaration: trigger.queue,
        stage,
        deadLetterConsumerTimeout: Duration.seconds(f.dlqHandler.timeoutSeconds),
        parkingQueue: this.parkedDeadLetters,
      }).allowRuleDelivery(compiledRules);
      executorQueues[kind] = queue;
      alarms.push(queue.deadLetterAlarm);

      const fn = this.crumbsFunction(declaration);
      // The event source grants consuming the queue, which includes sqs:GetQueueUrl and
      // sqs:ChangeMessageVisibility: the executor uses both to bring a failed message back after a back-off in
      // seconds instead of the visibility timeout (shared/adapters/sqs/sqs-batch.ts; asserted in the template tests).
      fn.function.addEventSource(
        new SqsEventSource(queue.queue, {
          batchSize: trigger.batchSize,
          maxBatchingWindow: Duration.seconds(trigger.maxBatchingWindowSeconds),
          maxConcurrency: trigger.maxConcurrency,
          reportBatchItemFailures: true,
        }),
      );
      executors[kind] = fn;
    }
    this.executorQueues = executorQueues as Record<ExecutorRunner, WorkQueue>;
    this.executors = executors as Record<ExecutorRunner, CrumbsFunction>;
    const executorQueueMap = Object.fromEntries(
      EXECUTOR_RUNNERS.map((kind) => [kind, this.executorQueues[kind].queue]),
    ) as Record<ExecutorRunner, Queue>;

    // Compiled rule targets dead-letter here what EventBridge could not deliver to an executor queue.
    this.ruleTargetDeadLetters = new RuleTargetDeadLetters(this, 'RuleTargetDeadLetters', {
      stage,
      ruleArnPatterns: compiledRules,
      consumerTimeout: Duration.seconds(f.dlqHandler.timeoutSeconds),
      parkingQueue: this.parkedDeadLetters,
    });
    alarms.push(this.ruleTargetDeadLetters.alarm);

    // DLQ handler: one event source per executor DLQ and the rule targets' DLQ; answers dead letters with error
    // breadcrumbs.
    this.dlqHandler = this.crumbsFunction(f.dlqHandler);
    for (const queue of [
      ...EXECUTOR_RUNNERS.map((runner) => this.executorQueues[runner].deadLetterQueue),
      this.ruleTargetDeadLetters.queue,
    ]) {
      this.dlqHandler.function.addEventSource(
        new SqsEventSource(queue, { batchSize: f.dlqHandler.batchSize, reportBatchItemFailures: true }),
      );
    }

    // Rule manager: its queue is fed by its own static rule on the crumbs bus.
    const ruleManagerTrigger = sqsTrigger(f.ruleManager);
    this.ruleManagerQueue = new WorkQueue(this, 'RuleManagerQueue', {
      declaration: ruleManagerTrigger.queue,
      stage,
    });
    alarms.push(this.ruleManagerQueue.deadLetterAlarm);
    this.ruleManagerRule = new Rule(this, 'RuleManagerRule', {
      eventBus: bus,
      ruleName: topology.bus.ruleManagerRuleName,
      description: 'Definition changes and rules-sync requests, to the crumbs rule manager',
      eventPattern: ruleManagerPattern(),
      // Events EventBridge cannot deliver land in the same DLQ as messages the rule manager failed on.
      targets: [
        new SqsQueue(this.ruleManagerQueue.queue, { deadLetterQueue: this.ruleManagerQueue.deadLetterQueue }),
      ],
    });
    this.ruleManager = this.crumbsFunction(f.ruleManager, {
      executorQueues: executorQueueMap,
      ruleTargetsDlq: this.ruleTargetDeadLetters.queue,
    });
    const quotas = props.workspaceQuotas ?? workspaceQuotaDefaults(this.buses().length);
    this.ruleManager.addEnvironment(ENV.maxDefinitionsPerWorkspace, String(quotas.definitions));
    this.ruleManager.addEnvironment(ENV.maxRulesPerWorkspace, String(quotas.rules));
    if (props.workspaceQuotas?.workspaces !== undefined) {
      this.ruleManager.addEnvironment(ENV.workspaceQuotas, JSON.stringify(props.workspaceQuotas.workspaces));
    }
    this.ruleManager.function.addEventSource(
      new SqsEventSource(this.ruleManagerQueue.queue, {
        batchSize: ruleManagerTrigger.batchSize,
        maxBatchingWindow: Duration.seconds(ruleManagerTrigger.maxBatchingWindowSeconds),
        maxConcurrency: ruleManagerTrigger.maxConcurrency,
        reportBatchItemFailures: true,
      }),
    );

    // Indexer: its own static rule on the bus feeds its queue (DLQ, alarm), so an embedding model that fails
    // (no Bedrock access, throttling) retries and dead-letters here and never holds up the publisher.
    const indexerTrigger = sqsTrigger(f.indexer);
    this.indexerQueue = new WorkQueue(this, 'IndexerQueue', { declaration: indexerTrigger.queue, stage });
    alarms.push(this.indexerQueue.deadLetterAlarm);
    this.indexerRule = new Rule(this, 'IndexerRule', {
      eventBus: bus,
      ruleName: topology.bus.indexerRuleName,
      description: 'Changes of schemas with embeddings, to the crumbs indexer',
      eventPattern: indexerPattern(DEFAULT_EMBEDDED_SCHEMAS),
      targets: [
        new SqsQueue(this.indexerQueue.queue, { deadLetterQueue: this.indexerQueue.deadLetterQueue }),
      ],
    });
    this.indexer = this.crumbsFunction(f.indexer);
    this.indexer.function.addEventSource(
      new SqsEventSource(this.indexerQueue.queue, {
        batchSize: indexerTrigger.batchSize,
        maxBatchingWindow: Duration.seconds(indexerTrigger.maxBatchingWindowSeconds),
        maxConcurrency: indexerTrigger.maxConcurrency,
        reportBatchItemFailures: true,
      }),
    );

    // Publisher: the table's stream → change events on the bus.
    this.publisherFailures = new Queue(this, 'PublisherFailures', {
      ...SECURE_QUEUE,
      queueName: stageName(f.publisher.trigger.onFailureQueueName, stage),
      retentionPeriod: DEAD_LETTER_RETENTION,
    });
    alarms.push(
      deadLetterAlarm(
        this,
        'PublisherFailuresAlarm',
        this.publisherFailures,
        'The publisher gave up on stream records after its retries; their change events were not published',
      ),
    );
    NagSuppressions.addResourceSuppressions(this.publisherFailures, [
      {
        id: 'AwsSolutions-SQS3',
        reason:
          "This queue is the publisher's dead-letter destination (the stream event source's on-failure " +
          'destination), so it has no DLQ of its own; it is alarmed and kept for 14 days.',
      },
    ]);
    const stream = streamTrigger(f.publisher);
    this.publisher = this.crumbsFunction(f.publisher);
    const tableStreamArn = table.tableStreamArn;
    if (!tableStreamArn) throw new Error('the breadcrumbs table has no stream; the publisher needs one');
    this.publisher.function.addEventSourceMapping('TableStream', {
      eventSourceArn: tableStreamArn,
      // TRIM_HORIZON: the stateful stack deploys first; breadcrumbs written before the publisher exists
      // (definitions put by hand, for example) are still published rather than silently skipped.
      startingPosition: StartingPosition.TRIM_HORIZON,
      batchSize: stream.batchSize,
      maxBatchingWindow: Duration.seconds(stream.maxBatchingWindowSeconds),
      retryAttempts: stream.retryAttempts,
      bisectBatchOnError: stream.bisectBatchOnError,
      parallelizationFactor: stream.parallelizationFactor,
      reportBatchItemFailures: true,
      onFailure: new SqsDlq(this.publisherFailures),
      ...(stream.filters
        ? { filters: stream.filters.map((pattern) => ({ pattern: JSON.stringify(pattern) })) }
        : {}),
    });

    // HTTP API: JWT on every route but GET /health.
    this.api = this.crumbsFunction(f.api);
    this.api.function.addEnvironment(ENV.workspacesClaim, props.workspacesClaim);
    const integration = new HttpLambdaIntegration('ApiIntegration', this.api.function);
    this.httpApi = new HttpApi(this, 'HttpApi', {
      apiName: `crumbs-${stage}`,
      description: 'crumbs HTTP API (breadcrumbs, definitions)',
      createDefaultStage: false,
      defaultIntegration: integration,
      defaultAuthorizer: new HttpJwtAuthorizer('JwtAuthorizer', props.jwtIssuer, {
        jwtAudience: [...props.jwtAudience],
      }),
    });
    this.httpApi.addRoutes({
      path: '/health',
      methods: [HttpMethod.GET],
      integration,
      authorizer: new HttpNoneAuthorizer(),
    });

    // The dashboard: built from ui/ now (cdk synth), bundled beside a small function of its own so the API function
    // carries none of it, and served on the API's own origin (no CORS, one URL). Public, like any login page: every
    // data call it makes goes to the JWT-protected routes with the user's token.
    this.ui = this.crumbsFunction(f.ui, undefined, {
      from: buildDashboard(join(REPO_ROOT, 'node_modules', '.cache', 'crumbs-ui')),
      name: 'ui',
    });
    this.ui.addEnvironment(ENV.uiDir, '/var/task/ui');
    const uiIntegration = new HttpLambdaIntegration('UiIntegration', this.ui.function);
    for (const route of httpTrigger(f.ui).publicRoutes ?? []) {
      const [method, path] = route.split(' ') as [string, string];
      this.httpApi.addRoutes({
        path,
        methods: [method as HttpMethod],
        integration: uiIntegration,
        authorizer: new HttpNoneAuthorizer(),
      });
    }
    const accessLogs = new LogGroup(this, 'HttpApiAccessLogs', { retention: RetentionDays.ONE_MONTH });
    this.httpStage = new HttpStage(this, 'HttpApiStage', {
      httpApi: this.httpApi,
      autoDeploy: true,
      accessLogSettings: { destination: new LogGroupLogDestination(accessLogs) },
    });
    NagSuppressions.addResourceSuppressions(
      this.httpApi,
      [
        {
          id: 'AwsSolutions-APIG4',
          reason:
            'GET /health is public on purpose (load balancer and uptime checks; it reveals no data), and so are ' +
            "GET /ui and GET /ui/{proxy+}, the dashboard's static files (a login page and its script; they hold " +
            'no data, and every data call the dashboard makes needs the JWT). Every other route, including ' +
            '$default, requires a JWT.',
        },
      ],
      true,
    );

    for (const fn of this.functions()) alarms.push(fn.errorsAlarm, fn.throttlesAlarm);
    this.alarms = alarms;

    new CfnOutput(this, 'ApiUrl', {
      value: this.httpStage.url,
      description: 'Base URL of the crumbs HTTP API',
    });
    new CfnOutput(this, 'DashboardUrl', {
      value: `${this.httpStage.url}ui/`,
      description:
        'The crumbs dashboard (asks for a JWT once; append #token=<jwt>&workspace=<ws> to log in directly)',
    });
  }

  /** The bus pool, the first bus first. */
  buses(): readonly IEventBus[] {
    return this.props.buses ?? [this.props.bus];
  }

  /** Every function of the stack. */
  functions(): CrumbsFunction[] {
    return [
      this.api,
      this.ui,
      this.publisher,
      this.ruleManager,
      this.indexer,
      this.timer,
      ...Object.values(this.executors),
      this.dlqHandler,
    ];
  }

  /** A function with what its declaration `uses` bound: env vars and grants from one place. */
  private crumbsFunction(
    declaration: CrumbsFunctionDeclaration,
    ruleTargets?: { executorQueues: Readonly<Record<ExecutorRunner, Queue>>; ruleTargetsDlq: Queue },
    extraFiles?: ExtraFiles,
  ): CrumbsFunction {
    const { stage, table } = this.props;
    const { uses } = declaration;
    const fn = new CrumbsFunction(this, pascal(declaration.name), {
      declaration,
      stage,
      entry: this.props.entryOverrides?.[declaration.name],
      ...(extraFiles ? { extraFiles } : {}),
    });
    if (uses.table) fn.bindTable(table, uses.table);
    if (uses.stream) fn.bindTableStream(table);
    if (uses.bus === 'put-events') fn.bindBus(this.buses(), 'put-events');
    if (uses.bus === 'manage-rules') {
      if (!ruleTargets) throw new Error(`${declaration.name} manages rules but was given no rule targets`);
      fn.bindRuleManagement(
        this.buses(),
        topology.bus.ruleNamePrefix,
        ruleTargets.executorQueues,
        ruleTargets.ruleTargetsDlq,
      );
    }
    // Functions with LLM provider keys are the ones that call LLMs; Bedrock models need IAM instead of a key.
    if (uses.secrets) fn.bindSecrets(this.props.llmSecretPrefix).bindLlmModels();
    if (uses.llm) fn.addEnvironment(ENV.defaultLlmProvider, this.props.defaultLlmProvider);
    if (this.props.maxResponseBytes !== undefined) {
      fn.addEnvironment(ENV.maxResponseBytes, String(this.props.maxResponseBytes));
    }
    if (uses.agentSecrets) fn.bindAgentSecrets(uses.agentSecrets);
    if (declaration.uses.embeddings) fn.bindEmbeddings(TITAN_V2_MODEL_ID);
    if (uses.timers) fn.bindTimers(this.timers);
    const limits = this.props.tenantLimits;
    const env = (name: string, value: number) => fn.addEnvironment(name, String(value));
    if (uses.limits?.includes('breadth')) {
      env(ENV.threadBudget, limits.threadBudget);
      env(ENV.workspaceEventRate, limits.workspaceEventRate);
      env(ENV.workspaceEventWindowSeconds, limits.workspaceEventWindowSeconds);
    }
    if (uses.limits?.includes('share')) {
      env(ENV.workspaceInFlight, limits.inFlightPerWorkspace);
      env(ENV.workspaceInFlightGraceMs, limits.inFlightGraceMs);
    }
    if (uses.limits?.includes('ceiling')) env(ENV.timeoutCeilingMs, limits.timeoutCeilingMs);
    return fn;
  }
}

/** `executor-context-builder` → `ExecutorContextBuilder` (construct ids). */
function pascal(name: string): string {
  return name
    .split('-')
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join('');
}
