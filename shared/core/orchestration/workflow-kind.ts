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
 * fails at once: a request nobody would answer would wait forever. A write that a wait_for step's selector
 * matches resumes the runs waiting on it, found through the wait index (`resumeWaiting`, README.md "wait_for").
 */
import type { Breadcrumb } from '#shared/domain/breadcrumb.ts';
import { NonRetriableError, NotFoundError } from '#shared/domain/errors.ts';
import { incoming, TIMER_SCHEMA, WORKFLOW_REQUEST_SCHEMA } from '#shared/domain/protocol.ts';
import { getPath, inferRole } from '#shared/domain/selector.ts';
import { SCHEDULER_PRINCIPAL } from '#shared/domain/timer-message.ts';
import {
  type WaitForEntry,
  type WorkflowDefinition,
  waitForSteps,
} from '#shared/domain/workflow-definition.ts';
import * as z from '#shared/domain/zod.ts';
import type { Log } from '#shared/ports/log.ts';
import type { Timers } from '#shared/ports/timers.ts';
import { byOldestWait, type Waiter, type WaitIndex, type WaitKey } from '#shared/ports/wait-index.ts';
import { matchesSelector } from '#shared/routing/compiler.ts';
import { ERROR_ANSWERS } from '../executor/answers.ts';
import type { ExecutionInput, ExecutorKindImplementation, KindDependencies } from '../executor/contract.ts';
import { loadDefinition } from '../executor/definition-cache.ts';
import { deterministicId, writeOutputs } from '../executor/outputs.ts';
import { createRunDriver } from './driver.ts';
import type { MatchedBreadcrumb } from './events.ts';
import { readRunMessage, replyToTag } from './messages.ts';
import type { Run } from './run.ts';
import { isCorrelationValue } from './steps/wait-for.ts';

/**
 * Waiting runs one matching write resumes per invocation. More are resumed by a continuation: a timer set
 * CONTINUE_AFTER_MS ahead that brings the write back here (`resumeWaiting`), as many rounds as it takes.
 */
export const MAX_RESUMES_PER_INVOCATION = 50;
/** Scheduler fires nothing sooner than about this (the timers adapter sets no timer closer). */
const CONTINUE_AFTER_MS = 2_000;

const ContinuationSchema = z.object({
  wait_match: z.object({
    id: z.string().check(z.minLength(1)),
    version: z.number().check(z.int(), z.minimum(1)),
    after: z.object({ since: z.string(), attempt_id: z.string() }),
  }),
});
/** An entry this long past its deadline is left over (its timer has ended the attempt): it goes when found. */
const STALE_AFTER_MS = 5 * 60_000;
/** Runs resumed at once (each is a run read and a conditional write, and its outputs). */
const RESUME_CONCURRENCY = 10;

/**
 * The trigger as a wait_for step sees it: its context view (the pipeline reads it with llm_hints applied), so a
 * field hidden from the workflow is neither matched, nor correlated, nor in the step's output.
 */
function seenAs(trigger: ExecutionInput<WorkflowDefinition>['trigger']): MatchedBreadcrumb {
  const context = trigger.context;
  return {
    id: trigger.id,
    version: trigger.version,
    schema_name: trigger.schema_name,
    tags: [...trigger.tags],
    context:
      context !== null && typeof context === 'object' && !Array.isArray(context)
        ? (context as Record<string, unknown>)
        : {},
    created_by: trigger.created_by,
  };
}

export interface WorkflowKindDeps extends Pick<KindDependencies, 'store' | 'log' | 'clock'> {
  /** Waits, step timeouts and retry back-offs (EventBridge Scheduler). */
  timers: Timers;
  /** Runs waiting for a write (wait_for steps); without it a wait_for step's run fails to wait. */
  waits?: WaitIndex;
  /** Resumes per matching write per invocation (tests lower it). */
  maxResumesPerInvocation?: number;
}

