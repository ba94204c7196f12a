/**
 * The topology of crumbs, declared once. The CDK app (`infra/`) builds AWS resources from it and the local stack
 * (`local/`) builds emulated ones from it, so names, keys, queues, batch sizes and timeouts cannot drift
 * between the two. Every environment variable crumbs reads or sets is named here too (`ENV`), and nowhere else.
 */

export const EXECUTOR_KINDS = ['agent', 'tool', 'workflow', 'context-builder', 'memory'] as const;
export type ExecutorKind = (typeof EXECUTOR_KINDS)[number];

/**
 * Executor functions, each with its own queue. Every kind has its runner of the same name; two more carry what
 * the others should not load (DESIGN.md, "Budgets"): `agent-mcp` runs agents of type tool and tools with
 * `implementation: "mcp"` (the MCP SDK), `agent-remote` agents of type api and external (the A2A SDK, JSONata),
 * `agent-sandbox` function agents (the QuickJS sandbox). The MCP SDK has a runner of its own because building its
 * zod schemas at load cost agent-remote more than the load budget allows (`npm run bench:bundles`), and esbuild
 * cannot defer it inside one bundle (a lazily imported SDK breaks zod's module init order). Which runner a definition goes to: `executorRunnerOf` in `#shared/domain/runners.ts`.
 * The `memory` kind (the memory room's extraction, `shared/rooms/memory/`) has no runner of its own: it calls a
 * model like a context agent, so the agent runner serves it.
 */
export const EXECUTOR_RUNNERS = [
  'agent',
  'tool',
  'workflow',
  'context-builder',
  'agent-mcp',
  'agent-remote',
  'agent-sandbox',
] as const;
export type ExecutorRunner = (typeof EXECUTOR_RUNNERS)[number];

/** Which executor kind runs each definition schema. */
export const DEFINITION_SCHEMAS = {
  'agent.def.v1': 'agent',
  'tool.def.v1': 'tool',
  'workflow.def.v1': 'workflow',
  'context.config.v1': 'context-builder',
  /** The older RCRT agent shape (seed 002: `triggers`, `llm_config`); loads unchanged, runs as an agent. */
  'agent.definition.v1': 'agent',
  /** The memory room's strategies (`shared/rooms/memory/protocol.ts`). */
  'memory.def.v1': 'memory',
} as const satisfies Record<string, ExecutorKind>;
export type DefinitionSchema = keyof typeof DEFINITION_SCHEMAS;

/** Asks the rule manager to reconcile a workspace's rules (`crumbs rules sync`); answered with a result breadcrumb. */
export const RULES_SYNC_SCHEMA = 'system.rules_sync.v1';

/**
 * Definitions the rule manager keeps something other than a rule for: a `schedule.def.v1` becomes a recurring
 * EventBridge Scheduler schedule (`shared/core/rules/schedule-manager.ts`).
 */
export const SCHEDULE_DEFINITION_SCHEMA = 'schedule.def.v1';

/** The rule manager's own static rule: every change of a definition, and sync requests. */
export function ruleManagerPattern(): { source: string[]; detail: { schema_name: string[] } } {
  return {
    source: ['crumbs'],
    detail: {
      schema_name: [...Object.keys(DEFINITION_SCHEMAS), SCHEDULE_DEFINITION_SCHEMA, RULES_SYNC_SCHEMA],
    },
  };
}

/**
 * The indexer's own static rule: every change (created, updated, deleted) of a schema that has embeddings, so
 * embeddings follow breadcrumbs without the publisher waiting on an embedding model. `embedded` is the
 * embedding policy's list (`embeddedSchemas` in shared/core/stream/vector-search.ts), or `'*'` for every schema (the
 * indexer then skips the ones the policy never embeds).
 */
export function indexerPattern(embedded: readonly string[] | '*'): {
  source: string[];
  'detail-type': string[];
  detail?: { schema_name: string[] };
} {
  return {
    source: ['crumbs'],
    'detail-type': ['Breadcrumb Created', 'Breadcrumb Updated', 'Breadcrumb Deleted'],
    ...(embedded === '*' ? {} : { detail: { schema_name: [...embedded] } }),
  };
}

export interface GsiDeclaration {
  readonly name: string;
  readonly partitionKey: string;
  readonly sortKey: string;
  /** Non-key attributes projected (INCLUDE); absent = ALL. */
  readonly include?: readonly string[];
}

export interface TableDeclaration {
  readonly name: string;
  readonly partitionKey: string;
  readonly sortKey: string;
  readonly ttlAttribute: string;
  readonly gsis: readonly GsiDeclaration[];
}

export interface QueueDeclaration {
  readonly name: string;
  /** Seconds; at least 6 × the consuming function's timeout (AWS guidance for SQS event sources). */
  readonly visibilityTimeoutSeconds: number;
  /** Receives before a message moves to the DLQ. */
  readonly maxReceiveCount: number;
  readonly dlqName: string;
}

export interface SqsTrigger {
  readonly kind: 'sqs';
  readonly queue: QueueDeclaration;
  readonly batchSize: number;
  readonly maxBatchingWindowSeconds: number;
  /** Lambda's SQS `ScalingConfig.MaximumConcurrency` (2..1000). */
  readonly maxConcurrency: number;
}

export interface StreamTrigger {
  readonly kind: 'dynamodb-stream';
  readonly batchSize: number;
  readonly maxBatchingWindowSeconds: number;
  readonly retryAttempts: number;
  readonly bisectBatchOnError: boolean;
  readonly parallelizationFactor: number;
  /**
   * Lambda event filtering: only records matching one of these patterns (EventBridge pattern syntax over the
   * stream record, images in DynamoDB JSON) invoke the function; the rest are passed over, not retried. The CDK
   * app sets them as the event source mapping's FilterCriteria and the local stream poller applies them itself.
   */
  readonly filters?: readonly Record<string, unknown>[];
  /**
   * The SQS queue the event source mapping's on-failure destination sends a record of each batch it gave up on
   * (Lambda's invocation record: shard, first and last sequence numbers, batch size; not the records themselves).
   * Alarmed on AWS; the local stream poller sends the same record to the same queue.
   */
  readonly onFailureQueueName: string;
}

export interface HttpTrigger {
  readonly kind: 'http';
  /** Routes served without the authorizer (`GET /ui/{proxy+}`), in API Gateway's route syntax. */
  readonly publicRoutes?: readonly string[];
  /** Routes served behind the authorizer by this function. */
  readonly routes?: readonly string[];
  /** Every path no function's routes name goes to this function, behind the authorizer (one function has it). */
  readonly defaultRoute?: true;
  /**
   * How its responses travel (`FRONT_DOOR`): `stream` — the handler is a response-streaming Lambda handler and every
   * one of its routes a STREAM integration, so a body reaches the client as it is written; `buffered` — a plain
   * handler returning a whole response.
   */
  readonly response: 'stream' | 'buffered';
}

/** Called by API Gateway before the routes it guards (a TOKEN authorizer, `shared/core/front-door/authorizer.ts`). */
export interface AuthorizerTrigger {
  readonly kind: 'authorizer';
}

