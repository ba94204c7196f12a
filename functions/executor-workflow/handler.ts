/**
 * Workflow executor. Triggered by the workflow executor queue (SQS, partial batch failures), fed by the
 * EventBridge rules compiled from `workflow.def.v1` definitions. Reads the definition and the trigger (and any
 * context sources) from the breadcrumbs table; writes one `workflow.result.v1` (or `workflow.error.v1`,
 * `system.loop_stopped.v1`) per trigger, claim items, and whatever its steps' tools write (breadcrumb.create).
 * Steps run the built-in tools.
 */
import { createWorkflowExecutor } from '#shared/core/executor/workflow-executor.ts';
import { builtinTools } from '#shared/tools/builtins.ts';
import { toolCatalog } from '#shared/tools/catalog.ts';
import { createExecutorHandler } from '../wiring/executor-handler.ts';

const tools = toolCatalog(builtinTools);

export const handler = createExecutorHandler('workflow', {
  implementation: ({ store, log }) => createWorkflowExecutor({ store, log, tools }),
  timeoutEarlyInMillis: 2_000,
});
