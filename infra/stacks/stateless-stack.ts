/**
 * Everything that can be destroyed and redeployed without losing data: the functions, their queues and DLQs, the
 * rule manager's and the indexer's static rules, the front door (the REST API and its authorizer) and the alarms. Built from `shared/topology.ts`:
 * which functions exist, their triggers and batch settings, and which resources each one uses (`uses`) all come
 * from there. Composed of one part per concern (`infra/constructs/`), each creating its resources in this stack's
 * scope so their logical IDs are the stack's own (`topology-functions.ts` says why).
 */

import { Stack, type StackProps } from 'aws-cdk-lib';
import type { RestApi } from 'aws-cdk-lib/aws-apigateway';
import type { Alarm } from 'aws-cdk-lib/aws-cloudwatch';
import type { IUserPool } from 'aws-cdk-lib/aws-cognito';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { EventBus, type IEventBus, type Rule } from 'aws-cdk-lib/aws-events';
import type { IBucket } from 'aws-cdk-lib/aws-s3';
import type { Queue } from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import type { WorkspaceQuotaOverrides } from '#shared/config.ts';
import type { EmbeddingsSetting } from '#shared/domain/embeddings-setting.ts';
import type { LlmProvider, ModelAliases } from '#shared/domain/llm-model.ts';
import { ENV, type ExecutorRunner, topology, workspaceQuotaDefaults } from '#shared/topology.ts';
import type { TenantLimits } from '../config.ts';
import { ChangeChannels } from '../constructs/change-channels.ts';
import { type CrumbsFunction, type OtlpSetting, ruleArnPattern } from '../constructs/crumbs-function.ts';
import { DeadLetterHandling, ParkedDeadLetters } from '../constructs/dead-letters.ts';
import { DeltaChannels } from '../constructs/delta-channels.ts';
import { Executors } from '../constructs/executors.ts';
import { FrontDoor } from '../constructs/front-door.ts';
import { Indexing } from '../constructs/indexing.ts';
import { OperationsDashboard } from '../constructs/operations-dashboard.ts';
import { Publishing } from '../constructs/publishing.ts';
import { RuleManagement } from '../constructs/rule-management.ts';
import type { RuleTargetDeadLetters } from '../constructs/rule-target-dead-letters.ts';
import { reserveConcurrency, type StageThrottle, throttleRestStage } from '../constructs/throttling.ts';
import { Timers } from '../constructs/timers.ts';
import { sqsTrigger, TopologyFunctions } from '../constructs/topology-functions.ts';
import { SignIn } from '../constructs/user-pool.ts';
import type { WorkQueue } from '../constructs/work-queue.ts';