/**
 * How a function's bundle differs from the others: packages left out of the bundle and installed beside it
 * (WebAssembly and big data tables that esbuild cannot or should not inline), and files copied next to it.
 */
export interface BundlingDeclaration {
  /** Import specifiers (esbuild patterns, e.g. `js-tiktoken/ranks/*`) not bundled. */
  readonly externalModules?: readonly string[];
  /**
   * Installed packages copied into the asset's node_modules with their dependencies, at the lock file's versions
   * (`infra/installed-packages.ts`): what the external modules above import.
   */
  readonly nodeModules?: readonly string[];
  /** Repository files copied next to the bundle (e.g. a worker thread script). */
  readonly copyFiles?: readonly string[];
  /**
   * Packages replaced in the bundle by a repository module (esbuild `alias`): for a dependency a library imports
   * statically that this function never runs (say why in the replacement's header).
   */
  readonly alias?: Readonly<Record<string, string>>;
  /**
   * Worker thread scripts bundled beside the function's bundle, each as `<its name>.mjs` with the same options
   * (the check pool's `shared/adapters/checks/check-worker.ts` → `check-worker.mjs`).
   */
  readonly workers?: readonly string[];
}

export interface FunctionDeclaration {
  /** Stable logical name: used for CDK ids, local logs and bundle names. */
  readonly name: string;
  readonly bundling?: BundlingDeclaration;
  /** Handler module, relative to the repository root; it exports `handler`. */
  readonly entry: string;
  readonly timeoutSeconds: number;
  readonly memoryMb: number;
  readonly trigger: SqsTrigger | StreamTrigger | HttpTrigger | AuthorizerTrigger;
  /** Which resources the handler uses; drives env vars and least-privilege grants. */
  readonly uses: {
    readonly table?: 'read' | 'read-write';
    readonly stream?: boolean;
    readonly bus?: 'put-events' | 'manage-rules';
    readonly executorQueues?: 'target';
    readonly secrets?: boolean;
    /** Computes embeddings (indexing or vector search): Titan on AWS, the local embedder offline. */
    readonly embeddings?: boolean;
    /**
     * The vector engine (S3 Vectors on AWS): `query` searches it (QueryVectors, GetVectors); `forget` also deletes
     * (DeleteVectors: the API, for a person's "forget"); `write` also keeps it in step with breadcrumbs (PutVectors,
     * DeleteVectors) — the indexer alone.
     */
    readonly vectors?: 'query' | 'forget' | 'write';
    /**
     * Resolves model strings (calls models, or reports which model will run): gets the stack's default LLM
     * provider (`ENV.defaultLlmProvider`).
     */
    readonly llm?: boolean;
    /**
     * Creates and deletes EventBridge Scheduler schedules in `topology.timers.scheduleGroup` (one-time timers,
     * recurring schedules) that target the timers queue: gets the group, queue, DLQ and scheduler role env vars,
     * scheduler permissions on that group and `iam:PassRole` on that role only. `cancel`: only lists and deletes
     * schedules of that group (a workspace's deletion cancels its timers): gets the group's name, no role to pass.
     */
    readonly timers?: boolean | 'cancel';
    /**
     * Credentials that definitions reference (`secret_ref`): Secrets Manager secrets under
     * `crumbs/agents/<workspace>/` on AWS (`CRUMBS_SECRET_SOURCE`), the local per-workspace mapping locally.
     * `read`: their values (executors that call out); `describe`: only whether they exist (the rule manager);
     * `erase`: list and delete them, never read them (the API, when it deletes a workspace).
     */
    readonly agentSecrets?: 'read' | 'describe' | 'erase';
    /**
     * Where the checks of definitions' data (JSON Schema, JSONata, templates) run past a slice of a few
     * milliseconds (`shared/adapters/checks/`): `pool`, in worker threads beside the event loop (the executors,
     * whose batch of messages from several workspaces shares one event loop); absent, on the caller's thread (a
     * function serving one request per instance, where a long check holds only its own caller). CDK sets
     * `ENV.checkWorkers` from it; a `pool` function bundles `CHECK_WORKER` beside it.
     */
    readonly checks?: 'pool';
    /**
     * The stage's blob bucket (the attachments room, `shared/rooms/attachments/`): `read` gets objects (model
     * calls that hand attachments to a model, context reads of spilled contexts), `read-write` also puts, deletes
     * and lists them under `ws/*`. CDK sets `CRUMBS_BLOB_BUCKET` and grants exactly that.
     */
    readonly blobs?: 'read' | 'read-write';
    /**
     * Operator limits it applies (`TENANT_LIMITS`): `breadth` (thread budget, workspace event rate), `share` (a
     * workspace's in-flight cap), `ceiling` (the timeout ceiling), `requests` (the per-workspace request rate, and
     * single workspaces' own rates from `crumbs:workspaceQuotas`). CDK sets their env vars from `crumbs:tenantLimits`.
     */
    readonly limits?: readonly ('breadth' | 'share' | 'ceiling' | 'requests')[];
  };
}

export type SqsFunctionDeclaration = FunctionDeclaration & { readonly trigger: SqsTrigger };

function queue(name: string, functionTimeoutSeconds: number, maxReceiveCount = 5): QueueDeclaration {
  return {
    name: `crumbs-${name}`,
    visibilityTimeoutSeconds: functionTimeoutSeconds * 6,
    maxReceiveCount,
    dlqName: `crumbs-${name}-dlq`,
  };
}

const EXECUTOR_TIMEOUT_SECONDS: Record<ExecutorRunner, number> = {
  agent: 120,
  tool: 60,
  workflow: 60,
  'context-builder': 30,
  // An MCP call times out after transport.mcp.timeout_ms (30 s by default); a tool agent may extract arguments first.
  'agent-mcp': 120,
  // An A2A partner may block up to transport.external.timeout_ms (at most 90 s).
  'agent-remote': 120,
  'agent-sandbox': 90,
};

const QUICKJS_PACKAGES = ['quickjs-emscripten-core', '@jitl/quickjs-wasmfile-release-sync'] as const;

/** The check pool's worker script (`uses.checks: 'pool'`), bundled beside the functions that run one. */
export const CHECK_WORKER = 'shared/adapters/checks/check-worker.ts';

const AJV_UNUSED = 'shared/adapters/mcp/ajv-unused.ts';

/** What each runner's bundle leaves out (see BundlingDeclaration). */
const EXECUTOR_BUNDLING: Partial<Record<ExecutorRunner, BundlingDeclaration>> = {
  // The tokenizer's rank tables (1-2 MB each) load on first need, from the installed package.
  agent: { externalModules: ['js-tiktoken/ranks/*'], nodeModules: ['js-tiktoken'] },
  // The MCP SDK's client imports Ajv for a validator it is never asked to use (see ajv-unused.ts).
  'agent-mcp': {
    alias: { ajv: AJV_UNUSED, 'ajv-formats': AJV_UNUSED },
  },
  // The sandbox's worker script and the QuickJS WebAssembly module it loads live beside the bundle.
  'agent-sandbox': {
    externalModules: [...QUICKJS_PACKAGES],
    nodeModules: [...QUICKJS_PACKAGES],
    copyFiles: ['shared/adapters/sandbox/quickjs-worker.mjs'],
  },
};

