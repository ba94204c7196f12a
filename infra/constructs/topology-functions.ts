/**
 * Makes the stateless stack's functions from their topology declarations: what a declaration `uses` (table, bus,
 * secrets, LLMs, embeddings, timers, tenant limits) is bound here, env var and grant together, so every function is
 * built by the same rule and no part of the stack binds a resource by hand.
 *
 * The parts of the stateless stack (this folder: executors, dead letters, rule management, indexing, publishing,
 * front door, dashboard) are plain classes, not construct nodes: each creates its resources in the scope it is given,
 * the stack. A construct level of their own would change every resource's construct path, so its logical ID, and
 * CloudFormation replaces a resource whose logical ID changes (queues would lose their messages).
 */

import { Duration } from 'aws-cdk-lib';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import type { IEventBus } from 'aws-cdk-lib/aws-events';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import type { IBucket } from 'aws-cdk-lib/aws-s3';
import type { IQueue, Queue } from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import type { WorkspaceQuotaOverrides } from '#shared/config.ts';
import type { EmbeddingsSetting } from '#shared/domain/embeddings-setting.ts';
import type { LlmProvider, ModelAliases } from '#shared/domain/llm-model.ts';
import {
  ENV,
  type ExecutorRunner,
  type FunctionDeclaration,
  type HttpTrigger,
  type SqsTrigger,
  type StreamTrigger,
  topology,
} from '#shared/topology.ts';
import type { TenantLimits } from '../config.ts';
import type { ExtraFiles } from './bundling-options.ts';
import {
  agentCredentials,
  CrumbsFunction,
  type CrumbsFunctionDeclaration,
  embeddingsKey,
  llmProviderKeys,
  type OtlpSetting,
} from './crumbs-function.ts';
import type { Timers } from './timers.ts';

export interface TopologyFunctionsProps {
  /** Deployment stage; part of every function name. */
  readonly stage: string;
  /** The breadcrumbs table, bound to functions whose topology `uses.table` or `uses.stream`. */
  readonly table: ITable;
  /** The bus pool, the first bus first. */
  readonly buses: readonly IEventBus[];
  /** The stage's blob bucket, bound to functions whose topology `uses.blobs`. */
  readonly blobs: IBucket;
  /** Name prefix of the LLM provider key secrets, bound to functions with `uses.secrets`. */
  readonly llmSecretPrefix: string;
  /** Where a model id without a provider runs; set on functions with `uses.llm`. */
  readonly defaultLlmProvider: LlmProvider;
  /** The operator's model aliases; set (as JSON) beside the default provider. @default none */
  readonly modelAliases?: ModelAliases;
  /** The operator's model prices (JSON text over the defaults); set beside the default provider. @default none */
  readonly llmPrices?: string;
  /** The operator's daily budgets per workspace (JSON text); set beside the default provider. @default none */
  readonly dailyBudgets?: string;
  /** Where every function (the authorizer aside) sends its spans. @default `xray` */
  readonly otlp?: OtlpSetting;
  /** What one workspace may take; set on functions according to their `uses.limits`. */
  readonly tenantLimits: TenantLimits;
  /** Single workspaces' own quotas and request rates (`crumbs:workspaceQuotas`), set on functions with `requests`. */
  readonly workspaceQuotas?: WorkspaceQuotaOverrides;
  /** The embedding model (`crumbs:embeddings`), bound to functions with `uses.embeddings`. */
  readonly embeddings: EmbeddingsSetting;
  /** Timers and schedules, bound to functions with `uses.timers`. */
  readonly timers: Timers;
  /**
   * The operator's ceiling on response bodies of definitions' requests, set on every function.
   * @default - unset: the guard's 5 MiB
   */
  readonly maxResponseBytes?: number;
  /**
   * Handler paths by function name, replacing the topology's entries (local experiments only).
   * @default - every function's `entry` from the topology
   */
  readonly entryOverrides?: Readonly<Record<string, string>>;
}

export interface TopologyFunctionOptions {
  /**
   * The compiled rules' targets, for a function that manages rules (`uses.bus: 'manage-rules'`).
   * @default - none; required when the declaration manages rules
   */
  readonly ruleTargets?: {
    readonly executorQueues: Readonly<Record<ExecutorRunner, Queue>>;
    readonly ruleTargetsDlq: Queue;
  };
  /**
   * A folder copied beside the bundle.
   * @default - nothing besides the bundle
   */
  readonly extraFiles?: ExtraFiles;
}

export class TopologyFunctions {
  private readonly scope: Construct;
  private readonly props: TopologyFunctionsProps;

  constructor(scope: Construct, props: TopologyFunctionsProps) {
    this.scope = scope;
    this.props = props;
  }

