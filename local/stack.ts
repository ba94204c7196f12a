/**
 * The local stack: the real handlers against local AWS endpoints, on one machine, without Docker or an AWS
 * account. DynamoDB Local (streams on), fauxqs for SQS, crumbs' own EventBridge service, local event-source
 * mappings, and the HTTP API — all built from the topology declaration the CDK app uses too.
 *
 * Handlers are the Lambda modules themselves (`functions/<name>/handler.ts`), imported after the standard AWS
 * environment variables point the SDK at the local endpoints (`AWS_ENDPOINT_URL_<SERVICE>`): no handler knows it
 * runs locally.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { SchedulerClient } from '@aws-sdk/client-scheduler';
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { DynamoDBBatchResponse, DynamoDBStreamEvent, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { closeDataChecks } from '#shared/adapters/checks/checks.ts';
import { DynamoBreadcrumbStore } from '#shared/adapters/dynamodb/breadcrumb-store.ts';
import { LocalSecrets } from '#shared/adapters/secrets/secret-source.ts';
import { sharedUsearchEngine } from '#shared/adapters/vectors/usearch-engine.ts';
import { LlmEnvSchema, parseEnv, WorkspaceShareEnvSchema } from '#shared/config.ts';
import { DEFAULT_WORKSPACES_CLAIM } from '#shared/core/api/http.ts';
import type { DailyBudgetSettings } from '#shared/core/model-calls/daily-budget.ts';
import type { ModelAliases } from '#shared/domain/llm-model.ts';
import type { PriceTable } from '#shared/domain/llm-usage.ts';
import { ENV_ATTACHMENTS } from '#shared/rooms/attachments/reference.ts';
import {
  ENV,
  EXECUTOR_RUNNERS,
  type ExecutorRunner,
  type FunctionDeclaration,
  poolBusNames,
  type SqsTrigger,
  topology,
  workspaceQuotaDefaults,
} from '#shared/topology.ts';
import { authorizerOf, startLocalApiServer } from './api-server.ts';
import { LOCAL_ACCOUNT, LOCAL_CREDENTIALS, LOCAL_REGION } from './aws-env.ts';
import { startLocalBlobStore } from './blobs/s3-store.ts';
import { seedDemo } from './demo.ts';
import { startDynamoDbLocal } from './dynamodb-local.ts';
import {
  fileCheckpoints,
  onFailureRecord,
  startStreamPoller,
} from './event-sources/dynamodb-stream-poller.ts';
import type { InvocationObserver, LambdaHandler } from './event-sources/lambda-context.ts';
import { type Poller, startSqsPoller } from './event-sources/sqs-poller.ts';
import { startLocalEventBridge } from './eventbridge/server.ts';
import { DEFAULT_QUOTAS } from './eventbridge/state.ts';
import { startLocalEventsServer } from './events/server.ts';
import { guardrailKeyOf } from './guardrail-key.ts';
import { createJwtAuthorizer } from './jwt-authorizer.ts';
import { installAwsLambdaGlobal } from './lambda-runtime.ts';
import { checkPortFree } from './process.ts';
import {
  ensureBusAndSystemRules,
  ensureDeadLetterQueue,
  ensurePoolBuses,
  ensureQueue,
  ensureScheduleGroup,
  ensureTable,
  ensureWorkspaceIndex,
  type ProvisionedQueue,
} from './provision.ts';
import { startLocalScheduler } from './scheduler/server.ts';
import { startLocalSqs } from './sqs.ts';
import { type LocalToken, localTokens, parseScopedTokens } from './tokens.ts';

type SqsHandler = LambdaHandler<SQSEvent, SQSBatchResponse>;

export interface LocalStackOptions {
  /**
   * The address the HTTP API (and dashboard) listens on; default 127.0.0.1. DynamoDB Local, SQS, EventBridge and the
   * Scheduler always listen on loopback: they check no token, and only this process talks to them.
   */
  host?: string;
  /** 0 picks a free port (tests). */
  apiPort?: number;
  dynamodbPort?: number;
  sqsPort?: number;
  eventbridgePort?: number;
  /** EventBridge Scheduler (timers and schedules); 0 picks a free port. */
  schedulerPort?: number;
  /**
   * The events server (delta channels, AppSync Events' protocol; `CRUMBS_EVENTS_PORT`); 0 picks a free port. It
   * listens where the API does: clients subscribe to it with their API token.
   */
  eventsPort?: number;
  /**
   * The blob store (attachments: S3's requests, presigned POST policies checked; `CRUMBS_BLOBS_PORT`); 0 picks a
   * free port. It listens where the API does: presigned URLs are fetched by clients and browsers. Files are kept
   * under `<dataDir>/blobs`, or in a temporary directory removed on stop.
   */
  blobsPort?: number;
  /**
   * Buses in the pool definitions' rules are spread over (`topology.bus.pool`; `crumbs dev --buses`, env
   * `CRUMBS_BUSES`); default `topology.bus.pool.defaultSize`.
   */
  buses?: number;
  /**
   * The local EventBridge's "Rules per event bus" quota (`crumbs dev --rules-per-bus`, env `CRUMBS_RULES_PER_BUS`);
   * default AWS's 300. Set it to an account's raised quota, or low to try the pool.
   */
  rulesPerBus?: number;
  /**
   * Per-workspace quotas of the rule manager (`crumbs dev --max-definitions-per-workspace`,
   * `--max-rules-per-workspace`; env `CRUMBS_MAX_DEFINITIONS_PER_WORKSPACE`, `CRUMBS_MAX_RULES_PER_WORKSPACE`);
   * default `workspaceQuotaDefaults` of this stack's buses and rules per bus.
   */
  maxDefinitionsPerWorkspace?: number;
  maxRulesPerWorkspace?: number;
  /**
   * Single workspaces' own quotas over the two above, `{ "<workspace>": { definitions?, rules? } }` (env
   * `CRUMBS_WORKSPACE_QUOTAS`, the same JSON).
   */
  workspaceQuotas?: Readonly<
    Record<string, { definitions?: number; rules?: number; requestRate?: number; requestBurst?: number }>
  >;
  /**
   * Each workspace's secrets, `{ "<workspace>": { "<name>": "<value>" } }`: what a definition's `secret_ref`
   * names. Beside them, `CRUMBS_SECRETS` (the same JSON) when this is absent, and the file `secretsFile`.
   */
  secrets?: Readonly<Record<string, Readonly<Record<string, string>>>>;
  /**
   * A file with such a mapping, read again whenever it changes (`crumbs dev --secrets`, env
   * `CRUMBS_SECRETS_FILE`); default `<dataDir>/secrets.json`. It may not exist yet.
   */
  secretsFile?: string;
  /**
   * Model ids without a provider → `<provider>/<model id>` (what an agent's bare `model` runs); env
   * `CRUMBS_MODEL_ALIASES` (the same JSON) when absent.
   */
  modelAliases?: ModelAliases;
  /**
   * Model prices over the defaults (USD per million tokens per `<provider>/<model id>` or `<provider>/*`); env
   * `CRUMBS_LLM_PRICES` (the same JSON) when absent.
   */
  llmPrices?: PriceTable;
  /**
   * Each workspace's daily budget for model calls (`{ default?, workspaces? }`, USD per UTC day); env
   * `CRUMBS_DAILY_BUDGETS` (the same JSON) when absent.
   */
  dailyBudgets?: DailyBudgetSettings;
  /** Persist DynamoDB (and EventBridge rules) here; in memory when absent. */
  dataDir?: string;
  /** The bearer token the API accepts for every workspace; `CRUMBS_TOKEN`, else generated. */
  token?: string;
  /**
   * Scoped tokens (token → workspaces it may use), beside `token`; `CRUMBS_TOKENS` (JSON) when absent. See
   * `tokens.ts`.
   */
  scopedTokens?: readonly LocalToken[];
  /**
   * Sign-in with an OpenID Connect issuer (`crumbs dev --oidc-issuer`, or `CRUMBS_JWT_ISSUER` with
   * `CRUMBS_JWT_AUDIENCE`): the API and the events server also take that issuer's JWTs (signature, `iss`, `exp`, and
   * `aud` — else `client_id` — one of `audiences`), the API through the front door's own authorizer function as on
   * AWS; the local tokens keep working beside them. The dashboard and `crumbs login` sign in with `clientId` (a
   * public client of the issuer with `http://localhost:4790/callback` and `<api>/ui/` as redirect URIs).
   * `workspacesClaim`: the claim listing the workspaces (default `crumbs:workspaces`; `cognito:groups` for a Cognito
   * user pool).
   */
  oidc?: {
    readonly issuer: string;
    readonly audiences: readonly string[];
    readonly clientId?: string;
    readonly workspacesClaim?: string;
  };
  /**
   * Poll the executor queues with the executor handlers (default true). Off, messages stay in the queues: tests
   * and benchmarks of routing read them directly.
   */
  runExecutors?: boolean;
  /** Write the demo definitions (chat agent, its context builder, built-in tools) into workspace `demo` (default true). */
  seedDemo?: boolean;
  /**
   * Let definitions that ask for it (`http` tool `config.allow_private`) reach private and loopback addresses
   * (`crumbs dev --allow-private-network`). Leaves `CRUMBS_ALLOW_PRIVATE_NETWORK` as it is when absent.
   */
  allowPrivateNetwork?: boolean;
  /**
   * Where every function sends its OpenTelemetry spans (an OTLP/HTTP traces URL: `crumbs dev --otlp-endpoint`,
   * `CRUMBS_OTLP_ENDPOINT`). Absent: as the environment says (none unless it names one).
   */
  otlpEndpoint?: string;
  /**
   * The API's public base URL (`CRUMBS_API_URL`: what agent cards and MCP's resource metadata name); default the
   * API's own endpoint (`crumbs dev` takes it from `CRUMBS_API_URL`). Set it when clients reach the stack through
   * another address (a tunnel, a proxy).
   */
  publicUrl?: string;
  log?: (line: string) => void;
  /**
   * Benchmarks only: called once per service with its endpoint; the handlers and pollers then use the endpoint it
   * returns (e.g. a counting proxy in front of the service).
   */
  interpose?: (service: 'dynamodb' | 'sqs' | 'eventbridge', endpoint: string) => Promise<string>;
  /** Benchmarks only: told about every function invocation of the event-source pollers (count, duration). */
  onInvocation?: InvocationObserver;
}