/** The runners of seed 004's agent types other than `context`: they read agents' credentials (`agentSecrets`). */
const AGENT_TYPE_RUNNERS: ReadonlySet<ExecutorRunner> = new Set([
  'agent-mcp',
  'agent-remote',
  'agent-sandbox',
]);

export function executorFunction(runner: ExecutorRunner): SqsFunctionDeclaration {
  const timeoutSeconds = EXECUTOR_TIMEOUT_SECONDS[runner];
  const agent = runner === 'agent' || AGENT_TYPE_RUNNERS.has(runner);
  // Every executor runs checks in a pool (`uses.checks`), so its worker ships beside every executor bundle.
  const bundling: BundlingDeclaration = { ...EXECUTOR_BUNDLING[runner], workers: [CHECK_WORKER] };
  return {
    name: `executor-${runner}`,
    entry: `functions/executor-${runner}/handler.ts`,
    bundling,
    timeoutSeconds,
    memoryMb: agent ? 1024 : 512,
    trigger: {
      kind: 'sqs',
      queue: queue(runner, timeoutSeconds),
      batchSize: agent ? 5 : 10,
      maxBatchingWindowSeconds: 0,
      maxConcurrency: agent ? 20 : 50,
    },
    // Every executor can fetch `vector` context (shared/core/executor/context-assembly.ts).
    uses: {
      table: 'read-write',
      // Runs set timers (waits, step timeouts, retry back-off); context agents the expiry of tool-call approvals.
      timers: runner === 'workflow' || runner === 'agent',
      secrets: agent || runner === 'tool',
      llm: agent || runner === 'tool',
      embeddings: true,
      vectors: 'query',
      // Outputs past the inline threshold spill to the blob store; agents hand attachments to their models.
      blobs: 'read-write',
      // The tool runner reads them for the `http` tool's `secret_ref` headers.
      ...(AGENT_TYPE_RUNNERS.has(runner) || runner === 'tool' ? { agentSecrets: 'read' as const } : {}),
      checks: 'pool',
      // `breadth`: the thread budget, whose counter each executor reads to drop a stopped thread's backlog.
      limits: ['share', 'ceiling', 'breadth'],
    },
  };
}

/** What the thread index and the change log keep of a write: what a trace line or a change notice shows. */
const ACTIVITY_PROJECTION = [
  'kind',
  'ref',
  'schema_name',
  'title',
  'tags',
  'version',
  'created_at',
  'created_by',
  'updated_at',
  'updated_by',
  'causation',
  'ctx_status',
];

/**
 * The front door: one REGIONAL API Gateway REST API (`infra/constructs/front-door.ts`, `docs/deploy.md` says why).
 * A streamed response (server-sent events of the SSE route, MCP progress, A2A streams) holds a Lambda for as long as
 * it lasts, so it is capped below API Gateway's 15-minute stream limit; a client that still wants more subscribes
 * again. A response that sends nothing until its answer (JSON) ends before API Gateway's 5-minute idle timeout.
 */
export const FRONT_DOOR = {
  /** The longest a streamed response lasts (API Gateway allows 15 minutes on REGIONAL endpoints). */
  streamCapSeconds: 600,
  /** The longest a JSON response waits for an answer before answering without it (idle timeout: 5 minutes). */
  jsonWaitSeconds: 240,
  /** A streamed response with nothing to say for this long sends an SSE comment (idle timeout: 5 minutes). */
  keepAliveSeconds: 15,
  /** The streaming functions' timeout: the cap and a minute to end cleanly (Lambda's timeout bounds a stream). */
  streamFunctionTimeoutSeconds: 660,
  /** API Gateway's own limits the values above respect (checked in `test/unit/front-door.test.ts`). */
  limits: { streamSeconds: 900, idleSeconds: 300, lambdaTimeoutSeconds: 900 },
} as const;