export function createWorkflowKind(deps: WorkflowKindDeps): ExecutorKindImplementation<WorkflowDefinition> {
  const log: Log = deps.log;
  const driver = createRunDriver(deps);
  const maxResumes = deps.maxResumesPerInvocation ?? MAX_RESUMES_PER_INVOCATION;

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

  /**
   * A write matched wait_for selectors of the workflow: the runs waiting on it (the wait index, read strongly
   * consistently) are resumed, each by the driver's conditional run write, then its outputs are written here and
   * only then its entry removed. So a crash anywhere is repaired by the redelivery, which finds the entry again and
   * re-emits the run's effects (a no-op transition); a duplicate or a second matching write finds the step no
   * longer waiting and changes nothing. An entry left behind (its attempt ended) is removed by the write finding it.
   */
  async function resumeWaiting(
    execution: ExecutionInput<WorkflowDefinition>,
    waits: WaitForEntry[],
    after?: Pick<Waiter, 'since' | 'attempt_id'>,
  ) {
    const { definition, definitionRef: ref, trigger } = execution;
    if (deps.waits === undefined) throw new NonRetriableError('the workflow executor has no wait index');
    const index = deps.waits;
    const breadcrumb = seenAs(trigger);
    const found: { key: WaitKey; waiter: Waiter }[] = [];
    for (const { step } of waits) {
      const correlate = step.wait_for.correlate;
      const value = correlate === undefined ? undefined : getPath(breadcrumb.context, correlate.field);
      // A write without the correlation field (or with no scalar there) matches no correlated wait.
      if (correlate !== undefined && !isCorrelationValue(value)) continue;
      if (value !== undefined && !isCorrelationValue(value)) continue;
      const key: WaitKey = {
        workspace: ref.workspace,
        workflow: definition.workflow_id,
        step: step.id,
        ...(value !== undefined ? { correlation: value } : {}),
      };
      for (const waiter of await index.waiting(key)) found.push({ key, waiter });
    }
    // Oldest wait first across the keys; a continuation goes on after the last attempt the round before took, so
    // entries that stay (an attempt whose run is not written yet) do not take every round's places.
    found.sort((a, b) => byOldestWait(a.waiter, b.waiter));
    const left =
      after === undefined ? found : found.filter((f) => byOldestWait(after as Waiter, f.waiter) < 0);
    const now = left.slice(0, maxResumes);
    const writeCtx = {
      store: deps.store,
      workspace: ref.workspace,
      kind: 'workflow' as const,
      definitionId: ref.id,
      trigger: { id: trigger.id, version: trigger.version, tags: trigger.tags },
      principal: execution.principal,
      causation: execution.causation,
    };
    const resume = async ({ key, waiter }: { key: WaitKey; waiter: Waiter }) => {
      const done = await driver.transition({
        workspace: ref.workspace,
        runId: waiter.run_id,
        event: {
          type: 'matched',
          id: `${trigger.id}@${trigger.version}`,
          request_id: waiter.attempt_id,
          breadcrumb,
        },
        principal: execution.principal,
        causation: execution.causation,
        causeTags: trigger.tags,
        context: execution.context,
        definitionFor: (run) => definitionFor(execution, run),
      });
      if (done !== undefined) {
        await writeOutputs(await driver.perform(ref.workspace, done, { keepWaits: true }), writeCtx);
      }
      // The entry goes once its attempt has stopped waiting. An attempt not in the run may be one whose run write
      // has not landed yet (entries are added first): its entry stays until well past its deadline.
      const state = done?.run.steps[waiter.step];
      const ended = state?.attempt_id === waiter.attempt_id && state.status !== 'waiting';
      const expired = Date.parse(waiter.until) + STALE_AFTER_MS < deps.clock.now().getTime();
      if (ended || expired) await index.remove(key, waiter.attempt_id);
    };
    for (let i = 0; i < now.length; i += RESUME_CONCURRENCY) {
      await Promise.all(now.slice(i, i + RESUME_CONCURRENCY).map(resume));
    }
    const last = now.at(-1);
    if (last !== undefined && left.length > now.length) {
      // The rest come with a continuation: a timer whose breadcrumb (written by the timer function, so routed back
      // here) names the write and the last attempt taken. Its id follows from both, so a redelivery of this
      // message sets the same timer, and each continuation goes on from where the last one stopped.
      log.info(
        `workflow ${definition.workflow_id}: ${left.length} runs wait on ${trigger.id}; ${now.length} resumed now`,
      );
      const id = deterministicId(
        'wfmore',
        ref.workspace,
        trigger.id,
        String(trigger.version),
        last.waiter.attempt_id,
      );
      await deps.timers.set({
        workspace: ref.workspace,
        id,
        at: new Date(deps.clock.now().getTime() + CONTINUE_AFTER_MS),
        breadcrumb: {
          id,
          schema_name: TIMER_SCHEMA,
          title: `${definition.workflow_id}: more runs wait on ${trigger.id}`,
          tags: [replyToTag(definition.workflow_id)],
          context: {
            timer_id: id,
            wait_match: {
              id: trigger.id,
              version: trigger.version,
              after: { since: last.waiter.since, attempt_id: last.waiter.attempt_id },
            },
          },
        },
      });
    }
  }

  /**
   * A continuation of a matching write's resumes (`resumeWaiting`): the write, read at its version with its
   * context view in the run's workspace. Only the timer function writes one; any other writer is ignored, so
   * nobody can replay an earlier write to runs that began waiting after it.
   */
  async function continuation(
    execution: ExecutionInput<WorkflowDefinition>,
  ): Promise<
    { execution: ExecutionInput<WorkflowDefinition>; after: Pick<Waiter, 'since' | 'attempt_id'> } | undefined
  > {
    const { trigger, definitionRef: ref } = execution;
    if (trigger.schema_name !== TIMER_SCHEMA || trigger.created_by !== SCHEDULER_PRINCIPAL) return undefined;
    const parsed = ContinuationSchema.safeParse(trigger.context);
    if (!parsed.success) return undefined;
    const { id, version, after } = parsed.data.wait_match;
    let record: Breadcrumb;
    try {
      record = await deps.store.getVersion(ref.workspace, id, version);
    } catch (error) {
      if (error instanceof NotFoundError) return undefined;
      throw error;
    }
    const [view] = await deps.store.contextViews(ref.workspace, [record]);
    if (view === undefined) return undefined;
    const written = {
      ...view,
      workspace: ref.workspace,
      created_by: record.created_by,
      causation: record.causation,
    };
    return { execution: { ...execution, trigger: written }, after };
  }

  /** The workflow's wait_for steps whose selector the trigger (its context view) matches. */
  function waitsMatching(
    definition: WorkflowDefinition,
    trigger: ExecutionInput<WorkflowDefinition>['trigger'],
  ) {
    const seen = seenAs(trigger);
    return waitForSteps(definition.steps).filter(({ step }) => matchesSelector(step.wait_for.selector, seen));
  }

  /** Whether the trigger starts a run: a request, something addressed to a run, or an explicit subscription. */
  function startsOrMoves(
    definition: WorkflowDefinition,
    trigger: ExecutionInput<WorkflowDefinition>['trigger'],
  ) {
    if (trigger.schema_name === WORKFLOW_REQUEST_SCHEMA) return true;
    if (trigger.tags.includes(replyToTag(definition.workflow_id))) return true;
    return (definition.subscriptions?.selectors ?? []).some(
      (selector) => inferRole(selector) === 'trigger' && matchesSelector(selector, seenAs(trigger)),
    );
  }

  return {
    async execute(execution) {
      const { definition, definitionRef: ref } = execution;
      const continued = await continuation(execution);
      if (continued !== undefined) {
        const waits = waitsMatching(definition, continued.execution.trigger);
        if (waits.length > 0) await resumeWaiting(continued.execution, waits, continued.after);
        return { outputs: [] };
      }
      const waits = waitsMatching(definition, execution.trigger);
      if (waits.length > 0) {
        await resumeWaiting(execution, waits);
        if (!startsOrMoves(definition, execution.trigger)) return { outputs: [] };
      }
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
