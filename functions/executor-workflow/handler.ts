/**
 * Workflow executor: the driver of workflow runs. Triggered by the workflow executor queue (SQS, partial batch
 * failures), fed by the EventBridge rules compiled from `workflow.def.v1` definitions: `workflow.request.v1`
 * naming the workflow, and everything tagged `reply-to:workflow:<id>` (step answers, human responses, controls,
 * fired timers). Reads the definition, the trigger and the run; writes the run (`workflow.run.v1`, a conditional
 * write per transition), its step requests (`tool.request.v1`, `agent.request.v1`, `workflow.request.v1`,
 * `human.request.v1`) and its result (`workflow.result.v1` / `workflow.error.v1`); creates and deletes the run's
 * timers (EventBridge Scheduler one-time schedules) and its wait_for steps' wait index entries (table items).
 */
import { defaultDocumentClient } from '#shared/adapters/dynamodb/client.ts';
import { DynamoWaitIndex } from '#shared/adapters/dynamodb/wait-index.ts';
import { sealGuard } from '#shared/adapters/dynamodb/workspace-seal.ts';
import { schedulerTimersFrom } from '#shared/adapters/scheduler/scheduler-timers.ts';
import { parseEnv, TableEnvSchema, TimersEnvSchema } from '#shared/config.ts';
import { createWorkflowKind } from '#shared/core/orchestration/workflow-kind.ts';
import { ENV } from '#shared/topology.ts';
import { createExecutorHandler } from '../wiring/executor-handler.ts';

const tableName = parseEnv(TableEnvSchema)[ENV.tableName];
// No timer is set for a workspace its deletion has sealed.
const timers = schedulerTimersFrom(parseEnv(TimersEnvSchema), sealGuard(defaultDocumentClient(), tableName));
const waits = new DynamoWaitIndex(tableName);

export const handler = createExecutorHandler('workflow', {
  implementation: ({ store, log, clock }) => createWorkflowKind({ store, log, clock, timers, waits }),
  timeoutEarlyInMillis: 2_000,
});