export interface StatelessStackProps extends StackProps {
  /** Deployment stage; part of every function, queue and API name. */
  readonly stage: string;
  /** The breadcrumbs table (from the stateful stack); it must have a stream. */
  readonly table: ITable;
  /** The stage's blob bucket (attachments, spilled contexts), bound to functions whose topology `uses.blobs`. */
  readonly blobs: IBucket;
  /**
   * The names of every bus of the pool, the first first (the stateful stack's, by `poolBusNames`): the system rules
   * are on the first; the publisher puts events and the rule manager places rules on all. Referred to by name, not
   * by the stateful stack's exports: an export still imported here would stop the stateful stack from deleting a
   * bus when the pool shrinks (CloudFormation refuses to remove an export in use).
   */
  readonly busNames: readonly string[];
  /**
   * Issuer URL of the JWTs the API accepts (an operator's Cognito user pool or OIDC provider); exactly one of this
   * and `userPool`.
   */
  readonly jwtIssuer?: string;
  /** Accepted `aud` (or `client_id`) values of `jwtIssuer`'s JWTs. */
  readonly jwtAudience?: readonly string[];
  /** A public client of `jwtIssuer` that people sign in with (`crumbs login`, the dashboard). @default none */
  readonly signInClientId?: string;
  /**
   * The stack's own user pool (from the stateful stack), when there is no `jwtIssuer`: the stack creates the app
   * client people sign in with and takes the pool's tokens (`signIn`).
   */
  readonly userPool?: {
    readonly pool: IUserPool;
    /** The managed login domain, `https://<prefix>.auth.<region>.amazoncognito.com`. */
    readonly domainBaseUrl: string;
    readonly tokenValidityMinutes: number;
  };
  /** The JWT claim listing the workspaces a caller may use (`cognito:groups` with `userPool`). */
  readonly workspacesClaim: string;
  /** Name prefix of the Secrets Manager secrets holding LLM provider keys (`<prefix><provider>`). */
  readonly llmSecretPrefix: string;
  /** Where a model id without a provider runs; given to the functions whose topology `uses.llm`. */
  readonly defaultLlmProvider: LlmProvider;
  /** Model ids without a provider → `<provider>/<model id>`; given with the default provider. @default none */
  readonly modelAliases?: ModelAliases;
  /** The operator's model prices (checked JSON text, `CRUMBS_LLM_PRICES`); given with the default provider. */
  readonly llmPrices?: string;
  /** The operator's daily budgets per workspace (checked JSON text, `CRUMBS_DAILY_BUDGETS`). @default none */
  readonly dailyBudgets?: string;
  /** Where every function sends its OpenTelemetry spans (`crumbs:otlpEndpoint`). @default X-Ray's OTLP endpoint */
  readonly otlp?: OtlpSetting;
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
  /** The embedding model (`crumbs:embeddings`): none, a Bedrock model or an OpenAI-compatible endpoint. */
  readonly embeddings: EmbeddingsSetting;
  /** The stage-wide throttle of the front door (`crumbs:apiRateLimit`, `crumbs:apiBurstLimit`). */
  readonly apiThrottle: StageThrottle;
  /** Concurrency reserved for the api function (`crumbs:apiReservedConcurrency`). @default none */
  readonly apiReservedConcurrency?: number;
  /**
   * Handler paths by function name, replacing the topology's entries. Only for local experiments while a
   * handler does not exist yet; the deployed app never sets it.
   * @default - every function's `entry` from the topology
   */
  readonly entryOverrides?: Readonly<Record<string, string>>;
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
  /** The indexer's static rule: changes of embedded schemas → indexer queue (none when embeddings are off). */
  public readonly indexerRule: Rule | undefined;
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
  /** The front door: the REST API every HTTP function is served by, its TOKEN authorizer and their functions. */
  public readonly frontDoor: FrontDoor;
  public readonly restApi: RestApi;
  /**
   * Streamed answers' delta channels (AppSync Events): the agent executor publishes, the API and the A2A server
   * name the endpoints; `deltaChannels.grantPublish(fn)` lets another function publish.
   */
  public readonly deltaChannels: DeltaChannels;
  /** The app client of the stack's own user pool and what tokens are checked against (with `props.userPool`). */
  public readonly signIn?: SignIn;
  /** Live views' change channels (the same Event API's `changes` namespace): the publisher publishes. */
  public readonly changeChannels: ChangeChannels;
  /** Every alarm of the stack: DLQ depth, function errors and throttles. */
  public readonly alarms: readonly Alarm[];
  /** The CloudWatch dashboard `crumbs-<stage>`: queues, dead letters, functions, model usage, loop stops. */
  public readonly operations: OperationsDashboard;

  private readonly pool: readonly IEventBus[];