  /** A function with what its declaration `uses` bound: env vars and grants from one place. */
  create(declaration: CrumbsFunctionDeclaration, options: TopologyFunctionOptions = {}): CrumbsFunction {
    const { stage, table, buses } = this.props;
    const { uses } = declaration;
    const fn = new CrumbsFunction(this.scope, pascal(declaration.name), {
      declaration,
      stage,
      entry: this.props.entryOverrides?.[declaration.name],
      ...(options.extraFiles ? { extraFiles: options.extraFiles } : {}),
    });
    if (uses.table) fn.bindTable(table, uses.table);
    if (uses.stream) fn.bindTableStream(table);
    if (uses.blobs) fn.bindBlobs(this.props.blobs, uses.blobs);
    if (uses.bus === 'put-events') fn.bindBus(buses, 'put-events');
    if (uses.bus === 'manage-rules') {
      const { ruleTargets } = options;
      if (!ruleTargets) throw new Error(`${declaration.name} manages rules but was given no rule targets`);
      fn.bindRuleManagement(
        buses,
        topology.bus.ruleNamePrefix,
        ruleTargets.executorQueues,
        ruleTargets.ruleTargetsDlq,
      );
    }
    // Functions with LLM provider keys are the ones that call LLMs; Bedrock models need IAM instead of a key.
    if (uses.secrets) fn.bindSecrets(llmProviderKeys(this.props.llmSecretPrefix)).bindLlmModels();
    if (uses.llm) {
      fn.addEnvironment(ENV.defaultLlmProvider, this.props.defaultLlmProvider);
      fn.addEnvironment(ENV.modelAliases, JSON.stringify(this.props.modelAliases ?? {}));
      fn.addEnvironment(ENV.llmPrices, this.props.llmPrices ?? '');
      fn.addEnvironment(ENV.dailyBudgets, this.props.dailyBudgets ?? '');
    }
    // Every function with Powertools' tracer sends spans; the authorizer (logger only, `functions/authorizer`) none.
    if (declaration.name !== topology.functions.authorizer.name) {
      fn.bindOtlp(this.props.otlp ?? { endpoint: 'xray', captureContent: false });
    }
    if (this.props.maxResponseBytes !== undefined) {
      fn.addEnvironment(ENV.maxResponseBytes, String(this.props.maxResponseBytes));
    }
    if (uses.agentSecrets) fn.bindSecrets(agentCredentials(uses.agentSecrets));
    if (uses.embeddings) {
      fn.bindEmbeddings(this.props.embeddings);
      if (this.props.embeddings.kind === 'openai-compatible')
        fn.bindSecrets(embeddingsKey(this.props.llmSecretPrefix));
    }
    if (uses.timers === 'cancel') fn.bindTimerCancellation(this.props.timers);
    else if (uses.timers) fn.bindTimers(this.props.timers);
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
    if (uses.limits?.includes('requests')) {
      env(ENV.workspaceRequestRate, limits.workspaceRequestRate);
      env(ENV.workspaceRequestBurst, limits.workspaceRequestBurst);
      const own = this.props.workspaceQuotas;
      if (own !== undefined && Object.keys(own).length > 0)
        fn.addEnvironment(ENV.workspaceQuotas, JSON.stringify(own));
    }
    return fn;
  }

  /** `create`, consuming `queue` with the batch settings of the declaration's SQS trigger. */
  consuming(
    declaration: FunctionDeclaration,
    queue: IQueue,
    options: TopologyFunctionOptions = {},
  ): CrumbsFunction {
    const fn = this.create(declaration, options);
    fn.function.addEventSource(queueEventSource(queue, sqsTrigger(declaration)));
    return fn;
  }
}

/** An SQS event source with the trigger's batch settings, reporting failed messages one by one. */
export function queueEventSource(queue: IQueue, trigger: SqsTrigger): SqsEventSource {
  return new SqsEventSource(queue, {
    batchSize: trigger.batchSize,
    maxBatchingWindow: Duration.seconds(trigger.maxBatchingWindowSeconds),
    maxConcurrency: trigger.maxConcurrency,
    reportBatchItemFailures: true,
  });
}

export function sqsTrigger(declaration: FunctionDeclaration): SqsTrigger {
  if (declaration.trigger.kind !== 'sqs') throw new Error(`${declaration.name}: expected an SQS trigger`);
  return declaration.trigger;
}

export function httpTrigger(declaration: FunctionDeclaration): HttpTrigger {
  if (declaration.trigger.kind !== 'http') throw new Error(`${declaration.name}: expected an HTTP trigger`);
  return declaration.trigger;
}

export function streamTrigger(declaration: FunctionDeclaration): StreamTrigger {
  if (declaration.trigger.kind !== 'dynamodb-stream') {
    throw new Error(`${declaration.name}: expected a DynamoDB stream trigger`);
  }
  return declaration.trigger;
}

/** `executor-context-builder` → `ExecutorContextBuilder` (construct ids). */
export function pascal(name: string): string {
  return name
    .split('-')
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join('');
}
