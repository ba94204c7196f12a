/**
 * The workflow kind (`workflow.def.v1`): the driver of the orchestration engine (`shared/core/orchestration/`).
 * Every trigger is one event of one run: a `workflow.request.v1` starts one, an answer, a human response, a
 * control or a fired timer (all tagged `reply-to:workflow:<id>`) moves one on. No step runs here: a step is a
 * request breadcrumb another executor answers, so no Lambda waits for a step.
 *
 * One trigger: read the run → `advance` → write the run with a condition on its version (create for a new run) →
 * set and cancel its timers → return its new requests and result as outputs (created once under their ids by the
 * pipeline). On a version conflict (another answer to the same run won) it re-reads and re-applies, so a fan-in
 * joins exactly once. A crash after the run write leaves the trigger's claim open; the redelivery finds the event
 * already applied, and `advance` then returns every effect of the run again, which repairs what the crash lost
 * (README.md beside the engine, "Exactly once").
 *
 * A run follows the definition version it started with (`workflow_version`); an edit applies to later runs.
 * Answers to the run's own requests are continuations (`ownRequestOf`): they do not grow the hop count; a run is
 * bounded by its own `limits` instead.
 *
 * A tool step names a tool that must have a `tool.def.v1` in the workspace (its executor answers
 * `tool.request.v1`): a request for a tool nobody defines would wait forever, so the step is failed at once with
 * an error saying so.
 */
import type { Breadcrumb } from '#shared/domain/breadcrumb.ts';
import { ToolDefinitionSchema } from '#shared/domain/definitions.ts';
import {
  NonRetriableError,
  NotFoundError,
  RetriableError,
  VersionConflictError,
} from '#shared/domain/errors.ts';
import type { WorkflowDefinition } from '#shared/domain/workflow-definition.ts';
import type { Log } from '#shared/ports/log.ts';
import type { Timers } from '#shared/ports/timers.ts';
import { advance } from '../orchestration/advance.ts';
import { type Effect, effectsOf } from '../orchestration/effects.ts';
import type { RunEvent } from '../orchestration/events.ts';
import { boundedId } from '../orchestration/ids.ts';
import {
  actionOf,
  type IncomingBreadcrumb,
  readRunMessage,
  runBreadcrumb,
} from '../orchestration/messages.ts';
import { type Run, RunSchema } from '../orchestration/run.ts';
import { ERROR_ANSWERS } from './answers.ts';
import type {
  ExecutionInput,
  ExecutorKindImplementation,
  KindDependencies,
  OutputBreadcrumb,
} from './contract.ts';
import { loadDefinition } from './definition-cache.ts';

export { WORKFLOW_RESULT_SCHEMA } from '#shared/domain/workflow-definition.ts';

/** Re-reads after a version conflict before the message is retried through SQS instead. */
const MAX_CONFLICTS = 20;
const TOOL_DEFINITION_PAGES = 10;
const SYSTEM_PRINCIPAL = 'system:workflow';

export interface WorkflowExecutorDeps extends Pick<KindDependencies, 'store' | 'log' | 'clock'> {
  /** Waits, step timeouts and retry back-offs (EventBridge Scheduler). */
  timers: Timers;
}

function incoming(trigger: ExecutionInput<unknown>['trigger'] | Breadcrumb): IncomingBreadcrumb {
  return {
    id: trigger.id,
    schema_name: trigger.schema_name,
    tags: trigger.tags,
    context: trigger.context,
    created_by: trigger.created_by,
  };
}

function parseRun(record: Breadcrumb): Run {
  const parsed = RunSchema.safeParse(record.context);
  if (!parsed.success) {
    throw new NonRetriableError(
      `run ${record.id} is not a workflow.run.v1 the engine can read: ${parsed.error.message}`,
    );
  }
  return parsed.data;
}