export interface LocalStack {
  readonly endpoints: {
    api: string;
    dynamodb: string;
    sqs: string;
    eventbridge: string;
    scheduler: string;
    /** Delta channels: publish (`POST /event`) and subscribe (`/event/realtime`) endpoints. */
    events: string;
    eventsRealtime: string;
    /** The blob store (attachments, spilled contexts): S3's path-style requests. */
    blobs: string;
  };
  /** The dashboard, logged in on workspace `demo` (the token rides in the fragment, which no server sees). */
  readonly dashboard: string;
  readonly token: string;
  /**
   * What a user must know about the stack's reach, e.g. a service that listens beyond loopback (empty when
   * everything but the API listens on loopback only).
   */
  readonly warnings: readonly string[];
  /** Resolves once the stream has been read up to now (tests and benchmarks use it to wait for routing). */
  settle(): Promise<void>;
  stop(): Promise<void>;
}

const REPO_ROOT = fileURLToPath(new URL('../', import.meta.url));

export const DEFAULT_PORTS = {
  api: 4710,
  dynamodb: 4711,
  sqs: 4712,
  eventbridge: 4713,
  scheduler: 4714,
  events: 4715,
  blobs: 4716,
} as const;

/**
 * A fixed port is checked before anything starts (a clear error naming its flag); port 0 is left to the server to
 * bind, which picks a free one atomically (checking a free port first and binding it seconds later raced with
 * other stacks on the machine: EADDRINUSE in parallel tests).
 */
