/**
 * Driving an agent's orchestration run: every event of the run (its start, the sub-agents' answers, human responses,
 * controls) goes through the engine's driver (`../orchestration/driver.ts`), the plan read from the run itself.
 *
 *   final    the agent's own last step (id `final`) answers the request in the requested mode (plan, build,
 *            converse) with the sub-agents' results as context. The driver runs it in the invocation that reaches
 *            it (`answerNow`): an agent's request to itself would never reach it (rules skip a writer's own
 *            changes). Its output keeps the plan / deliverable it wrote, so the run's result rebuilds them.
 *   answer   when the run ends: the `agent.response.v1` answering the request (`request:<id>` and the request's
 *            `run:`/`step:`/`reply-to:` tags, so a parent run reads it) with `run_id`, the final output, and on
 *            success the plan or deliverable first (`agent.plan.v1` / `agent.deliverable.v1`).
 */
import { FINAL_STEP_ID } from '#shared/domain/agent-modes.ts';
import type { AgentMode } from '#shared/domain/agent-types.ts';
import { NonRetriableError } from '#shared/domain/errors.ts';
import { AGENT_RESPONSE_SCHEMA, requestTag, threadTag } from '#shared/domain/protocol.ts';
import { type WorkflowDefinition, WorkflowDefinitionSchema } from '#shared/domain/workflow-definition.ts';
import type { Clock } from '#shared/ports/breadcrumb-store.ts';
import type { Log } from '#shared/ports/log.ts';
import { threadOf } from '../executor/answers.ts';
import type { ExecutionResult, OutputBreadcrumb } from '../executor/contract.ts';
import { createRunDriver, type Transitioned } from '../orchestration/driver.ts';
import type { ResultEffect } from '../orchestration/effects.ts';
import type { RunEvent } from '../orchestration/events.ts';
import { boundedId } from '../orchestration/ids.ts';
import type { Run } from '../orchestration/run.ts';
import type { AgentAnswer, AgentRun, AgentTask, AgentType } from './contract.ts';
import { type ModeDeps, runMode } from './modes.ts';

export interface OrchestrationDeps extends ModeDeps {
  readonly clock: Clock;
  readonly log: Log;
}

/** The driver of an agent's runs (`run.driver`), and what `reply-to:` their requests name. */
export function agentDriver(agentId: string): string {
  return `agent:${agentId}`;
}

/** What the run keeps of the request in its input (the final step answers it). */
export interface RunInput {
  message: string;
  input?: unknown;
  mode: AgentMode;
  conversation_id?: string;
  /** Each planned call's message, by step id (read by the steps' `message` expressions, never evaluated). */
  messages: Record<string, string>;
}

/** The plan a run follows: the one kept in the run, else the one it starts with. */
export function inlineDefinition(
  run: Run | undefined,
  generated?: Record<string, unknown>,
): WorkflowDefinition {
  const raw = run?.definition ?? generated;
  if (raw === undefined) throw new NonRetriableError(`run ${run?.run_id ?? '?'} has no plan to follow`);
  return WorkflowDefinitionSchema.parse(raw);
}

/** What the sub-agents answered and the checkpoints decided: the final step's context. */
function resultsOf(run: Run): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, state] of Object.entries(run.steps)) {
    if (key === FINAL_STEP_ID || key.includes('[') || key.includes('.')) continue;
    if (state.kind === 'parallel') continue;
    out[key] =
      state.kind === 'human'
        ? {
            decision: state.decision ?? null,
            by: state.by ?? null,
            comment: state.comment ?? null,
            input: state.output ?? null,
          }
        : (state.output ?? null);
  }
  return out;
}