export const topology = {
  /** Attachments and spilled contexts (`shared/rooms/attachments/`): one bucket per stage, keys under `ws/<ws>/`. */
  blobs: {
    bucketName: 'crumbs-blobs',
    /** Staged uploads (`ws/<ws>/staging/`) a client never finalized: a lifecycle rule removes them after a day. */
    stagingExpiryDays: 1,
  },
  table: {
    name: 'crumbs-breadcrumbs',
    partitionKey: 'id',
    sortKey: 'workspace',
    ttlAttribute: 'expires_at',
    gsis: [
      { name: 'gsi1', partitionKey: 'gsi1pk', sortKey: 'gsi1sk' },
      // Embeddings by workspace, and each head under its first listable tag (table-design.md "Tags").
      { name: 'gsi2', partitionKey: 'gsi2pk', sortKey: 'gsi2sk' },
      // Threads (heads with causation) and the change log (versions, deletions): only what a trace or a change
      // notice shows, so each index write stays one write unit (shared/adapters/dynamodb/table-design.md).
      { name: 'gsi3', partitionKey: 'gsi3pk', sortKey: 'gsi3sk', include: ACTIVITY_PROJECTION },
      // The change log's entry of each head's current version (superseded versions are version items in gsi3).
      { name: 'gsi4', partitionKey: 'gsi4pk', sortKey: 'gsi4sk', include: ACTIVITY_PROJECTION },
      // The workspace index: every item of every kind under `<ws>#w#<shard>` (the item layer's rule), so deleting a
      // workspace reads what it holds, not the table (shared/adapters/dynamodb/workspace-index.ts).
      { name: 'gsi5', partitionKey: 'gsi5pk', sortKey: 'id', include: ['kind'] },
    ],
  } satisfies TableDeclaration,

  bus: {
    name: 'crumbs',
    /** Rules the rule manager creates all start with this, so IAM can scope it to `rule/crumbs/crumbs-def-*`. */
    ruleNamePrefix: 'crumbs-def-',
    /** The rule manager's own static rule (definition schemas → rule-manager queue). */
    ruleManagerRuleName: 'crumbs-system-rule-manager',
    /** The indexer's own static rule (changes of embedded schemas → indexer queue). */
    indexerRuleName: 'crumbs-system-indexer',
    archiveRetentionDays: 14,
    source: 'crumbs',
    /**
     * The pool of buses that definitions' rules are spread over, so the number of definitions is bounded by the
     * account's quotas (rules per bus × buses), not by one bus's 300 rules. Buses are provisioned, never created at
     * run time: by the CDK app from the context value `crumbs:buses` (each with its archive, and the rule-target
     * permissions of the first), locally by `crumbs dev --buses N`; the rule manager only places rules in the pool
     * and needs no events:CreateEventBus. The first bus is `name` and holds the system rules (rule manager,
     * indexer); the others are named by `poolBusNames`. Placement and routing: `shared/routing/bus-placement.ts`.
     */
    pool: {
      /** Buses when `crumbs:buses` / `--buses` is not given. */
      defaultSize: 1,
      /**
       * At most this many: every bus is one more ARN in the rule manager's policy and in the executor queues' and
       * rule-targets DLQ's resource policies (SQS policies are capped at 8 KB), and accounts start with 100 buses.
       */
      maxSize: 20,
      /**
       * How long the publisher may route by a workspace's placement it has read. The rule manager waits this long
       * (and a second more) after adding a bus to a workspace's placement before it calls a definition on that bus
       * `active`, so an event written after `active` is always sent to the bus that holds its rule.
       */
      placementCacheSeconds: 5,
      /** EventBridge's default "Rules per event bus" quota (an account may have it raised). */
      rulesPerBus: 300,
      /**
       * Per-workspace quotas on this shared capacity (`workspaceQuotaDefaults`, `shared/core/workspace-quotas.ts`):
       * by default one workspace may hold a quarter of the pool's rules, so no one workspace fills the pool and
       * makes every other workspace's new definitions `invalid`; the operator sets both (CDK context
       * `crumbs:maxRulesPerWorkspace` / `crumbs:maxDefinitionsPerWorkspace`, `crumbs dev` flags).
       */
      workspaceShareOfRules: 0.25,
      /** Definitions (with or without a rule: schedules, invalid ones) per rule of the default rule quota. */
      definitionsPerRule: 2,
    },
    /**
     * Delivery from compiled rules to the executor queues. EventBridge retries a failed delivery with exponential
     * back-off and jitter until either limit below is reached (its defaults are 185 attempts over 24 hours: a
     * chat message would wait a day for its error answer), then puts the event in this DLQ; errors that retrying
     * cannot fix (the queue is gone, no permission) go to the DLQ at once. The DLQ is alarmed, and the DLQ handler
     * answers what it holds with error breadcrumbs (`shared/core/rules/rule-target-dead-letters.ts`).
     */
    ruleTargets: {
      dlqName: 'crumbs-rule-targets-dlq',
      /** RetryPolicy.MaximumRetryAttempts (0..185). */
      maximumRetryAttempts: 24,
      /** RetryPolicy.MaximumEventAgeInSeconds (60..86400): an hour of retries. */
      maximumEventAgeSeconds: 3600,
    },
  },

  /** Timers and schedules: EventBridge Scheduler schedules in one group, all targeting the timers queue. */
  timers: {
    scheduleGroup: 'crumbs',
    /** The role Scheduler assumes to deliver to the timers queue (it may send to that queue only). */
    schedulerRoleName: 'crumbs-scheduler',
  },

  /**
   * Sign-in when the stack has no `crumbs:jwtIssuer`: a Cognito user pool whose groups are workspaces, and one public
   * app client (authorization code + PKCE, no secret) for the CLI and the dashboard (`infra/constructs/user-pool.ts`,
   * `docs/deploy.md`). The CLI's callback is fixed, because Cognito matches a callback URL exactly, port included.
   */
  signIn: {
    /** `crumbs login` listens here for the authorization code (loopback only; RFC 8252 §7.3). */
    cliCallbackUrl: 'http://localhost:4790/callback',
    scopes: ['openid', 'email', 'profile'],
    /** How long an access or ID token is good for unless `crumbs:tokenValidityMinutes` says otherwise. */
    defaultTokenValidityMinutes: 15,
    /** How long a refresh token keeps a person signed in without signing in again. */
    refreshTokenValidityDays: 30,
  },

  functions: {
    api: {
      name: 'api',
      entry: 'functions/api/handler.ts',
      // A stream (the SSE route) lasts at most FRONT_DOOR.streamCapSeconds; the margin lets it end cleanly.
      timeoutSeconds: FRONT_DOOR.streamFunctionTimeoutSeconds,
      memoryMb: 512,
      trigger: {
        kind: 'http',
        defaultRoute: true,
        routes: ['GET /v1/workspaces/{ws}/streams/{stream_id}/events'],
        publicRoutes: ['GET /health', 'GET /v1/openapi.json'],
        response: 'stream',
      },
      // timers: 'cancel': a workspace's deletion cancels the workspace's timers and schedules.
      uses: {
        table: 'read-write',
        embeddings: true,
        vectors: 'forget',
        blobs: 'read-write',
        agentSecrets: 'erase',
        limits: ['requests'],
        timers: 'cancel',
      },
    },
    /** The dashboard's files (ui/, built at `cdk synth` and by `crumbs dev`). Public: its data calls need the JWT. */
    ui: {
      name: 'ui',
      entry: 'functions/ui/handler.ts',
      timeoutSeconds: 5,
      memoryMb: 256,
      trigger: { kind: 'http', publicRoutes: ['GET /ui', 'GET /ui/{proxy+}'], response: 'buffered' },
      uses: {},
    },
    /**
     * The MCP server (`shared/core/mcp/`): its own function so the MCP SDK loads nowhere else. Calls the API's
     * handler code in process as the caller; an agent's answer streams as progress until it is answered or
     * FRONT_DOOR.streamCapSeconds have passed.
     */
    mcp: {
      name: 'mcp',
      entry: 'functions/mcp/handler.ts',
      // The MCP SDK's server imports Ajv for a validator it is never asked to use (see ajv-unused.ts).
      bundling: { alias: { ajv: AJV_UNUSED, 'ajv-formats': AJV_UNUSED } },
      timeoutSeconds: FRONT_DOOR.streamFunctionTimeoutSeconds,
      memoryMb: 512,
      trigger: {
        kind: 'http',
        routes: [
          'POST /v1/workspaces/{ws}/mcp',
          'GET /v1/workspaces/{ws}/mcp',
          'DELETE /v1/workspaces/{ws}/mcp',
        ],
        publicRoutes: ['GET /.well-known/oauth-protected-resource/v1/workspaces/{ws}/mcp'],
        response: 'stream',
      },
      uses: { table: 'read-write', blobs: 'read-write', limits: ['requests'] },
    },
    /**
     * The A2A server (`shared/core/a2a/`): its own function so the A2A SDK's server loads nowhere else. Calls the
     * API's handler code in process as the caller; a stream lasts until the task's final state or
     * FRONT_DOOR.streamCapSeconds.
     */
    a2a: {
      name: 'a2a',
      entry: 'functions/a2a/handler.ts',
      timeoutSeconds: FRONT_DOOR.streamFunctionTimeoutSeconds,
      memoryMb: 512,
      trigger: {
        kind: 'http',
        routes: [
          'POST /a2a/workspaces/{ws}/agents/{agent}',
          'GET /a2a/workspaces/{ws}/agents/{agent}/.well-known/agent-card.json',
        ],
        publicRoutes: ['GET /a2a/public/workspaces/{ws}/agents/{agent}/.well-known/agent-card.json'],
        response: 'stream',
      },
      uses: { table: 'read-write', blobs: 'read-write', limits: ['requests'] },
    },
    /**
     * The front door's TOKEN authorizer (`shared/core/front-door/authorizer.ts`): checks a JWT as the HTTP API's
     * JWT authorizer did. Small on purpose: its cold start is in front of a token's first request.
     */
    authorizer: {
      name: 'authorizer',
      entry: 'functions/authorizer/handler.ts',
      timeoutSeconds: 10,
      memoryMb: 256,
      trigger: { kind: 'authorizer' },
      uses: {},
    },
    publisher: {
      name: 'publisher',
      entry: 'functions/publisher/handler.ts',
      timeoutSeconds: 60,
      memoryMb: 512,
      trigger: {
        kind: 'dynamodb-stream',
        batchSize: 100,
        maxBatchingWindowSeconds: 0,
        retryAttempts: 10,
        bisectBatchOnError: true,
        parallelizationFactor: 1,
        onFailureQueueName: 'crumbs-publisher-failures',
        // What the publisher acts on: a head written (API, executor, adoption, a console edit), an item written
        // without `kind` (a plain put) and a head removed (delete, TTL). Versions, tags, claims, idempotency keys,
        // schema settings and deletion entries ride the same stream and do not invoke it (a claim written on its own
        // would be a publisher invocation that does nothing).
        // Lambda filters DynamoDB records on the `dynamodb` key only (not `eventName`), hence images, not names.
        filters: [
          { dynamodb: { NewImage: { kind: { S: ['breadcrumb'] } } } },
          { dynamodb: { NewImage: { id: { S: [{ exists: true }] }, kind: { S: [{ exists: false }] } } } },
          { dynamodb: { OldImage: { kind: { S: ['breadcrumb'] } } } },
        ],
      },
      // No embeddings: the indexer computes them from the events, so a failing model never blocks publishing.
      uses: { table: 'read-write', stream: true, bus: 'put-events', limits: ['breadth'] },
    },
    ruleManager: {
      name: 'rule-manager',
      entry: 'functions/rule-manager/handler.ts',
      timeoutSeconds: 30,
      memoryMb: 512,
      trigger: {
        kind: 'sqs',
        queue: queue('rule-manager', 30),
        batchSize: 10,
        maxBatchingWindowSeconds: 0,
        maxConcurrency: 5,
      },
      // `llm`: the status of an agent definition says which provider and model will run.
      // `timers`: a `schedule.def.v1` becomes a recurring Scheduler schedule.
      // `agentSecrets`: a definition whose secret_ref names no secret of its workspace is `invalid`.
      uses: {
        table: 'read-write',
        blobs: 'read',
        bus: 'manage-rules',
        executorQueues: 'target',
        llm: true,
        timers: true,
        agentSecrets: 'describe',
        limits: ['ceiling'],
      },
    },
    indexer: {
      name: 'indexer',
      entry: 'functions/indexer/handler.ts',
      timeoutSeconds: 60,
      memoryMb: 512,
      trigger: {
        kind: 'sqs',
        queue: queue('indexer', 60),
        batchSize: 10,
        maxBatchingWindowSeconds: 0,
        maxConcurrency: 5,
      },
      uses: { table: 'read-write', embeddings: true, vectors: 'write', blobs: 'read' },
    },
    executors: {
      agent: executorFunction('agent'),
      tool: executorFunction('tool'),
      workflow: executorFunction('workflow'),
      'context-builder': executorFunction('context-builder'),
      'agent-mcp': executorFunction('agent-mcp'),
      'agent-remote': executorFunction('agent-remote'),
      'agent-sandbox': executorFunction('agent-sandbox'),
    } satisfies Record<ExecutorRunner, SqsFunctionDeclaration>,
    /**
     * Fired timers and schedules (EventBridge Scheduler → the timers queue) become breadcrumbs
     * (`shared/core/orchestration/timers.ts`). Its DLQ is alarmed; a dead-lettered firing is a timer nobody heard.
     */
    timer: {
      name: 'timer',
      entry: 'functions/timer/handler.ts',
      timeoutSeconds: 30,
      memoryMb: 256,
      trigger: {
        kind: 'sqs',
        queue: queue('timers', 30),
        batchSize: 10,
        maxBatchingWindowSeconds: 0,
        maxConcurrency: 5,
      },
      uses: { table: 'read-write', blobs: 'read' },
    },
    /**
     * Removes the rule manager's rules from a bus before CloudFormation deletes it (a custom resource of the stateful
     * stack per bus: `shared/core/rules/bus-sweeper.ts`), so `cdk destroy` and a shrinking pool can delete buses.
     */
    busSweeper: {
      name: 'bus-sweeper',
      entry: 'functions/bus-sweeper/handler.ts',
      timeoutSeconds: 300,
      memoryMb: 256,
      uses: {},
    },
    dlqHandler: {
      name: 'dlq-handler',
      entry: 'functions/dlq-handler/handler.ts',
      timeoutSeconds: 30,
      memoryMb: 256,
      /** One event source per executor DLQ; the queue is given at wiring time. */
      batchSize: 10,
      uses: { table: 'read-write', blobs: 'read' },
    },
  },
} as const;

