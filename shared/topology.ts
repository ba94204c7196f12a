/**
 * The topology of crumbs, declared once. The CDK app (`infra/`) builds AWS resources from it and the local stack
 * (`local/`) builds emulated ones from it, so names, keys, queues, batch sizes and timeouts cannot drift
 * between the two. Handlers read what they need from environment variables whose names are declared here too.
 */

export const EXECUTOR_KINDS = ['agent', 'tool', 'workflow', 'context-builder'] as const;
export type ExecutorKind = (typeof EXECUTOR_KINDS)[number];

/**
 * Executor functions, each with its own queue. Every kind has its runner of the same name; two more carry what
 * the others should not load (DESIGN.md, "Budgets"): `agent-remote` runs agents of type tool, api and external and
 * tools with `implementation: "mcp"` (the MCP and A2A SDKs, JSONata), `agent-sandbox` runs function agents (the
 * QuickJS sandbox). Which runner a definition goes to: `executorRunnerOf` in `#shared/domain/runners.ts`.
 */
export const EXECUTOR_RUNNERS = [...EXECUTOR_KINDS, 'agent-remote', 'agent-sandbox'] as const;
export type ExecutorRunner = (typeof EXECUTOR_RUNNERS)[number];

/** Which executor kind runs each definition schema. */
export const DEFINITION_SCHEMAS = {
  'agent.def.v1': 'agent',
  'tool.def.v1': 'tool',
  'workflow.def.v1': 'workflow',
  'context.config.v1': 'context-builder',
  /** The older RCRT agent shape (seed 002: `triggers`, `llm_config`); loads unchanged, runs as an agent. */
  'agent.definition.v1': 'agent',
} as const satisfies Record<string, ExecutorKind>;
export type DefinitionSchema = keyof typeof DEFINITION_SCHEMAS;

/** Asks the rule manager to reconcile a workspace's rules (`crumbs rules sync`); answered with a result breadcrumb. */
export const RULES_SYNC_SCHEMA = 'system.rules_sync.v1';

/** The rule manager's own static rule: every change of a definition, and sync requests. */
export function ruleManagerPattern(): { source: string[]; detail: { schema_name: string[] } } {
  return {
    source: ['crumbs'],
    detail: { schema_name: [...Object.keys(DEFINITION_SCHEMAS), RULES_SYNC_SCHEMA] },
  };
}

export interface GsiDeclaration {
  readonly name: string;
  readonly partitionKey: string;
  readonly sortKey: string;
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
}

export interface HttpTrigger {
  readonly kind: 'http';
}

/**
 * How a function's bundle differs from the others: packages left out of the bundle and installed beside it
 * (WebAssembly and big data tables that esbuild cannot or should not inline), and files copied next to it.
 */
export interface BundlingDeclaration {
  /** Import specifiers (esbuild patterns, e.g. `js-tiktoken/ranks/*`) not bundled. */
  readonly externalModules?: readonly string[];
  /** Packages installed into the asset's node_modules (at the lock file's versions). */
  readonly nodeModules?: readonly string[];
  /** Repository files copied next to the bundle (e.g. a worker thread script). */
  readonly copyFiles?: readonly string[];
}

export interface FunctionDeclaration {
  /** Stable logical name: used for CDK ids, local logs and bundle names. */
  readonly name: string;
  readonly bundling?: BundlingDeclaration;
  /**
   * This function's bundle budget in KB when it is not the common one (`infra/bundling.ts`): only for a function
   * that exists to carry something big, so the others need not (agent-remote: the MCP and A2A SDKs).
   */
  readonly bundleBudgetKb?: number;
  /** Handler module, relative to the repository root; it exports `handler`. */
  readonly entry: string;
  readonly timeoutSeconds: number;
  readonly memoryMb: number;
  readonly trigger: SqsTrigger | StreamTrigger | HttpTrigger;
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
     * Resolves model strings (calls models, or reports which model will run): gets the stack's default LLM
     * provider (`ENV.defaultLlmProvider`).
     */
    readonly llm?: boolean;
    /**
     * Reads credentials that definitions reference (`secret_ref`): Secrets Manager secrets under
     * `crumbs/agents/` on AWS (`CRUMBS_SECRET_SOURCE`), environment variables locally.
     */
    readonly agentSecrets?: boolean;
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
  // An A2A partner may block up to transport.external.timeout_ms (at most 90 s).
  'agent-remote': 120,
  'agent-sandbox': 90,
};

const QUICKJS_PACKAGES = ['quickjs-emscripten-core', '@jitl/quickjs-wasmfile-release-sync'] as const;

/** What each runner's bundle leaves out (see BundlingDeclaration). */
const EXECUTOR_BUNDLING: Partial<Record<ExecutorRunner, BundlingDeclaration>> = {
  // The tokenizer's rank tables (1-2 MB each) load on first need, from the installed package.
  agent: { externalModules: ['js-tiktoken/ranks/*'], nodeModules: ['js-tiktoken'] },
  // The sandbox's worker script and the QuickJS WebAssembly module it loads live beside the bundle.
  'agent-sandbox': {
    externalModules: [...QUICKJS_PACKAGES],
    nodeModules: [...QUICKJS_PACKAGES],
    copyFiles: ['shared/adapters/sandbox/quickjs-worker.mjs'],
  },
};