/** One event of one of the agent's runs, through the engine's driver, and what follows from it. */
export async function drive(
  run: AgentRun,
  type: AgentType,
  deps: OrchestrationDeps,
  runId: string,
  event: RunEvent,
  generated?: Record<string, unknown>,
): Promise<ExecutionResult> {
  const driver = createRunDriver({ store: deps.store, clock: deps.clock, log: deps.log });
  const def = run.definition;
  const done = await driver.transition({
    workspace: run.workspace,
    runId,
    event,
    principal: run.principal,
    causation: run.execution.causation,
    context: {},
    definitionFor: async (current) => {
      if (current !== undefined && current.driver !== agentDriver(def.agent_id)) {
        throw new NonRetriableError(`run ${runId} is not an orchestration of agent ${def.agent_id}`);
      }
      return inlineDefinition(current, generated);
    },
    answerNow: async (effect, current) => {
      if (effect.kind !== 'agent' || effect.step !== FINAL_STEP_ID || effect.target !== def.agent_id)
        return undefined;
      return { event: await finalStep(run, type, deps, current, effect.id) };
    },
  });
  if (done === undefined) return { outputs: [] };
  const outputs = await driver.perform(run.workspace, done, {
    // The final step is answered in place (answerNow), never written as a request.
    skip: (e) => e.type === 'request' && e.kind === 'agent' && e.step === FINAL_STEP_ID,
    result: (e) => resultOutputs(run, done, e),
  });
  return { outputs };
}

/** The final step, in the run's mode: an answer event whose output keeps what it wrote. */
async function finalStep(
  run: AgentRun,
  type: AgentType,
  deps: OrchestrationDeps,
  current: Run,
  attemptId: string,
): Promise<RunEvent> {
  const input = current.input as RunInput;
  const task: AgentTask = {
    requestId: current.request_id,
    message: input.message,
    ...(input.input !== undefined ? { input: input.input } : {}),
    mode: input.mode,
    correlationTags: current.reply_tags,
    ...(input.conversation_id !== undefined ? { conversationId: input.conversation_id } : {}),
    depth: current.depth,
  };
  const id = boundedId(`${attemptId}.final`);
  const by = agentDriver(run.definition.agent_id);
  try {
    const outcome = await runMode({ ...run, task }, type, input.mode, deps, {
      user: input.message,
      results: resultsOf(current),
      runId: current.run_id,
    });
    if (outcome.kind !== 'answer') throw new NonRetriableError('the final step did not answer');
    if (outcome.answer.status === 'error') {
      return { type: 'answer', id, request_id: attemptId, ok: false, error: outcome.answer.error, by };
    }
    const output: FinalOutput = {
      mode: input.mode,
      answer: outcome.answer,
      details: outcome.details ?? {},
      breadcrumbs: [...(outcome.outputs ?? [])],
    };
    return { type: 'answer', id, request_id: attemptId, ok: true, output, by };
  } catch (error) {
    // What will not pass fails the step (and the run, which answers with the error); the rest is retried.
    if (!(error instanceof NonRetriableError)) throw error;
    return { type: 'answer', id, request_id: attemptId, ok: false, error: error.message, by };
  }
}

/** The final step's output: its answer and the plan / deliverable it wrote (rebuilt from here at the result). */
interface FinalOutput {
  mode: AgentMode;
  answer: AgentAnswer;
  details: Record<string, unknown>;
  breadcrumbs: OutputBreadcrumb[];
}

function resultOutputs(run: AgentRun, done: Transitioned, effect: ResultEffect): OutputBreadcrumb[] {
  const def = run.definition;
  const r = done.run;
  const input = r.input as RunInput;
  const final =
    effect.status === 'succeeded' ? (r.steps[FINAL_STEP_ID]?.output as FinalOutput | undefined) : undefined;
  const answer: AgentAnswer =
    final !== undefined ? final.answer : { status: 'error', error: effect.error ?? effect.status };
  const text =
    answer.status === 'error'
      ? `error: ${answer.error}`
      : (answer.text ?? JSON.stringify(answer.output ?? null));
  const thread = threadOf(run.execution.trigger);
  return [
    ...(final?.breadcrumbs ?? []),
    {
      id: effect.id,
      schema_name: AGENT_RESPONSE_SCHEMA,
      title: `${def.agent_id}: ${text.slice(0, 80)}`,
      tags: [
        'agent:response',
        `agent:${def.agent_id}`,
        threadTag(thread),
        requestTag(r.request_id),
        ...r.reply_tags,
      ],
      context: {
        agent_id: def.agent_id,
        request_id: r.request_id,
        type: run.spec.type,
        mode: input.mode,
        ...answer,
        ...(final?.details ?? {}),
        message: text,
        run_id: r.run_id,
        run_status: r.status,
        ...(effect.failed_step !== undefined ? { failed_step: effect.failed_step } : {}),
        thread,
      },
    },
  ];
}