/**
 * What one workspace may take of what all share (DESIGN.md "Tenants"), each an operator setting (`ENV` below) with
 * this default. `inFlightPerWorkspace`: executions of one workspace that one executor function runs past
 * `inFlightGraceMs` at once (work still running then takes a slot or is stopped and retried later,
 * `shared/core/executor/workspace-slots.ts`; the local pollers also hold the workspace's further messages back;
 * the grace is long enough that ordinary work on a busy machine, or a quick model call, never needs a slot). `timeoutCeilingMs`: the longest `timeout_ms`
 * a tool or a function agent may ask for. `threadBudget`: breadcrumbs executors may write in one thread;
 * `workspaceEventRate` per `workspaceEventWindowSeconds`: events the publisher routes for one workspace
 * (`shared/core/stream/breadth-budget.ts`). `workspaceRequestRate` (per second, 0 = off) with bursts of
 * `workspaceRequestBurst`: requests one workspace may make of the API, MCP and A2A servers, across every instance
 * (`shared/core/api/request-rate.ts`).
 */
export const TENANT_LIMITS = {
  inFlightPerWorkspace: 4,
  inFlightGraceMs: 10_000,
  timeoutCeilingMs: 60_000,
  threadBudget: 1_000,
  workspaceEventRate: 10_000,
  workspaceEventWindowSeconds: 60,
  workspaceRequestRate: 50,
  workspaceRequestBurst: 100,
} as const;

export type Topology = typeof topology;

/**
 * The buses of a pool of `size` whose first bus is `primary`: `primary`, `primary.2`, `primary.3`, … (a dot, which
 * stage names cannot hold, so no bus of one stage's pool can be named like another stage's first bus).
 */
export function poolBusNames(primary: string, size: number): string[] {
  return Array.from({ length: size }, (_, i) => (i === 0 ? primary : `${primary}.${i + 1}`));
}

/** The default per-workspace quotas of a pool of `buses` buses of `rulesPerBus` rules each. */
export function workspaceQuotaDefaults(
  buses: number,
  rulesPerBus: number = topology.bus.pool.rulesPerBus,
): { definitions: number; rules: number } {
  const rules = Math.max(1, Math.floor(buses * rulesPerBus * topology.bus.pool.workspaceShareOfRules));
  return { rules, definitions: rules * topology.bus.pool.definitionsPerRule };
}