export function executorFunction(runner: ExecutorRunner): SqsFunctionDeclaration {
  const timeoutSeconds = EXECUTOR_TIMEOUT_SECONDS[runner];
  const agent = runner === 'agent' || runner === 'agent-remote' || runner === 'agent-sandbox';
  const bundling = EXECUTOR_BUNDLING[runner];
  return {
    name: `executor-${runner}`,
    entry: `functions/executor-${runner}/handler.ts`,
    ...(bundling !== undefined ? { bundling } : {}),
    // MCP SDK (with zod classic and the Ajv it imports statically), A2A SDK and JSONata: ~780 KB minified,
    // measured with `npm run bench:bundles`; only tool, api and external agents and mcp tools load it.
    ...(runner === 'agent-remote' ? { bundleBudgetKb: 800 } : {}),
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
      secrets: agent || runner === 'tool',
      llm: agent || runner === 'tool',
      embeddings: true,
      ...(runner === 'agent-remote' || runner === 'agent-sandbox' ? { agentSecrets: true } : {}),
    },
  };
}

export const topology = {
  table: {
    name: 'crumbs-breadcrumbs',
    partitionKey: 'id',
    sortKey: 'workspace',
    ttlAttribute: 'expires_at',
    gsis: [
      { name: 'gsi1', partitionKey: 'gsi1pk', sortKey: 'gsi1sk' },
      { name: 'gsi2', partitionKey: 'gsi2pk', sortKey: 'gsi2sk' },
    ],
  } satisfies TableDeclaration,

  bus: {
    name: 'crumbs',
    /** Rules the rule manager creates all start with this, so IAM can scope it to `rule/crumbs/crumbs-def-*`. */
    ruleNamePrefix: 'crumbs-def-',
    /** The rule manager's own static rule (definition schemas → rule-manager queue). */
    ruleManagerRuleName: 'crumbs-system-rule-manager',
    archiveRetentionDays: 14,
    source: 'crumbs',
  },

  functions: {
    api: {
      name: 'api',
      entry: 'functions/api/handler.ts',
      timeoutSeconds: 15,
      memoryMb: 512,
      trigger: { kind: 'http' },
      uses: { table: 'read-write', embeddings: true },
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
      },
      uses: { table: 'read-write', stream: true, bus: 'put-events', embeddings: true },
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
      uses: { table: 'read-write', bus: 'manage-rules', executorQueues: 'target', llm: true },
    },
    executors: {
      agent: executorFunction('agent'),
      tool: executorFunction('tool'),
      workflow: executorFunction('workflow'),
      'context-builder': executorFunction('context-builder'),
      'agent-remote': executorFunction('agent-remote'),
      'agent-sandbox': executorFunction('agent-sandbox'),
    } satisfies Record<ExecutorRunner, SqsFunctionDeclaration>,
    dlqHandler: {
      name: 'dlq-handler',
      entry: 'functions/dlq-handler/handler.ts',
      timeoutSeconds: 30,
      memoryMb: 256,
      /** One event source per executor DLQ; the queue is given at wiring time. */
      batchSize: 10,
      uses: { table: 'read-write' },
    },
  },
} as const;

export type Topology = typeof topology;

/** Names of the environment variables handlers read; set by CDK on AWS and by the local stack locally. */
export const ENV = {
  tableName: 'CRUMBS_TABLE_NAME',
  busName: 'CRUMBS_EVENT_BUS_NAME',
  ruleNamePrefix: 'CRUMBS_RULE_NAME_PREFIX',
  /** JSON object: executor runner (`EXECUTOR_RUNNERS`) → SQS queue ARN (rule manager targets). */
  executorQueueArns: 'CRUMBS_EXECUTOR_QUEUE_ARNS',
  /** Local mode only: JSON of local endpoints for `/health`. Absent on AWS. */
  localEndpoints: 'CRUMBS_LOCAL_ENDPOINTS',
  /** Local mode only: the bearer token the local API accepts. */
  localToken: 'CRUMBS_TOKEN',
  /** On AWS: the JWT claim that lists the workspaces a caller may use. */
  workspacesClaim: 'CRUMBS_WORKSPACES_CLAIM',
  /**
   * Where a model id without a provider runs (`bedrock`, `openrouter`, …, `offline`): `offline` in the local stack,
   * the CDK context value `crumbs:defaultLlmProvider` on AWS. Set on functions with `uses.llm`.
   */
  defaultLlmProvider: 'CRUMBS_DEFAULT_LLM_PROVIDER',
  /**
   * `1`: calls to loopback and private addresses (MCP servers, APIs, A2A partners, http) are allowed — the local
   * stack for tests and development (`crumbs dev --allow-private-network`); never set on AWS by default.
   */
  allowPrivateNetwork: 'CRUMBS_ALLOW_PRIVATE_NETWORK',
  /** `secretsmanager` on AWS: `secret_ref`s name Secrets Manager secrets; absent locally (environment variables). */
  secretSource: 'CRUMBS_SECRET_SOURCE',
} as const;

export function allFunctions(): FunctionDeclaration[] {
  const f = topology.functions;
  return [f.api, f.publisher, f.ruleManager, ...Object.values(f.executors)];
}