export function createWorkflowExecutor(
  deps: WorkflowExecutorDeps,
): ExecutorKindImplementation<WorkflowDefinition> {
  const log: Log = deps.log;

  async function readRun(workspace: string, runId: string): Promise<Breadcrumb | undefined> {
    try {
      return await deps.store.get(workspace, runId);
    } catch (error) {
      if (error instanceof NotFoundError) return undefined;
      throw error;
    }
  }

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

  /** Names of the workspace's tool definitions (read once per execution, only when a tool step starts). */
  async function toolNames(workspace: string): Promise<Set<string>> {
    const names = new Set<string>();
    let cursor: string | undefined;
    for (let page = 0; page < TOOL_DEFINITION_PAGES; page++) {
      const result = await deps.store.list({
        workspace,
        schema_name: 'tool.def.v1',
        limit: 100,
        ...(cursor !== undefined ? { cursor } : {}),
      });
      for (const record of result.items) {
        const tool = ToolDefinitionSchema.safeParse(record.context);
        if (tool.success) names.add(tool.data.name);
      }
      if (result.next_cursor === null) break;
      cursor = result.next_cursor;
    }
    return names;
  }

  /** Writes the run: create for a new one, else a conditional update. False when another writer got there first. */
  async function writeRun(
    execution: ExecutionInput<WorkflowDefinition>,
    stored: Breadcrumb | undefined,
    run: Run,
  ): Promise<boolean> {
    const { id, schema_name, title, tags, context } = runBreadcrumb(run);
    const workspace = execution.definitionRef.workspace;
    if (stored === undefined) {
      const created = await deps.store.create(
        workspace,
        { schema_name, title, tags, context },
        { principal: execution.principal, id, causation: execution.causation },
      );
      return !created.replayed;
    }
    try {
      await deps.store.update(
        workspace,
        id,
        { title, tags, context },
        { principal: execution.principal, expectedVersion: stored.version, causation: execution.causation },
      );
      return true;
    } catch (error) {
      if (error instanceof VersionConflictError) return false;
      throw error;
    }
  }

  /** Applies `first` (and the answers the driver itself gives, for tools nobody defines) to the run. */
  async function transition(
    execution: ExecutionInput<WorkflowDefinition>,
    runId: string,
    first: RunEvent,
  ): Promise<{ definition: WorkflowDefinition; run: Run; effects: Effect[] } | undefined> {
    const workspace = execution.definitionRef.workspace;
    const events: RunEvent[] = [first];
    const collected: Effect[] = [];
    let known: Set<string> | undefined;
    let last: { definition: WorkflowDefinition; run: Run } | undefined;
    let conflicts = 0;
    while (events.length > 0) {
      const event = events[0] as RunEvent;
      const stored = await readRun(workspace, runId);
      const current = stored === undefined ? undefined : parseRun(stored);
      const definition = await definitionFor(execution, current);
      const result = await advance({
        definition,
        run: current,
        event,
        now: deps.clock.now(),
        context: execution.context,
      });
      if (result.note !== undefined) log.info(`run ${runId}: ${result.note}`);
      if (result.run === undefined) return undefined;
      if (result.changed && !(await writeRun(execution, stored, result.run))) {
        if (++conflicts > MAX_CONFLICTS) {
          throw new RetriableError(`run ${runId} kept changing under ${MAX_CONFLICTS} re-reads`);
        }
        continue;
      }
      events.shift();
      last = { definition, run: result.run };
      collected.push(...result.effects);
      // A tool nobody defines would never answer: fail its step now.
      for (const effect of result.effects) {
        if (effect.type !== 'request' || effect.kind !== 'tool' || effect.target === undefined) continue;
        known ??= await toolNames(workspace);
        if (known.has(effect.target)) continue;
        events.push({
          type: 'answer',
          id: boundedId(`${effect.id}.no-tool`),
          request_id: effect.id,
          ok: false,
          error: `no tool.def.v1 named "${effect.target}" in workspace ${workspace}`,
          by: SYSTEM_PRINCIPAL,
        });
      }
    }
    if (last === undefined) return undefined;
    // Across several transitions, requests and timers the final state no longer wants are not written.
    const wanted = new Set(effectsOf(last.definition, last.run).map((e) => e.id));
    const seen = new Set<string>();
    const effects = collected.filter((e) => {
      if (seen.has(e.id)) return false;
      seen.add(e.id);
      return (e.type !== 'request' && e.type !== 'timer') || wanted.has(e.id);
    });
    return { ...last, effects };
  }

  return {
    async execute(execution) {
      const { definition, definitionRef: ref } = execution;
      const message = readRunMessage(incoming(execution.trigger), definition, ref);
      if ('ignored' in message) {
        log.info(`workflow ${definition.workflow_id}: ${message.ignored}`);
        return { outputs: [] };
      }
      const done = await transition(execution, message.run_id, message.event);
      if (done === undefined) return { outputs: [] };
      const outputs: OutputBreadcrumb[] = [];
      for (const effect of done.effects) {
        const action = actionOf(done.definition, done.run, effect);
        switch (action.type) {
          case 'write':
            outputs.push({ ...action.breadcrumb, id: action.breadcrumb.id });
            break;
          case 'set_timer':
            await deps.timers.set({
              workspace: ref.workspace,
              id: action.id,
              at: new Date(action.at),
              breadcrumb: action.breadcrumb,
            });
            break;
          case 'cancel_timer':
            // Best effort: a timer that fires anyway finds nothing waiting for it.
            await deps.timers.cancel(ref.workspace, action.id).catch((error: unknown) => {
              log.warn('could not cancel a timer; it will fire as a no-op', {
                timer: action.id,
                error: String(error),
              });
            });
            break;
        }
      }
      return { outputs };
    },

    errorOutput: ERROR_ANSWERS.workflow,

    ownRequestOf({ definition, trigger }) {
      const message = readRunMessage(incoming(trigger), definition, { id: trigger.id, version: 1 });
      if ('ignored' in message || message.event.type !== 'answer') return undefined;
      return { id: message.event.request_id };
    },
  };
}