  constructor(scope: Construct, id: string, props: StatelessStackProps) {
    super(scope, id, props);
    const { stage, table } = props;
    this.pool = props.busNames.map((name, i) =>
      EventBus.fromEventBusName(this, i === 0 ? 'PoolBus' : `PoolBus${i + 1}`, name),
    );
    const bus = this.pool[0];
    if (bus === undefined) throw new Error('the bus pool is empty');

    // Dead letters the DLQ handler fails on are parked, not retried until they expire.
    const parked = new ParkedDeadLetters(this, { stage });
    this.parkedDeadLetters = parked.queue;

    // Timers first: the workflow executor and the rule manager create schedules that target the timers queue.
    this.timers = new Timers(this, 'Timers', {
      stage,
      queue: sqsTrigger(topology.functions.timer).queue,
      scheduleGroup: topology.timers.scheduleGroup,
      schedulerRoleName: topology.timers.schedulerRoleName,
    });
    const functions = new TopologyFunctions(this, {
      stage,
      table,
      blobs: props.blobs,
      buses: this.buses(),
      llmSecretPrefix: props.llmSecretPrefix,
      defaultLlmProvider: props.defaultLlmProvider,
      ...(props.modelAliases !== undefined ? { modelAliases: props.modelAliases } : {}),
      ...(props.llmPrices !== undefined ? { llmPrices: props.llmPrices } : {}),
      ...(props.dailyBudgets !== undefined ? { dailyBudgets: props.dailyBudgets } : {}),
      ...(props.otlp !== undefined ? { otlp: props.otlp } : {}),
      tenantLimits: props.tenantLimits,
      embeddings: props.embeddings,
      ...(props.workspaceQuotas?.workspaces !== undefined
        ? { workspaceQuotas: props.workspaceQuotas.workspaces }
        : {}),
      timers: this.timers,
      ...(props.maxResponseBytes !== undefined ? { maxResponseBytes: props.maxResponseBytes } : {}),
      ...(props.entryOverrides !== undefined ? { entryOverrides: props.entryOverrides } : {}),
    });
    this.timer = functions.consuming(topology.functions.timer, this.timers.queue.queue);

    const compiledRules = this.buses().map((b) => ruleArnPattern(this, b, topology.bus.ruleNamePrefix));
    const executors = new Executors(this, {
      stage,
      functions,
      ruleArnPatterns: compiledRules,
      parkingQueue: parked.queue,
    });
    this.executorQueues = executors.queues;
    this.executors = executors.functions;

    const deadLetters = new DeadLetterHandling(this, {
      stage,
      functions,
      ruleArnPatterns: compiledRules,
      executorDeadLetterQueues: executors.deadLetterQueues(),
      parkingQueue: parked.queue,
    });
    this.ruleTargetDeadLetters = deadLetters.ruleTargetDeadLetters;
    this.dlqHandler = deadLetters.handler;

    const rules = new RuleManagement(this, {
      stage,
      functions,
      bus,
      executorQueues: executors.queueMap(),
      ruleTargetsDlq: deadLetters.ruleTargetDeadLetters.queue,
      quotas: props.workspaceQuotas ?? workspaceQuotaDefaults(this.buses().length),
      ...(props.workspaceQuotas?.workspaces !== undefined
        ? { workspaceQuotas: props.workspaceQuotas.workspaces }
        : {}),
    });
    this.ruleManagerQueue = rules.queue;
    this.ruleManagerRule = rules.rule;
    this.ruleManager = rules.function;

    const indexing = new Indexing(this, { stage, functions, bus, embeds: props.embeddings.kind !== 'none' });
    this.indexerQueue = indexing.queue;
    this.indexerRule = indexing.rule;
    this.indexer = indexing.function;

    const publishing = new Publishing(this, { stage, functions, table });
    this.publisherFailures = publishing.failures;
    this.publisher = publishing.function;

    // Who may call: the stack's own user pool (its app client), or the operator's issuer and audiences.
    if (props.userPool !== undefined) {
      this.signIn = new SignIn(this, {
        stage,
        userPool: props.userPool.pool,
        domainBaseUrl: props.userPool.domainBaseUrl,
        tokenValidityMinutes: props.userPool.tokenValidityMinutes,
      });
    }
    const auth = tokenIssuer(props, this.signIn);
    const http = new FrontDoor(this, {
      stage,
      functions,
      jwtIssuer: auth.issuer,
      jwtAudience: auth.audiences,
      workspacesClaim: props.workspacesClaim,
    });
    this.frontDoor = http;
    this.api = http.api;
    this.ui = http.ui;
    this.restApi = http.restApi;
    if (this.signIn) {
      // Sign-in returns to the dashboard; the ui function and the front door's authorizer learn the pool's client.
      this.signIn.allowRedirect(http.dashboardUrl);
      this.signIn.bindSignIn(this.ui);
    } else {
      this.ui.function.addEnvironment(ENV.jwtIssuer, auth.issuer);
      if (props.signInClientId !== undefined)
        this.ui.function.addEnvironment(ENV.signInClientId, props.signInClientId);
    }
    throttleRestStage(this.restApi, props.apiThrottle);
    reserveConcurrency(this.api, props.apiReservedConcurrency);

    this.deltaChannels = new DeltaChannels(this, {
      stage,
      jwtIssuer: auth.issuer,
      jwtAudience: auth.audiences,
      ...(props.userPool ? { userPool: props.userPool.pool } : {}),
      workspacesClaim: props.workspacesClaim,
    });
    // Context agents make the model calls whose answers stream; the API and the A2A server tell clients where.
    this.deltaChannels.grantPublish(this.executors.agent);
    this.deltaChannels.bindEndpoints(this.api);
    this.deltaChannels.bindEndpoints(http.a2a);
    this.deltaChannels.bindEndpoints(http.mcp);
    this.deltaChannels.bindEndpoints(this.ui);
    this.changeChannels = new ChangeChannels(this, { deltaChannels: this.deltaChannels });
    this.changeChannels.grantPublish(this.publisher);

    this.alarms = [
      parked.alarm,
      this.timers.deadLetterAlarm,
      ...executors.alarms,
      ...deadLetters.alarms,
      ...rules.alarms,
      ...indexing.alarms,
      ...publishing.alarms,
      ...this.functions().flatMap((fn) => [fn.errorsAlarm, fn.throttlesAlarm]),
    ];

    const workQueues = [
      ...Object.values(this.executorQueues),
      this.ruleManagerQueue,
      this.indexerQueue,
      this.timers.queue,
    ];
    this.operations = new OperationsDashboard(this, 'Operations', {
      stage,
      workQueues: workQueues.map((q) => q.queue),
      deadLetterQueues: [
        ...workQueues.map((q) => q.deadLetterQueue),
        this.ruleTargetDeadLetters.queue,
        this.parkedDeadLetters,
        this.publisherFailures,
      ],
      functions: [...this.functions(), http.mcp, http.a2a, http.authorizerFunction],
      executorServices: Object.values(topology.functions.executors).map((fn) => `crumbs-${fn.name}`),
      publisherService: `crumbs-${topology.functions.publisher.name}`,
    });
  }

  /** The bus pool, the first bus first. */
  buses(): readonly IEventBus[] {
    return this.pool;
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
}

/** The issuer and audiences every front door checks tokens against: the stack's own pool's, or the operator's. */
function tokenIssuer(
  props: StatelessStackProps,
  signIn: SignIn | undefined,
): { issuer: string; audiences: readonly string[] } {
  if (signIn !== undefined) {
    if (props.jwtIssuer !== undefined)
      throw new Error('StatelessStack: give jwtIssuer or userPool, not both');
    if (props.workspacesClaim !== signIn.workspacesClaim) {
      throw new Error(`StatelessStack: the user pool's workspaces claim is ${signIn.workspacesClaim}`);
    }
    return { issuer: signIn.issuer, audiences: signIn.clientIds };
  }
  if (props.jwtIssuer === undefined || (props.jwtAudience ?? []).length === 0) {
    throw new Error('StatelessStack: give jwtIssuer with its jwtAudience, or userPool');
  }
  return { issuer: props.jwtIssuer, audiences: props.jwtAudience ?? [] };
}
