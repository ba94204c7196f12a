/**
 * The workflow kind (`workflow.def.v1`): the driver of the orchestration engine (`shared/core/orchestration/`).
 * Every trigger is one event of one run: a `workflow.request.v1` starts one; an answer, a human response, a
 * control or a fired timer (all tagged `reply-to:workflow:<id>`) moves one on. No step runs here: a step is a
 * request breadcrumb another executor answers, so no Lambda waits for a step.
 *
 * One trigger: the run driver (`driver.ts`) reads the run, `advance`s it, writes it on a condition on its version,
 * sets and cancels its timers and returns its requests and result as outputs. A version conflict re-reads and
 * re-applies, so a fan-in joins exactly once; a crash is repaired by the redelivery (README.md, "Exactly once").
 *
 * A run follows the definition version it started with. Answers to its own requests are continuations (they do not
 * grow the hop count; its `limits` bound it). A tool or sub-workflow step naming nothing defined in the workspace
 * fails at once: a request nobody would answer would wait forever.
 */
import { NonRetriableError } from '#shared/domain/errors.ts';
import { incoming } from '#shared/domain/protocol.ts';
import type { WorkflowDefinition } from '#shared/domain/workflow-definition.ts';
import type { Log } from '#shared/ports/log.ts';
import type { Timers } from '#shared/ports/timers.ts';
import { ERROR_ANSWERS } from '../executor/answers.ts';
import type { ExecutionInput, ExecutorKindImplementation, KindDependencies } from '../executor/contract.ts';
import { loadDefinition } from '../executor/definition-cache.ts';
import { createRunDriver } from './driver.ts';
import { readRunMessage } from './messages.ts';
import type { Run } from './run.ts';

export interface WorkflowKindDeps extends Pick<KindDependencies, 'store' | 'log' | 'clock'> {
  /** Waits, step timeouts and retry back-offs (EventBridge Scheduler). */
  timers: Timers;
}

export function createWorkflowKind(deps: WorkflowKindDeps): ExecutorKindImplementation<WorkflowDefinition> {
  const log: Log = deps.log;
  const driver = createRunDriver(deps);

  /** The definition a run follows: the version it started with. */
  async function definitionFor(
    execution: ExecutionInput<WorkflowDefinition>,
    run: Run | undefined,
  ): Promise<WorkflowDefinition> {
    const ref = execution.definitionRef;
    if (run === undefined || run.workflow_version === ref.version) return execution.definition;
    const parsed = await loadDefinition({ ...ref, version: run.workflow_version }, deps.store);
    if (parsed.kind !== 'workflow')
      throw new NonRetriableError(`${ref.id}@${run.workflow_version} is not a workflow`);
    return parsed.definition;
  }

  return {
    async execute(execution) {
      const { definition, definitionRef: ref } = execution;
      const message = readRunMessage(incoming(execution.trigger), definition, ref);
      if ('ignored' in message) {
        log.info(`workflow ${definition.workflow_id}: ${message.ignored}`);
        return { outputs: [] };
      }
      const done = await driver.transition({
        workspace: ref.workspace,
        runId: message.run_id,
        event: message.event,
        principal: execution.principal,
        causation: execution.causation,
        causeTags: execution.trigger.tags,
        context: execution.context,
        definitionFor: (run) => definitionFor(execution, run),
      });
      if (done === undefined) return { outputs: [] };
      return { outputs: await driver.perform(ref.workspace, done) };
    },

    exactlyOnceByItself: true,
    errorOutput: ERROR_ANSWERS.workflow,

    ownRequestOf({ definition, trigger }) {
      const message = readRunMessage(incoming(trigger), definition, { id: trigger.id, version: 1 });
      if ('ignored' in message || message.event.type !== 'answer') return undefined;
      return { id: message.event.request_id };
    },
  };
}