async function portToBind(port: number, host: string, purpose: string, flag: string): Promise<number> {
  return port === 0 ? 0 : checkPortFree(port, host, purpose, flag);
}

/** Where the services behind the API listen: nothing but this process needs them. */
const LOOPBACK = '127.0.0.1';

export async function startLocalStack(options: LocalStackOptions = {}): Promise<LocalStack> {
  const host = options.host ?? LOOPBACK;
  const log = options.log ?? (() => undefined);
  const busCount = checkedCount(
    options.buses ?? envCount(ENV.localBuses) ?? topology.bus.pool.defaultSize,
    `buses (--buses or ${ENV.localBuses})`,
    topology.bus.pool.maxSize,
  );
  const rulesPerBus = checkedCount(
    options.rulesPerBus ?? envCount(ENV.localRulesPerBus) ?? DEFAULT_QUOTAS.rulesPerBus,
    `rules per bus (--rules-per-bus or ${ENV.localRulesPerBus})`,
    100_000,
  );
  const busPool = poolBusNames(topology.bus.name, busCount);
  const quotaDefaults = workspaceQuotaDefaults(busCount, rulesPerBus);
  const quotas = {
    definitions: checkedCount(
      options.maxDefinitionsPerWorkspace ??
        envCount(ENV.maxDefinitionsPerWorkspace) ??
        quotaDefaults.definitions,
      `definitions per workspace (--max-definitions-per-workspace or ${ENV.maxDefinitionsPerWorkspace})`,
      1_000_000,
    ),
    rules: checkedCount(
      options.maxRulesPerWorkspace ?? envCount(ENV.maxRulesPerWorkspace) ?? quotaDefaults.rules,
      `rules per workspace (--max-rules-per-workspace or ${ENV.maxRulesPerWorkspace})`,
      1_000_000,
    ),
  };
  // Checked before anything starts, as the handlers will read them: a bad mapping is a startup error.
  const secretsInline = options.secrets ? JSON.stringify(options.secrets) : process.env[ENV.localSecrets];
  const secretsFile =
    options.secretsFile ??
    process.env[ENV.localSecretsFile] ??
    (options.dataDir ? join(options.dataDir, 'secrets.json') : undefined);
  await new LocalSecrets({ inline: secretsInline, file: secretsFile }).has('check', 'check');
  const modelAliases = options.modelAliases
    ? JSON.stringify(options.modelAliases)
    : process.env[ENV.modelAliases];
  const llmPrices = options.llmPrices ? JSON.stringify(options.llmPrices) : process.env[ENV.llmPrices];
  const dailyBudgets = options.dailyBudgets
    ? JSON.stringify(options.dailyBudgets)
    : process.env[ENV.dailyBudgets];
  // Checked here so a bad price table stops `crumbs dev` at start; the executors read it from the environment.
  parseEnv(LlmEnvSchema, {
    [ENV.defaultLlmProvider]: 'offline',
    [ENV.modelAliases]: modelAliases,
    [ENV.llmPrices]: llmPrices,
    [ENV.dailyBudgets]: dailyBudgets,
    [ENV.offlineStreamDelayMs]: process.env[ENV.offlineStreamDelayMs],
  });
  const token = options.token ?? process.env[ENV.localToken] ?? randomBytes(24).toString('base64url');
  // Checked before anything starts: a bad CRUMBS_TOKENS is a startup error, not a stack without scoped tokens.
  const tokens = localTokens(
    token,
    options.scopedTokens ?? parseScopedTokens(process.env[ENV.localScopedTokens]),
  );
  // The issuer is read before anything starts: an unreachable one is a startup error naming it.
  const jwt = options.oidc ? await createJwtAuthorizer(options.oidc) : undefined;
  const workspacesClaim = options.oidc?.workspacesClaim ?? DEFAULT_WORKSPACES_CLAIM;

  const apiPort = await portToBind(
    options.apiPort ?? DEFAULT_PORTS.api,
    host,
    'HTTP API',
    `--port or ${ENV.localPort}`,
  );
  // DynamoDB Local picks its own when given 0 (and picks again if another process took it meanwhile).
  const dynamodbPort = await portToBind(
    options.dynamodbPort ?? DEFAULT_PORTS.dynamodb,
    LOOPBACK,
    'DynamoDB Local',
    `--dynamodb-port or ${ENV.localDynamodbPort}`,
  );
  const sqsPort = await portToBind(
    options.sqsPort ?? DEFAULT_PORTS.sqs,
    LOOPBACK,
    'SQS (fauxqs)',
    `--sqs-port or ${ENV.localSqsPort}`,
  );
  const eventbridgePort = await portToBind(
    options.eventbridgePort ?? DEFAULT_PORTS.eventbridge,
    LOOPBACK,
    'EventBridge',
    `--eventbridge-port or ${ENV.localEventbridgePort}`,
  );

  const schedulerPort = await portToBind(
    options.schedulerPort ?? DEFAULT_PORTS.scheduler,
    LOOPBACK,
    'EventBridge Scheduler',
    `--scheduler-port or ${ENV.localSchedulerPort}`,
  );
  const eventsPort = await portToBind(
    // A stack whose API picks a free port (tests, benchmarks) picks one for its events server too.
    options.eventsPort ?? envCount(ENV.localEventsPort) ?? (options.apiPort === 0 ? 0 : DEFAULT_PORTS.events),
    host,
    'events server (delta channels)',
    ENV.localEventsPort,
  );

  const blobsPort = await portToBind(
    options.blobsPort ??
      envCount(ENV_ATTACHMENTS.localBlobsPort) ??
      (options.apiPort === 0 ? 0 : DEFAULT_PORTS.blobs),
    host,
    'blob store (attachments)',
    ENV_ATTACHMENTS.localBlobsPort,
  );

  // The check pool's workers (shared/adapters/checks/) end with the stack, so nothing keeps the process alive.
  const cleanups: (() => Promise<void>)[] = [closeDataChecks];
  const stop = async () => {
    for (const cleanup of cleanups.splice(0).reverse()) {
      try {
        await cleanup();
      } catch (error) {
        log(`stop: ${(error as Error).message}`);
      }
    }
  };

  try {
    const [ddbStart, sqsStart] = await Promise.allSettled([
      startDynamoDbLocal({
        port: dynamodbPort,
        host: LOOPBACK,
        ...(options.dataDir ? { dataDir: options.dataDir } : {}),
        log,
      }),
      startLocalSqs({ port: sqsPort, host: LOOPBACK }),
    ]);
    if (ddbStart.status === 'rejected' || sqsStart.status === 'rejected') {
      // The one that did start is stopped too: a listening SQS emulator left behind kept `crumbs dev` running after
      // it had reported DynamoDB Local's failure.
      if (ddbStart.status === 'fulfilled') await ddbStart.value.stop();
      if (sqsStart.status === 'fulfilled') await sqsStart.value.stop();
      throw ddbStart.status === 'rejected' ? ddbStart.reason : (sqsStart as PromiseRejectedResult).reason;
    }
    const ddb = ddbStart.value;
    const sqs = sqsStart.value;
    // If this process dies without stop(), do not leave java behind.
    const killJava = () => ddb.process.kill('SIGKILL');
    process.once('exit', killJava);
    cleanups.push(async () => {
      process.off('exit', killJava);
      await ddb.stop();
    });
    cleanups.push(() => sqs.stop());
    const sqsEndpoint = sqs.endpoint;
    log(`sqs (fauxqs) ready on ${sqsEndpoint}`);
    const interpose = options.interpose ?? (async (_service: string, endpoint: string) => endpoint);
    // Interposed before the emulators that send to it start, so their deliveries pass the interposer too.
    const usedSqs = await interpose('sqs', sqsEndpoint);
    const eventbridge = await startLocalEventBridge({
      port: eventbridgePort,
      host: LOOPBACK,
      sqsEndpoint: usedSqs,
      ...(options.dataDir ? { stateFile: join(options.dataDir, 'eventbridge.json') } : {}),
      quotas: { rulesPerBus },
      log,
    });
    cleanups.push(() => eventbridge.stop());
    const scheduler = await startLocalScheduler({
      port: schedulerPort,
      host: LOOPBACK,
      sqsEndpoint: usedSqs,
      ...(options.dataDir ? { stateFile: join(options.dataDir, 'scheduler.json') } : {}),
      log,
    });
    cleanups.push(() => scheduler.stop());
    const events = await startLocalEventsServer({
      port: eventsPort,
      host,
      tokens,
      ...(jwt ? { jwt } : {}),
      workspacesClaim,
      credentials: LOCAL_CREDENTIALS,
      log,
    });
    cleanups.push(() => events.stop());
    log(`events (delta channels) ready on ${events.realtimeUrl}`);
    const blobsDir = options.dataDir
      ? join(options.dataDir, 'blobs')
      : await mkdtemp(join(tmpdir(), 'crumbs-blobs-'));
    const blobs = await startLocalBlobStore({
      dir: blobsDir,
      port: blobsPort,
      host,
      region: LOCAL_REGION,
      credentials: LOCAL_CREDENTIALS,
      log,
    });
    cleanups.push(async () => {
      await blobs.stop();
      if (!options.dataDir) await rm(blobsDir, { recursive: true, force: true });
    });

    const endpoints = {
      dynamodb: ddb.endpoint,
      sqs: sqsEndpoint,
      eventbridge: eventbridge.endpoint,
      scheduler: scheduler.endpoint,
      events: events.httpUrl,
      eventsRealtime: events.realtimeUrl,
      blobs: blobs.endpoint,
    };
    const used = {
      dynamodb: await interpose('dynamodb', endpoints.dynamodb),
      sqs: usedSqs,
      eventbridge: await interpose('eventbridge', endpoints.eventbridge),
      scheduler: endpoints.scheduler,
      events: endpoints.events,
      eventsRealtime: endpoints.eventsRealtime,
      blobs: endpoints.blobs,
    };
    configureEnvironment(used, busPool);
    // The API listens first (requests wait for its functions with a 503), so its URL is known before the handlers
    // that publish it load.
    const api = await startLocalApiServer({ port: apiPort, host, tokens, log });
    cleanups.push(() => api.stop());
    process.env[ENV.apiUrl] = (options.publicUrl ?? api.endpoint).replace(/\/+$/, '');
    configureSignIn(options.oidc, workspacesClaim);
    process.env[ENV.maxDefinitionsPerWorkspace] = String(quotas.definitions);
    process.env[ENV.maxRulesPerWorkspace] = String(quotas.rules);
    if (options.workspaceQuotas !== undefined) {
      process.env[ENV.workspaceQuotas] = JSON.stringify(options.workspaceQuotas);
    }
    if (modelAliases === undefined) delete process.env[ENV.modelAliases];
    else process.env[ENV.modelAliases] = modelAliases;
    if (llmPrices === undefined) delete process.env[ENV.llmPrices];
    else process.env[ENV.llmPrices] = llmPrices;
    if (dailyBudgets === undefined) delete process.env[ENV.dailyBudgets];
    else process.env[ENV.dailyBudgets] = dailyBudgets;
    // Locally a secret_ref reads this mapping, never the process environment (secret-source.ts).
    delete process.env[ENV.secretSource];
    if (secretsInline === undefined) delete process.env[ENV.localSecrets];
    else process.env[ENV.localSecrets] = secretsInline;
    if (secretsFile === undefined) delete process.env[ENV.localSecretsFile];
    else process.env[ENV.localSecretsFile] = secretsFile;
    if (options.allowPrivateNetwork !== undefined) {
      process.env[ENV.allowPrivateNetwork] = options.allowPrivateNetwork ? '1' : '0';
    }
    // The key sealing threads' guardrail placeholders: kept in the data directory so they outlive a restart.
    process.env[ENV.guardrailKey] = await guardrailKeyOf(process.env[ENV.guardrailKey], options.dataDir);
    // Read by each function as it loads (below): the same spans a deployment sends, to the operator's endpoint.
    if (options.otlpEndpoint !== undefined) {
      process.env[ENV.otlpEndpoint] = options.otlpEndpoint;
      log(`spans: OTLP/HTTP to ${options.otlpEndpoint}`);
    }
    // Vectors: usearch in this process, kept beside DynamoDB's data under --data-dir (written again at stop).
    process.env[ENV.vectorEngine] = 'local';
    const vectorDir = options.dataDir ? join(options.dataDir, 'vectors') : undefined;
    if (vectorDir === undefined) delete process.env[ENV.vectorDir];
    else process.env[ENV.vectorDir] = vectorDir;
    cleanups.push(async () => sharedUsearchEngine(vectorDir).flush());

    const dynamodb = new DynamoDBClient({});
    const { streamArn, created } = await ensureTable(dynamodb);
    const { backfilled } = await ensureWorkspaceIndex(dynamodb, created);
    if (backfilled > 0) log(`workspace index: ${backfilled} items written by an older crumbs indexed`);
    dynamodb.destroy();

    // Queues (each with its DLQ and redrive policy) for every SQS-triggered function, then the bus and the rule
    // manager's static rule. Executor queue ARNs are what the rule manager targets.
    // fauxqs names queues sqs.<region>.localhost, which Node does not resolve: always talk to its endpoint.
    const sqsClient = new SQSClient({ endpoint: used.sqs, useQueueUrlAsEndpoint: false });
    cleanups.push(async () => sqsClient.destroy());
    const ruleManager = topology.functions.ruleManager;
    const ruleManagerQueue = await ensureQueue(sqsClient, ruleManager.trigger.queue);
    const indexer = topology.functions.indexer;
    const indexerQueue = await ensureQueue(sqsClient, indexer.trigger.queue);
    const executorQueues = Object.fromEntries(
      await Promise.all(
        EXECUTOR_RUNNERS.map(
          async (runner) =>
            [
              runner,
              await ensureQueue(sqsClient, topology.functions.executors[runner].trigger.queue),
            ] as const,
        ),
      ),
    ) as Record<ExecutorRunner, ProvisionedQueue>;
    process.env[ENV.executorQueueArns] = JSON.stringify(
      Object.fromEntries(EXECUTOR_RUNNERS.map((runner) => [runner, executorQueues[runner].arn])),
    );
    // Timers: the Scheduler group, the timers queue every schedule targets, and the (local, unchecked) role.
    const timerFn = topology.functions.timer;
    const timersQueue = await ensureQueue(sqsClient, timerFn.trigger.queue);
    const schedulerClient = new SchedulerClient({});
    await ensureScheduleGroup(schedulerClient);
    schedulerClient.destroy();
    process.env[ENV.scheduleGroup] = topology.timers.scheduleGroup;
    process.env[ENV.timersQueueArn] = timersQueue.arn;
    process.env[ENV.timersDlqArn] = timersQueue.dlqArn;
    process.env[ENV.schedulerRoleArn] =
      `arn:aws:iam::${LOCAL_ACCOUNT}:role/${topology.timers.schedulerRoleName}`;
    const ruleTargetsDlq = await ensureDeadLetterQueue(sqsClient, topology.bus.ruleTargets.dlqName);
    process.env[ENV.ruleTargetsDlqArn] = ruleTargetsDlq.arn;
    const eventBridgeClient = new EventBridgeClient({});
    await ensureBusAndSystemRules(eventBridgeClient, {
      ruleManager: ruleManagerQueue.arn,
      indexer: indexerQueue.arn,
    });
    await ensurePoolBuses(eventBridgeClient, busPool);
    log(`event buses: ${busPool.join(', ')} (${rulesPerBus} rules each)`);
    log(`per workspace: at most ${quotas.definitions} definitions and ${quotas.rules} rules`);
    eventBridgeClient.destroy();

    // The Lambda runtime's `awslambda` global, before any handler loads: the HTTP handlers stream responses.
    installAwsLambdaGlobal();
    const apiHandler = await loadHandler<unknown, unknown>('#functions/api/handler.ts');
    // The dashboard: built from ui/ into a cache folder (again only when its sources changed), served at /ui.
    const { buildDashboard } = await import('../ui/build.ts');
    process.env[ENV.uiDir] = buildDashboard(join(REPO_ROOT, 'node_modules', '.cache', 'crumbs-ui'));
    const uiHandler = await loadHandler<unknown, unknown>('#functions/ui/handler.ts');
    const mcpHandler = await loadHandler<unknown, unknown>('#functions/mcp/handler.ts');
    const a2aHandler = await loadHandler<unknown, unknown>('#functions/a2a/handler.ts');
    const publisherHandler = await loadHandler<DynamoDBStreamEvent, DynamoDBBatchResponse>(
      '#functions/publisher/handler.ts',
    );

    const pollers: Poller[] = [];
    cleanups.push(async () => {
      await Promise.all(pollers.map((p) => p.stop()));
    });
    const streams = new DynamoDBStreamsClient({});
    const publisher = topology.functions.publisher;
    // The event source mapping's on-failure destination, as the CDK app has it: a record of each batch the
    // publisher gave up on (no consumer; alarmed on AWS).
    const publisherFailures = await ensureDeadLetterQueue(sqsClient, publisher.trigger.onFailureQueueName);
    const publisherArn = `arn:aws:lambda:${LOCAL_REGION}:${LOCAL_ACCOUNT}:function:${publisher.name}`;
    const streamPoller = startStreamPoller({
      client: streams,
      endpoint: used.dynamodb,
      streamArn,
      region: LOCAL_REGION,
      trigger: publisher.trigger,
      fn: publisher,
      handler: publisherHandler,
      ...(options.onInvocation ? { onInvocation: options.onInvocation } : {}),
      // As the CDK app's event source mapping: from the oldest record the stream holds, then from the checkpoint
      // kept in the data directory, so a restart after a crash publishes what was committed before it.
      startingPosition: 'TRIM_HORIZON',
      onFailure: async (failure) => {
        await sqsClient.send(
          new SendMessageCommand({
            QueueUrl: publisherFailures.url,
            MessageBody: JSON.stringify(onFailureRecord(failure, publisherArn)),
          }),
        );
      },
      ...(options.dataDir
        ? { checkpoints: fileCheckpoints(join(options.dataDir, 'stream-checkpoints.json')) }
        : {}),
      log,
    });
    pollers.push(streamPoller);

    // The executors' fair share (ENV.workspaceInFlight, ENV.workspaceInFlightGraceMs), applied by the executor
    // pollers where the messages wait, as SQS fair queues and the executors' own cap do on AWS.
    const share = parseEnv(WorkspaceShareEnvSchema);
    const fairShare = {
      inFlightPerGroup: share[ENV.workspaceInFlight],
      graceMs: share[ENV.workspaceInFlightGraceMs],
    };
    const sqsPoller = (
      queue: ProvisionedQueue,
      fn: FunctionDeclaration & { trigger: SqsTrigger },
      handler: SqsHandler,
      fair?: typeof fairShare,
    ) =>
      startSqsPoller({
        client: sqsClient,
        queueUrl: queue.url,
        queueArn: queue.arn,
        region: LOCAL_REGION,
        trigger: fn.trigger,
        fn,
        handler,
        // Executors get a few more invocations than the others, so the one a fair share keeps free for quiet
        // workspaces leaves a busy one more than a single batch.
        concurrency: Math.min(fn.trigger.maxConcurrency, fair ? 4 : 2),
        visibilityTimeoutSeconds: fn.trigger.queue.visibilityTimeoutSeconds,
        fairShare: fair,
        ...(options.onInvocation ? { onInvocation: options.onInvocation } : {}),
        log,
      });
    pollers.push(
      sqsPoller(ruleManagerQueue, ruleManager, await loadHandler('#functions/rule-manager/handler.ts')),
      // Its DLQ has no consumer (as on AWS, where an alarm watches it): embeddings that keep failing wait there.
      sqsPoller(indexerQueue, indexer, await loadHandler('#functions/indexer/handler.ts')),
      // Fired timers and schedules; its DLQ has no consumer either (alarmed on AWS).
      sqsPoller(timersQueue, timerFn, await loadHandler('#functions/timer/handler.ts')),
    );

    if (options.runExecutors ?? true) {
      // One poller per executor queue, and the DLQ handler on every executor DLQ (as the CDK app wires them).
      const dlqHandler = await loadHandler<SQSEvent, SQSBatchResponse>('#functions/dlq-handler/handler.ts');
      const dlqFn = topology.functions.dlqHandler;
      for (const kind of EXECUTOR_RUNNERS) {
        const fn = topology.functions.executors[kind];
        const queue = executorQueues[kind];
        const handler = await loadHandler<SQSEvent, SQSBatchResponse>(
          fn.entry.replace(/^functions\//, '#functions/'),
        );
        pollers.push(sqsPoller(queue, fn, handler, fairShare));
        const dlqAsFunction = {
          ...dlqFn,
          name: `${dlqFn.name}-${kind}`,
          trigger: { ...fn.trigger, batchSize: dlqFn.batchSize, maxConcurrency: 2 },
        };
        pollers.push(
          sqsPoller({ ...queue, url: queue.dlqUrl, arn: queue.dlqArn }, dlqAsFunction, dlqHandler),
        );
      }
      // And on the compiled rule targets' DLQ: events EventBridge could not deliver to an executor queue.
      const agentTrigger = topology.functions.executors.agent.trigger;
      pollers.push(
        sqsPoller(
          { ...ruleTargetsDlq, dlqUrl: ruleTargetsDlq.url, dlqArn: ruleTargetsDlq.arn },
          {
            ...dlqFn,
            name: `${dlqFn.name}-rule-targets`,
            trigger: { ...agentTrigger, batchSize: dlqFn.batchSize, maxConcurrency: 2 },
          },
          dlqHandler,
        ),
      );
    }

    if (options.seedDemo ?? true) {
      const seeded = await seedDemo(new DynamoBreadcrumbStore({ tableName: topology.table.name }));
      log(`demo workspace: ${seeded.map((d) => `${d.id} ${d.outcome}`).join(', ')}`);
    }

    const functions = topology.functions;
    api.attach(
      [
        { declaration: functions.api, handler: apiHandler },
        { declaration: functions.ui, handler: uiHandler },
        { declaration: functions.mcp, handler: mcpHandler },
        { declaration: functions.a2a, handler: a2aHandler },
      ],
      options.oidc === undefined
        ? undefined
        : authorizerOf(
            await loadHandler<unknown, unknown>('#functions/authorizer/handler.ts'),
            functions.authorizer,
          ),
    );
    if (options.oidc !== undefined) {
      log(`api accepts JWTs of ${options.oidc.issuer} (audiences ${options.oidc.audiences.join(', ')})`);
    }
    log(`http api ready on ${api.endpoint}`);
    log(
      `mcp endpoint per workspace: ${api.endpoint}/v1/workspaces/<workspace>/mcp (or \`crumbs mcp serve\` on stdio)`,
    );

    const warnings = ddb.loopbackOnly
      ? []
      : [
          `DynamoDB Local listens on every interface (port ${new URL(ddb.endpoint).port}), with no authentication: ` +
            'any host that can reach this machine can read and write every workspace. This Java runtime cannot ' +
            'run the loopback launcher (no jdk.compiler module); install a full JDK 17+ (e.g. openjdk-17-jdk-headless) ' +
            'or keep this machine behind a firewall.',
        ];
    return {
      endpoints: { api: api.endpoint, ...endpoints },
      dashboard: dashboardUrl(api.endpoint, token, 'demo'),
      token,
      warnings,
      settle: async () => {
        await streamPoller.idle();
        await eventbridge.idle();
      },
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

function envCount(name: string): number | undefined {
  const text = process.env[name];
  if (text === undefined || text.trim() === '') return undefined;
  const n = Number(text);
  if (!Number.isInteger(n)) throw new Error(`${name}: expected a whole number, got ${JSON.stringify(text)}`);
  return n;
}

function checkedCount(n: number, what: string, max: number): number {
  if (!Number.isInteger(n) || n < 1 || n > max) throw new Error(`${what}: expected 1 to ${max}, got ${n}`);
  return n;
}

/** The dashboard URL that opens logged in on `workspace`. */
export function dashboardUrl(endpoint: string, token: string, workspace: string): string {
  return `${endpoint}/ui/#token=${encodeURIComponent(token)}&workspace=${encodeURIComponent(workspace)}`;
}

/** Imports a Lambda module (middy-wrapped handlers take an optional third argument; Lambda passes two). */
async function loadHandler<E, R>(specifier: string): Promise<LambdaHandler<E, R>> {
  const module = (await import(specifier)) as { handler: unknown };
  if (typeof module.handler !== 'function')
    throw new Error(`${specifier} does not export a handler function`);
  return module.handler as LambdaHandler<E, R>;
}

/**
 * What the handlers read about sign-in, as the CDK app sets it on AWS: the workspaces claim (api, protocol servers,
 * the authorizer), the issuer and its audiences (the authorizer; MCP's resource metadata, the dashboard's sign-in
 * settings) and the client people sign in with.
 * Cleared without an issuer, so nothing of an earlier stack in this process lingers.
 */
function configureSignIn(oidc: LocalStackOptions['oidc'], workspacesClaim: string): void {
  const env = process.env;
  env[ENV.workspacesClaim] = workspacesClaim;
  delete env[ENV.signInEndpoints];
  if (oidc === undefined) {
    delete env[ENV.jwtIssuer];
    delete env[ENV.jwtAudience];
    delete env[ENV.signInClientId];
    return;
  }
  env[ENV.jwtIssuer] = oidc.issuer;
  // The front door's authorizer function reads the issuer, its audiences and the claim as on AWS.
  env[ENV.jwtAudience] = oidc.audiences.join(',');
  if (oidc.clientId !== undefined) env[ENV.signInClientId] = oidc.clientId;
  else delete env[ENV.signInClientId];
}

/** Points the AWS SDK (in every handler) at the local endpoints, through the SDK's own environment variables. */
function configureEnvironment(
  endpoints: {
    dynamodb: string;
    sqs: string;
    eventbridge: string;
    scheduler: string;
    events: string;
    eventsRealtime: string;
    blobs: string;
  },
  busPool: readonly string[],
): void {
  const env = process.env;
  env.AWS_REGION = LOCAL_REGION;
  env.AWS_ACCESS_KEY_ID = LOCAL_CREDENTIALS.accessKeyId;
  env.AWS_SECRET_ACCESS_KEY = LOCAL_CREDENTIALS.secretAccessKey;
  delete env.AWS_SESSION_TOKEN;
  delete env.AWS_PROFILE;
  env.AWS_ENDPOINT_URL_DYNAMODB = endpoints.dynamodb;
  env.AWS_ENDPOINT_URL_DYNAMODB_STREAMS = endpoints.dynamodb;
  env.AWS_ENDPOINT_URL_SQS = endpoints.sqs;
  env.AWS_ENDPOINT_URL_EVENTBRIDGE = endpoints.eventbridge;
  env.AWS_ENDPOINT_URL_SCHEDULER = endpoints.scheduler;
  env.AWS_ENDPOINT_URL_S3 = endpoints.blobs;
  env[ENV_ATTACHMENTS.bucket] = topology.blobs.bucketName;
  env[ENV_ATTACHMENTS.pathStyle] = '1';
  env[ENV.tableName] = topology.table.name;
  env[ENV.busName] = topology.bus.name;
  env[ENV.busPool] = JSON.stringify(busPool);
  // One publisher in this process: its placement cache can be short, and so is the rule manager's wait.
  env[ENV.busPlacementCacheMs] ??= '500';
  env[ENV.ruleNamePrefix] = topology.bus.ruleNamePrefix;
  env[ENV.localEndpoints] = JSON.stringify(endpoints);
  // The delta channel: the executors publish to the events server, the API names it to clients.
  env[ENV.eventsHttpUrl] = endpoints.events;
  env[ENV.eventsRealtimeUrl] = endpoints.eventsRealtime;
  // Change summaries: the events server shares this machine with everything else, so a publish may take longer.
  env[ENV.changePublishTimeoutMs] ??= '5000';
  // One process, DynamoDB Local's indexes are synchronous: a short settle delivers a write within a second.
  env[ENV.changesSettleMs] ??= '300';
  env[ENV.changesPollMs] ??= '150';
  // Bare model ids (seed 002's `gpt-4`) run offline unless the developer's environment names a provider.
  env[ENV.defaultLlmProvider] ??= 'offline';
  env.POWERTOOLS_LOG_LEVEL ??= 'WARN';
  env.POWERTOOLS_METRICS_DISABLED ??= 'true';
  env.POWERTOOLS_TRACE_ENABLED ??= 'false';
}