/** Powertools Metrics namespace of every function: the CDK app sets it, the handlers' wiring uses it. */
export const METRICS_NAMESPACE = 'crumbs';

/**
 * Names of every environment variable crumbs reads or sets: what handlers read (set by CDK on AWS and by the local
 * stack locally), what the CLI and `crumbs dev` read. Code elsewhere names them as `ENV.<key>`
 * (`test/unit/env-names.test.ts`). Left out: names owned by AWS, Powertools and CDK (`AWS_*`, `POWERTOOLS_*`,
 * `CDK_DEFAULT_*`) and the `NO_COLOR` convention, which crumbs sets or reads as those tools define them.
 */
export const ENV = {
  tableName: 'CRUMBS_TABLE_NAME',
  /**
   * The key (32 bytes, base64) that seals each thread's guardrail placeholders (`shared/rooms/guardrails/vault.ts`):
   * `crumbs dev` makes one (kept in its data directory); on AWS the stack's generated secret holds it (read through
   * `CRUMBS_GUARDRAIL_KEY_SECRET`). Absent both, masked values do not survive the invocation that masked them.
   */
  guardrailKey: 'CRUMBS_GUARDRAIL_KEY',
  /** On AWS: the Secrets Manager secret (KMS-encrypted) holding the guardrail vault key. */
  guardrailKeySecret: 'CRUMBS_GUARDRAIL_KEY_SECRET',
  /** The stage's blob bucket (the attachments room, `shared/rooms/attachments/`). */
  blobBucket: 'CRUMBS_BLOB_BUCKET',
  /** `1` under `crumbs dev`: the local blob store answers path-style requests (`<endpoint>/<bucket>/<key>`). */
  blobPathStyle: 'CRUMBS_BLOB_PATH_STYLE',
  /** `crumbs dev`: the local blob store's port. */
  localBlobsPort: 'CRUMBS_BLOBS_PORT',
  /** The largest attachment upload, bytes. */
  attachmentMaxUploadBytes: 'CRUMBS_ATTACHMENT_MAX_UPLOAD_BYTES',
  /** The largest context (spilled to the blob store past the inline threshold), bytes. */
  attachmentMaxContextBytes: 'CRUMBS_ATTACHMENT_MAX_CONTEXT_BYTES',
  busName: 'CRUMBS_EVENT_BUS_NAME',
  /**
   * Publisher and rule manager: JSON array of the pool's bus names, `CRUMBS_EVENT_BUS_NAME` first
   * (`topology.bus.pool`). Absent: a pool of that one bus.
   */
  busPool: 'CRUMBS_EVENT_BUS_POOL',
  /** Publisher and rule manager: `topology.bus.pool.placementCacheSeconds` in ms (the local stack sets less). */
  busPlacementCacheMs: 'CRUMBS_BUS_PLACEMENT_CACHE_MS',
  ruleNamePrefix: 'CRUMBS_RULE_NAME_PREFIX',
  /** JSON object: executor runner (`EXECUTOR_RUNNERS`) → SQS queue ARN (rule manager targets). */
  executorQueueArns: 'CRUMBS_EXECUTOR_QUEUE_ARNS',
  /** ARN of the SQS queue every compiled rule target dead-letters to (`topology.bus.ruleTargets.dlqName`). */
  ruleTargetsDlqArn: 'CRUMBS_RULE_TARGETS_DLQ_ARN',
  /** Local mode only: JSON of local endpoints for `/health`. Absent on AWS. */
  localEndpoints: 'CRUMBS_LOCAL_ENDPOINTS',
  /**
   * Local mode: the bearer token the local API accepts (every workspace). The CLI sends it to any endpoint
   * (`--token`), local or not.
   */
  localToken: 'CRUMBS_TOKEN',
  /** Local mode only: JSON object of scoped tokens, token → list of workspaces or "*" (`local/tokens.ts`). */
  localScopedTokens: 'CRUMBS_TOKENS',
  /**
   * `1` lets definitions reach private and loopback addresses (the http tool; MCP servers, APIs and A2A partners of
   * agents) (`crumbs dev --allow-private-network`); never set on AWS, where loopback is the Lambda Runtime API.
   * Read by the network guard (`shared/adapters/network/`).
   */
  allowPrivateNetwork: 'CRUMBS_ALLOW_PRIVATE_NETWORK',
  /**
   * The most bytes any response body a definition's request reads may have (http tool, api, MCP and A2A agents),
   * default 5 MiB; a definition may ask for less, never more. Read by the network guard and the rule manager.
   */
  maxResponseBytes: 'CRUMBS_MAX_RESPONSE_BYTES',
  /** On AWS: the JWT claim that lists the workspaces a caller may use. */
  workspacesClaim: 'CRUMBS_WORKSPACES_CLAIM',
  /**
   * The issuer of the tokens the API accepts: the authorizer checks tokens against it, the MCP endpoint's protected
   * resource metadata names it, and so do the sign-in settings the dashboard and `crumbs login` read
   * (`shared/core/api/sign-in.ts`).
   */
  jwtIssuer: 'CRUMBS_JWT_ISSUER',
  /** The authorizer: the accepted audiences (`aud`, or `client_id` without `aud`), comma-separated. */
  jwtAudience: 'CRUMBS_JWT_AUDIENCE',
  /**
   * The API's public base URL (`https://<api id>.execute-api.<region>.amazonaws.com/<stage>`; `http://127.0.0.1:<port>`
   * under `crumbs dev`), set by the CDK app and by the local stack: the MCP and A2A servers build the URLs they
   * publish (agent cards, protected resource metadata) and the origin they accept from it, never from a request's
   * `Host` or `X-Forwarded-Proto`.
   */
  apiUrl: 'CRUMBS_API_URL',
  /**
   * The public OAuth client people sign in with (authorization code + PKCE): the app client of the stack's user pool,
   * or `crumbs:signInClientId` of an external issuer. Absent: no sign-in, tokens are pasted (`crumbs dev`'s).
   */
  signInClientId: 'CRUMBS_SIGN_IN_CLIENT_ID',
  /**
   * JSON `{ authorization_endpoint, token_endpoint, revocation_endpoint?, logout_endpoint? }` where they are known
   * before the first request (the stack's own user pool domain, `crumbs dev --oidc-issuer`); absent, they are read
   * from the issuer's discovery document.
   */
  signInEndpoints: 'CRUMBS_SIGN_IN_ENDPOINTS',
  /**
   * The delta channel's publish endpoint, `https://<http domain>` of the AppSync Events API (the local events server
   * in `crumbs dev`): set by the CDK app on the functions that publish deltas and on the api function
   * (`shared/core/streaming/`). Absent: nothing streams.
   */
  eventsHttpUrl: 'CRUMBS_EVENTS_HTTP_URL',
  /** The delta channel's subscribe endpoint, `wss://<realtime domain>/event/realtime`; set beside the above. */
  eventsRealtimeUrl: 'CRUMBS_EVENTS_REALTIME_URL',
  /**
   * How long the stream publisher waits for one publish of change summaries (default 1000 ms): past it the
   * changes reach live views on their next catch-up. `crumbs dev` waits longer (its events server shares a laptop).
   */
  changePublishTimeoutMs: 'CRUMBS_CHANGE_PUBLISH_TIMEOUT_MS',
  /** Change stream (shared/core/stream/changes.ts): how old a change must be before it is handed out, in ms. */
  changesSettleMs: 'CRUMBS_CHANGES_SETTLE_MS',
  /** Change stream: how often a waiting request reads the change log, in ms. */
  changesPollMs: 'CRUMBS_CHANGES_POLL_MS',
  /** Where the dashboard's built files are (the ui function serves them). */
  uiDir: 'CRUMBS_UI_DIR',
  /**
   * Where a model id without a provider runs (`bedrock`, `openrouter`, …, `offline`): `offline` in the local stack,
   * the CDK context value `crumbs:defaultLlmProvider` on AWS. Set on functions with `uses.llm`.
   */
  defaultLlmProvider: 'CRUMBS_DEFAULT_LLM_PROVIDER',
  /**
   * JSON object of model ids without a provider → `<provider>/<model id>` (`ModelAliasesSchema`), read where model
   * strings are resolved (the rule manager's status, the LLM calls): the CDK context value `crumbs:modelAliases` on
   * AWS, the environment `crumbs dev` starts in locally. Set on functions with `uses.llm`.
   */
  modelAliases: 'CRUMBS_MODEL_ALIASES',
  /**
   * JSON object of `<provider>/<model id>` (or `<provider>/*`) → `{ input, output, cached_input?, source? }` in USD per
   * million tokens (`PriceTableSchema`), over the defaults of `shared/domain/llm-usage.ts`: what each model call is
   * recorded as costing. The CDK context value `crumbs:llmPrices` on AWS, the environment `crumbs dev` starts in
   * locally. Set on functions with `uses.llm`.
   */
  llmPrices: 'CRUMBS_LLM_PRICES',
  /**
   * JSON `{ "default"?: usd, "workspaces"?: { "<workspace>": usd } }`: each workspace's daily budget for model calls
   * in USD per UTC day (`DailyBudgetsSchema`); every model call reserves its worst case from the day's counter
   * before it is made and is refused once the day is spent (`shared/core/model-calls/daily-budget.ts`). Absent: no
   * daily budget, nothing read or written. The CDK
   * context value `crumbs:dailyBudgets` on AWS, the environment `crumbs dev` starts in locally. Set on functions
   * with `uses.llm`.
   */
  dailyBudgets: 'CRUMBS_DAILY_BUDGETS',
  /**
   * The offline model's pause between the words of a streamed answer, in ms (0 to 1000, default 25: the demo visibly
   * streams). Read by functions with `uses.llm`; `crumbs dev` takes it from the environment it starts in.
   */
  offlineStreamDelayMs: 'CRUMBS_OFFLINE_STREAM_DELAY_MS',
  /**
   * Rule manager: how many definitions (every definition schema, schedules too) one workspace may have compiled;
   * past it a new definition is `invalid`, naming this setting. Default `workspaceQuotaDefaults`.
   */
  maxDefinitionsPerWorkspace: 'CRUMBS_MAX_DEFINITIONS_PER_WORKSPACE',
  /** Rule manager: how many rules of the bus pool one workspace's definitions may hold (as above). */
  maxRulesPerWorkspace: 'CRUMBS_MAX_RULES_PER_WORKSPACE',
  /** JSON `{ "<workspace>": { "definitions"?: n, "rules"?: n } }`: quotas of single workspaces, over the two above. */
  workspaceQuotas: 'CRUMBS_WORKSPACE_QUOTAS',
  /**
   * `secretsmanager` on AWS: a `secret_ref` names the Secrets Manager secret `<agentSecretPrefix><workspace>/<name>`;
   * absent locally (the local mapping below). `shared/adapters/secrets/secret-source.ts`.
   */
  /**
   * Where every function sends its OpenTelemetry spans (OTLP/HTTP JSON, `shared/adapters/tracing/otel.ts`): a URL
   * (`.../v1/traces`), `xray` for X-Ray's OTLP endpoint in the function's region (SigV4-signed, needs CloudWatch
   * Transaction Search), or absent/`none`: no spans. The CDK context value `crumbs:otlpEndpoint` on AWS (default
   * `xray`), `crumbs dev --otlp-endpoint` locally.
   */
  otlpEndpoint: 'CRUMBS_OTLP_ENDPOINT',
  /** Local only: the OTLP endpoint's headers, `name=value` pairs separated by commas (OTEL_EXPORTER_OTLP_HEADERS). */
  otlpHeaders: 'CRUMBS_OTLP_HEADERS',
  /**
   * On AWS: the Secrets Manager secret (ARN) whose value is a JSON object of the OTLP endpoint's headers (an API
   * key), read once per cold start at the first export. The CDK context value `crumbs:otlpHeadersSecret`.
   */
  otlpHeadersSecret: 'CRUMBS_OTLP_HEADERS_SECRET',
  /**
   * `true`: model calls' spans carry their prompt and completion (`gen_ai.input.messages`, ...) after the masking
   * hook (`shared/core/model-calls/genai-spans.ts`). Off by default. CDK context `crumbs:otelCaptureContent`.
   */
  otelCaptureContent: 'CRUMBS_OTEL_CAPTURE_CONTENT',
  secretSource: 'CRUMBS_SECRET_SOURCE',
  /**
   * On AWS: the name prefix of every workspace's secrets (`crumbs/agents/`, IAM-granted by `agentCredentials` in
   * `infra/constructs/crumbs-function.ts`).
   */
  agentSecretPrefix: 'CRUMBS_AGENT_SECRET_PREFIX',
  /** Local mode only: JSON `{ "<workspace>": { "<secret name>": "<value>" } }`, the secrets of each workspace. */
  localSecrets: 'CRUMBS_SECRETS',
  /** Local mode only: a file holding such a mapping (`crumbs dev --secrets`), read again whenever it changes. */
  localSecretsFile: 'CRUMBS_SECRETS_FILE',
  /** Functions with `uses.timers`: the Scheduler schedule group (`topology.timers.scheduleGroup`). */
  scheduleGroup: 'CRUMBS_SCHEDULE_GROUP',
  /** Functions with `uses.timers`: the timers queue's ARN, every schedule's target. */
  timersQueueArn: 'CRUMBS_TIMERS_QUEUE_ARN',
  /** Functions with `uses.timers`: where Scheduler dead-letters a firing it could not deliver. */
  timersDlqArn: 'CRUMBS_TIMERS_DLQ_ARN',
  /** Functions with `uses.timers`: the role Scheduler assumes to send to the timers queue. */
  schedulerRoleArn: 'CRUMBS_SCHEDULER_ROLE_ARN',
  /** Executors and the local SQS pollers: `TENANT_LIMITS.inFlightPerWorkspace`. */
  workspaceInFlight: 'CRUMBS_WORKSPACE_IN_FLIGHT',
  /** Executors: `TENANT_LIMITS.inFlightGraceMs` (how long work runs before it needs one of its workspace's slots). */
  workspaceInFlightGraceMs: 'CRUMBS_WORKSPACE_IN_FLIGHT_GRACE_MS',
  /** Rule manager and executors: `TENANT_LIMITS.timeoutCeilingMs`. */
  timeoutCeilingMs: 'CRUMBS_TIMEOUT_CEILING_MS',
  /**
   * Worker threads that run the checks of definitions' data (JSON Schema, JSONata, templates) past a few
   * milliseconds (`shared/adapters/checks/`): `0` runs every check on the caller's thread (a function serving one
   * request per instance); absent, every core but one (at least 1, at most 4). Set by the CDK app per function
   * (`uses.checks`) and by the local stack.
   */
  checkWorkers: 'CRUMBS_CHECK_WORKERS',
  /** Publisher: `TENANT_LIMITS.threadBudget`. */
  threadBudget: 'CRUMBS_THREAD_BUDGET',
  /** Publisher: `TENANT_LIMITS.workspaceEventRate`. */
  workspaceEventRate: 'CRUMBS_WORKSPACE_EVENT_RATE',
  /** Publisher: `TENANT_LIMITS.workspaceEventWindowSeconds`. */
  workspaceEventWindowSeconds: 'CRUMBS_WORKSPACE_EVENT_WINDOW_SECONDS',
  /** API, MCP and A2A servers: `TENANT_LIMITS.workspaceRequestRate` (requests per second per workspace; 0 = off). */
  workspaceRequestRate: 'CRUMBS_WORKSPACE_REQUEST_RATE',
  /** API, MCP and A2A servers: `TENANT_LIMITS.workspaceRequestBurst`. */
  workspaceRequestBurst: 'CRUMBS_WORKSPACE_REQUEST_BURST',
  /**
   * Functions with `uses.secrets`: Secrets Manager name prefix of the LLM provider keys (`<prefix><provider>`), set
   * by the CDK app; absent locally, where the keys come from the `*ApiKey` variables below.
   */
  secretPrefix: 'CRUMBS_SECRET_PREFIX',
  /**
   * Which model computes embeddings (`shared/domain/embeddings-setting.ts`): `none`, `local` (the hashed embedder,
   * the default off AWS), `bedrock[/<model id>]` (set by the CDK app from `crumbs:embeddings`), or
   * `openai-compatible/<model>` with the two below.
   */
  embeddings: 'CRUMBS_EMBEDDINGS',
  /** The base URL of an OpenAI-compatible embeddings endpoint (`…/v1`; `POST <base>/embeddings`). */
  embeddingsBaseUrl: 'CRUMBS_EMBEDDINGS_BASE_URL',
  /** The bearer key of that endpoint, if it needs one. */
  embeddingsApiKey: 'CRUMBS_EMBEDDINGS_API_KEY',
  /** Which schemas get embeddings: comma-separated names, `*` for all; absent: `DEFAULT_EMBEDDED_SCHEMAS`. */
  embedSchemas: 'CRUMBS_EMBED_SCHEMAS',
  /**
   * Where vectors are searched: `s3vectors` (the CDK app sets it, with the bucket and index prefix below) or `local`
   * (usearch in the process, what `crumbs dev` uses; the default).
   */
  vectorEngine: 'CRUMBS_VECTOR_ENGINE',
  /** The local engine's directory (`<data-dir>/vectors` under `crumbs dev --data-dir`); in memory when absent. */
  vectorDir: 'CRUMBS_VECTOR_DIR',
  /** The S3 Vectors bucket of the stage. */
  vectorBucket: 'CRUMBS_VECTOR_BUCKET',
  /** The prefix of the stage's S3 Vectors index names; the index of a model is `vectorIndexName(prefix, model)`. */
  vectorIndexPrefix: 'CRUMBS_VECTOR_INDEX_PREFIX',
  /** Local LLM provider keys (on AWS: Secrets Manager, `secretPrefix`), by provider. */
  openrouterApiKey: 'OPENROUTER_API_KEY',
  openaiApiKey: 'OPENAI_API_KEY',
  ollamaApiKey: 'OLLAMA_API_KEY',
  openaiCompatibleApiKey: 'OPENAI_COMPATIBLE_API_KEY',
  /** Base URLs of the OpenAI-style providers (`shared/adapters/llm/llm-router.ts` has the defaults). */
  openrouterBaseUrl: 'OPENROUTER_BASE_URL',
  openaiBaseUrl: 'OPENAI_BASE_URL',
  ollamaBaseUrl: 'OLLAMA_BASE_URL',
  openaiCompatibleBaseUrl: 'OPENAI_COMPATIBLE_BASE_URL',
  /** CLI: the API endpoint (`--endpoint`). */
  endpoint: 'CRUMBS_ENDPOINT',
  /** CLI: the workspace (`--workspace`). */
  workspace: 'CRUMBS_WORKSPACE',
  /**
   * CLI: where `crumbs login` keeps its sessions (`credentials.json`, mode 0600); default the user's config
   * directory (`$XDG_CONFIG_HOME/crumbs`, `~/.config/crumbs`, macOS `~/Library/Application Support/crumbs`, Windows
   * `%APPDATA%\crumbs`).
   */
  configDir: 'CRUMBS_CONFIG_DIR',
  /** CLI: the Cognito user pool `crumbs users` manages (`--user-pool-id`); default the endpoint's own pool. */
  userPoolId: 'CRUMBS_USER_POOL_ID',
  /** `crumbs dev`: the ports of the HTTP API and the emulated services (`--port`, `--dynamodb-port`, …). */
  localPort: 'CRUMBS_PORT',
  localDynamodbPort: 'CRUMBS_DYNAMODB_PORT',
  localSqsPort: 'CRUMBS_SQS_PORT',
  localEventbridgePort: 'CRUMBS_EVENTBRIDGE_PORT',
  localSchedulerPort: 'CRUMBS_SCHEDULER_PORT',
  /** `crumbs dev`: the port of the local events server (delta channels, AppSync Events' protocol). */
  localEventsPort: 'CRUMBS_EVENTS_PORT',
  /** `crumbs dev`: buses of the pool (`--buses`, at most `topology.bus.pool.maxSize`). */
  localBuses: 'CRUMBS_BUSES',
  /** `crumbs dev`: rules each emulated bus holds (`--rules-per-bus`). */
  localRulesPerBus: 'CRUMBS_RULES_PER_BUS',
  /** Local demo (`npm start`): the model of the seeded demo agent; absent: the offline model. */
  demoModel: 'CRUMBS_DEMO_MODEL',
} as const;

export function allFunctions(): FunctionDeclaration[] {
  const f = topology.functions;
  return [
    f.api,
    f.ui,
    f.mcp,
    f.a2a,
    f.authorizer,
    f.publisher,
    f.ruleManager,
    f.indexer,
    f.timer,
    ...Object.values(f.executors),
  ];
}
