/**
 * The topology of crumbs, declared once. The CDK app (`infra/`) builds AWS resources from it and the local stack
 * (`local/`) builds emulated ones from it, so names, keys, queues, batch sizes and timeouts cannot drift
 * between the two. Handlers read what they need from environment variables whose names are declared here too.
 */

export const EXECUTOR_KINDS = ['agent', 'tool', 'workflow', 'context-builder'] as const;
export type ExecutorKind = (typeof EXECUTOR_KINDS)[number];

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

export interface FunctionDeclaration {
  /** Stable logical name: used for CDK ids, local logs and bundle names. */
  readonly name: string;
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

const EXECUTOR_TIMEOUT_SECONDS: Record<ExecutorKind, number> = {
  agent: 120,
  tool: 60,
  workflow: 60,
  'context-builder': 30,
};

export function executorFunction(kind: ExecutorKind): SqsFunctionDeclaration {
  const timeoutSeconds = EXECUTOR_TIMEOUT_SECONDS[kind];
  return {
    name: `executor-${kind}`,
    entry: `functions/executor-${kind}/handler.ts`,
    timeoutSeconds,
    memoryMb: kind === 'agent' ? 1024 : 512,
    trigger: {
      kind: 'sqs',
      queue: queue(kind, timeoutSeconds),
      batchSize: kind === 'agent' ? 5 : 10,
      maxBatchingWindowSeconds: 0,
      maxConcurrency: kind === 'agent' ? 20 : 50,
    },
    // Every executor can fetch `vector` context (shared/core/executor/context-assembly.ts).
    uses: {
      table: 'read-write',
      secrets: kind === 'agent' || kind === 'tool',
      llm: kind === 'agent' || kind === 'tool',
      embeddings: true,
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
    } satisfies Record<ExecutorKind, SqsFunctionDeclaration>,
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
  /** JSON object: executor kind → SQS queue ARN (rule manager targets). */
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
} as const;

export function allFunctions(): FunctionDeclaration[] {
  const f = topology.functions;
  return [f.api, f.publisher, f.ruleManager, ...Object.values(f.executors)];
}
