/**
 * Tool executor. Triggered by the tool executor queue (SQS, partial batch failures), fed by the EventBridge rules
 * compiled from `tool.def.v1` definitions. Reads the definition and the trigger (and any context sources) from
 * the breadcrumbs table; writes one `tool.response.v1` per request (or `system.loop_stopped.v1`) and claim items.
 */
import { LlmRouter } from '#shared/adapters/llm/llm-router.ts';
import { registerContextTools } from '#shared/core/executor/context-builder.ts';
import { createToolExecutor } from '#shared/core/executor/tool-executor.ts';
import { registerBuiltinTools } from '#shared/tools/builtins.ts';
import { createExecutorHandler } from '../wiring/executor-handler.ts';

export const handler = createExecutorHandler('tool', {
  implementation: createToolExecutor,
  timeoutEarlyInMillis: 2_000,
  setup: ({ vectorSearch }) => {
    registerBuiltinTools();
    registerContextTools({ llm: new LlmRouter(), vectorSearch });
  },
});
