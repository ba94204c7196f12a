/**
 * Tool executor. Triggered by the tool executor queue (SQS, partial batch failures), fed by the EventBridge rules
 * compiled from `tool.def.v1` definitions. Reads the definition and the trigger (and any context sources) from
 * the breadcrumbs table; writes one `tool.response.v1` per request (or `system.loop_stopped.v1`) and claim items.
 * Runs the built-in tools plus `context.build` and `llm` (a bare model id runs on CRUMBS_DEFAULT_LLM_PROVIDER);
 * the `http` tool's `secret_ref` headers are read from the definition's workspace (Secrets Manager on AWS).
 */
import { secretsFromEnv } from '#shared/adapters/secrets/secret-source.ts';
import { contextTools } from '#shared/core/context-builder/context-builder-kind.ts';
import { metered } from '#shared/core/executor/usage-record.ts';
import { createToolKind } from '#shared/core/tools/tool-kind.ts';
import { builtinTools } from '#shared/tools/builtins.ts';
import { toolCatalog } from '#shared/tools/catalog.ts';
import { createExecutorHandler } from '../wiring/executor-handler.ts';
import { llmFromEnv } from '../wiring/llm-from-env.ts';

const secrets = secretsFromEnv();

export const handler = createExecutorHandler('tool', {
  // `metered`: the `llm` tool's model call rides in its answer (`llm_usage`).
  // The `llm` tool's calls answer to its request budget and the workspace's daily budget (the governed path).
  implementation: ({ store, log, clock, vectorSearch }) =>
    metered(
      createToolKind({
        store,
        log,
        clock,
        secrets,
        tools: toolCatalog([
          ...builtinTools,
          ...contextTools({ llm: llmFromEnv(process.env, { log }), vectorSearch }),
        ]),
      }),
    ),
  timeoutEarlyInMillis: 2_000,
});
