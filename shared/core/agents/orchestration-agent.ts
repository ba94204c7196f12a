/**
 * Orchestration, a capability of every agent (seed 004, "Orchestration Capability"; issue 12): a request with
 * `orchestrate: true` (or `orchestrationAction: "execute"`) makes the agent plan calls of sub-agents and run that
 * plan as a RUN OF THE WORKFLOW ENGINE — one `workflow.run.v1`, every step an event hop, human checkpoints, pause,
 * resume and retry-from-a-step through the run API and `crumbs runs` like any run.
 *
 * The plan is data: a workflow definition generated when the run starts and kept in the run (`run.definition`),
 * driven by the agent itself (`run.driver = "agent:<id>"`), so no definition is written and no rule has to be
 * compiled before the run can go (a workflow written on the fly would race its own rule). Its requests are tagged
 * `reply-to:agent:<id>`, which every agent's rule matches (`agentRunTrigger`); the answers come back to the agent,
 * which advances the run with the same driver as the workflow executor (`../orchestration/driver.ts`).
 *
 *   steps    the configured `orchestration.steps`, else the model's plan: calls of `availableAgents` (every agent
 *            of the workspace but itself when absent), in `defaultMode` (sequential: one step per call; parallel:
 *            one `parallel` step `agents`), each in its `mode` or `subAgentMode` (build). The model is asked with
 *            a JSON Schema whose agent enum is the available agents; an invalid plan is sent back once, then the
 *            request is answered as an error.
 *   checkpoints  human steps (`after` a step, else before the final step): the run waits for an approval.
 *   final    the agent's own last step (id `final`): it answers the request in the requested mode (plan, build,
 *            converse) with the sub-agents' results as context. The driver runs it in the invocation that reaches
 *            it (`answerNow`): an agent's request to itself would never reach it (rules skip a writer's own
 *            changes). Its output keeps the plan / deliverable it wrote, so the run's result rebuilds them.
 *   answer   when the run ends: the `agent.response.v1` answering the request (`request:<id>` and the request's
 *            `run:`/`step:`/`reply-to:` tags, so a parent run reads it) with `run_id`, the final output, and on
 *            success the plan or deliverable first (`agent.plan.v1` / `agent.deliverable.v1`).
 *   depth    the request's `depth` is the run's; sub-agent requests go one deeper and carry the run's `max_depth`
 *            (the smaller of the agent's `maxDepth` and the request's own `max_depth`), so nested orchestrations
 *            are bounded by the outermost: a step that would go deeper fails the run, naming the limit.
 *
 * `orchestrationAction` maps seed 004's vocabulary onto the run's controls (`run_id` names the run): `pause`,
 * `resume` and `continue` (= resume), `rollback` (= retry `from_step`), `human-response` (`decision`, `input`,
 * `comment`, `step` when several wait). Only a person's request is acted on (`../orchestration/authority.ts`):
 * the agent relays it, writing the `workflow.control.v1` / `human.response.v1` as the API would (the audit trail;
 * its causation names the person's request) and applying it in the same invocation (an agent is not triggered by
 * what it wrote); the request is answered with the run's new status.
 */
import { FINAL_STEP_ID, type OrchestrationAction } from '#shared/domain/agent-modes.ts';
import type { AgentMode } from '#shared/domain/agent-types.ts';
import type { AgentDefinition } from '#shared/domain/definitions.ts';
import { NonRetriableError } from '#shared/domain/errors.ts';
import { compileJsonSchema, formatIssues } from '#shared/domain/lang/json-schema.ts';
import { AGENT_RESPONSE_SCHEMA, incoming } from '#shared/domain/protocol.ts';
import {
  type StepDefinition,
  type WorkflowDefinition,
  WorkflowDefinitionSchema,
} from '#shared/domain/workflow-definition.ts';
import type { Clock } from '#shared/ports/breadcrumb-store.ts';
import { ORCHESTRATION_PLAN_SCHEMA_ID } from '#shared/ports/llm.ts';
import type { Log } from '#shared/ports/log.ts';
import { threadOf } from '../executor/answers.ts';
import type { ExecutionInput, ExecutionResult, OutputBreadcrumb } from '../executor/contract.ts';
import { deterministicId } from '../executor/outputs.ts';
import { isPerson } from '../orchestration/authority.ts';
import { controlAllowed, humanInputProblem } from '../orchestration/checks.ts';
import { createRunDriver, parseRun, type Transitioned } from '../orchestration/driver.ts';
import type { ResultEffect } from '../orchestration/effects.ts';
import type { RunEvent } from '../orchestration/events.ts';
import { boundedId, runIdFor } from '../orchestration/ids.ts';
import { readAddressedMessage, SCHEMAS } from '../orchestration/messages.ts';
import type { Run } from '../orchestration/run.ts';
import type { AgentAnswer, AgentRun, AgentTask, AgentType } from './contract.ts';
import { type ModeDeps, runMode } from './modes.ts';

export interface OrchestrationDeps extends ModeDeps {
  readonly clock: Clock;
  readonly log: Log;
}

const MAX_PLANNED_CALLS = 20;
const AGENT_PAGES = 10;

export function agentDriver(agentId: string): string {
  return `agent:${agentId}`;
}

/** Whether the trigger is addressed to one of this agent's runs (an answer, a response, a control). */
export function isRunMessage(def: AgentDefinition, trigger: { tags: readonly string[] }): boolean {
  return trigger.tags.includes(`reply-to:${agentDriver(def.agent_id)}`);
}

/** The request an answer to one of the agent's runs answers (a continuation: no hop is added). */
export function ownRunRequest(
  def: AgentDefinition,
  trigger: ExecutionInput<unknown>['trigger'],
): { id: string } | undefined {
  if (!isRunMessage(def, trigger)) return undefined;
  const message = readAddressedMessage(incoming(trigger));
  return 'ignored' in message || message.event.type !== 'answer'
    ? undefined
    : { id: message.event.request_id };
}

/** What the run keeps of the request in its input (the final step answers it). */
interface RunInput {
  message: string;
  input?: unknown;
  mode: AgentMode;
  conversation_id?: string;
  /** Each planned call's message, by step id (read by the steps' `message` expressions, never evaluated). */
  messages: Record<string, string>;
}

// ---------------------------------------------------------------------------------------------------------------
// execute: plan, then start the run

interface PlannedCall {
  agent: string;
  message?: string;
  mode?: AgentMode;
}

async function availableAgents(run: AgentRun, deps: OrchestrationDeps): Promise<string[]> {
  const configured = run.spec.orchestration.availableAgents;
  if (configured !== undefined) return configured;
  const names: string[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < AGENT_PAGES; page++) {
    const result = await deps.store.list({
      workspace: run.workspace,
      schema_name: 'agent.def.v1',
      limit: 100,
      ...(cursor !== undefined ? { cursor } : {}),
    });
    for (const record of result.items) {
      const id = (record.context as { agent_id?: unknown }).agent_id;
      if (typeof id === 'string' && id !== run.definition.agent_id && !names.includes(id)) names.push(id);
    }
    if (result.next_cursor === null) break;
    cursor = result.next_cursor;
  }
  return names.sort();
}

function planSchema(agents: readonly string[], defaultMode: string): Record<string, unknown> {
  return {
    $id: ORCHESTRATION_PLAN_SCHEMA_ID,
    type: 'object',
    required: ['calls'],
    properties: {
      mode: { enum: ['sequential', 'parallel'], default: defaultMode },
      calls: {
        type: 'array',
        minItems: 1,
        maxItems: MAX_PLANNED_CALLS,
        items: {
          type: 'object',
          required: ['agent'],
          properties: {
            agent: { enum: [...agents] },
            message: { type: 'string' },
            mode: { enum: ['converse', 'plan', 'build'] },
          },
        },
      },
    },
  };
}

async function modelPlan(
  run: AgentRun,
  deps: OrchestrationDeps,
  agents: readonly string[],
  user: string,
): Promise<{ calls: PlannedCall[]; parallel: boolean }> {
  if (deps.llm === undefined) {
    throw new NonRetriableError(
      `agent ${run.definition.agent_id} has no orchestration.steps, and its function has no model to plan with`,
    );
  }
  const cfg = run.spec.orchestration;
  const schema = planSchema(agents, cfg.defaultMode);
  const validator = compileJsonSchema(`orchestration-plan:${JSON.stringify(schema)}`, schema, 'plan');
  const model = run.spec.llm.model ?? 'default';
  const system = [
    run.definition.system_prompt ?? `You are ${run.definition.agent_id}.`,
    '# Orchestration',
    `Plan the calls of sub-agents that answer the request. Available agents: ${agents.join(', ')}.`,
    `Run them ${cfg.defaultMode === 'parallel' ? 'in parallel' : 'one after another'} unless the request needs otherwise.`,
  ].join('\n');
  const messages: { role: 'user' | 'assistant'; content: string }[] = [{ role: 'user', content: user }];
  let problems = '';
  for (let attempt = 1; attempt <= 2; attempt++) {
    const response = await deps.llm.generate({
      model,
      system,
      messages,
      responseSchema: schema,
      signal: run.signal,
    });
    let value: unknown;
    try {
      value = JSON.parse(response.text);
      const issues = validator.validate(value);
      problems = issues.length > 0 ? formatIssues(issues) : '';
    } catch {
      problems = `not JSON: ${response.text.slice(0, 120)}`;
    }
    if (problems === '') {
      const plan = value as { mode?: string; calls: PlannedCall[] };
      return { calls: plan.calls, parallel: (plan.mode ?? cfg.defaultMode) === 'parallel' };
    }
    messages.push(
      { role: 'assistant', content: response.text },
      {
        role: 'user',
        content: `That plan is not valid: ${problems}\nAnswer again with the whole plan, fixed.`,
      },
    );
  }
  throw new NonRetriableError(`the model's orchestration plan is not valid after one retry: ${problems}`);
}

/** The run's workflow (see the header), checked by the engine's own schema. */
function planDefinition(
  def: AgentDefinition,
  steps: StepDefinition[],
  checkpoints: AgentRun['spec']['orchestration']['checkpoints'],
  mode: AgentMode,
  maxDepth: number,
): Record<string, unknown> {
  const all: Record<string, unknown>[] = steps.map((s) => ({ ...s }));
  for (const [i, cp] of (checkpoints ?? []).entries()) {
    const human = {
      id: cp.id ?? (i === 0 ? 'approve' : `approve_${i + 1}`),
      human: {
        prompt: cp.prompt,
        ...(cp.input_schema !== undefined ? { input_schema: cp.input_schema } : {}),
      },
    };
    const at = cp.after === undefined ? -1 : all.findIndex((s) => s.id === cp.after);
    if (cp.after !== undefined && at < 0) {
      throw new NonRetriableError(`orchestration.checkpoints[${i}].after: no top-level step "${cp.after}"`);
    }
    if (at < 0) all.push(human);
    else all.splice(at + 1, 0, human);
  }
  all.push({ id: FINAL_STEP_ID, agent: def.agent_id, mode });
  const workflow = {
    workflow_id: agentDriver(def.agent_id),
    description: `orchestration of ${def.agent_id}`,
    steps: all,
    max_depth: Math.max(1, maxDepth),
  };
  const parsed = WorkflowDefinitionSchema.safeParse(workflow);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new NonRetriableError(
      `the orchestration plan is not a workflow the engine runs: ${issue?.path.join('.')}: ${issue?.message}`,
    );
  }
  return workflow;
}

/** A step's message: the run input's, by an expression (a message is data, never evaluated itself). */
function messageRef(id: string): string {
  return `=$lookup(input.messages, ${JSON.stringify(id)})`;
}

async function plannedSteps(
  run: AgentRun,
  deps: OrchestrationDeps,
  user: string,
): Promise<{ steps: StepDefinition[]; messages: Record<string, string> }> {
  const cfg = run.spec.orchestration;
  const messages: Record<string, string> = {};
  const withDefaults = (step: StepDefinition): StepDefinition => {
    if (step.agent !== undefined) {
      if (step.message === undefined) messages[step.id] = user;
      return {
        ...step,
        ...(step.message === undefined ? { message: messageRef(step.id) } : {}),
        ...(step.mode === undefined ? { mode: cfg.subAgentMode } : {}),
      };
    }
    if (step.parallel !== undefined) return { ...step, parallel: step.parallel.map(withDefaults) };
    return step;
  };
  if (cfg.steps !== undefined) return { steps: cfg.steps.map(withDefaults), messages };
  const agents = await availableAgents(run, deps);
  if (agents.length === 0) {
    throw new NonRetriableError(
      `agent ${run.definition.agent_id} has no sub-agents to orchestrate (availableAgents)`,
    );
  }
  const plan = await modelPlan(run, deps, agents, user);
  const used = new Map<string, number>();
  const calls = plan.calls.map((call) => {
    const n = (used.get(call.agent) ?? 0) + 1;
    used.set(call.agent, n);
    const id = `${call.agent.replace(/[^A-Za-z0-9_-]/g, '_').replace(/^[^A-Za-z_]/, 'a_$&')}${n > 1 ? `_${n}` : ''}`;
    messages[id] = call.message ?? user;
    return {
      id,
      agent: call.agent,
      message: messageRef(id),
      mode: call.mode ?? cfg.subAgentMode,
      on_error: 'fail',
    };
  }) as StepDefinition[];
  return {
    steps: plan.parallel && calls.length > 1 ? [{ id: 'agents', parallel: calls, on_error: 'fail' }] : calls,
    messages,
  };
}

async function execute(
  run: AgentRun,
  type: AgentType,
  mode: AgentMode,
  deps: OrchestrationDeps,
): Promise<ExecutionResult> {
  const task = run.task;
  const user = task.message ?? (task.input !== undefined ? JSON.stringify(task.input) : '(an empty request)');
  const cfg = run.spec.orchestration;
  const maxDepth = Math.min(cfg.maxDepth, task.maxDepth ?? Number.POSITIVE_INFINITY);
  const { steps, messages } = await plannedSteps(run, deps, user);
  const definition = planDefinition(run.definition, steps, cfg.checkpoints, mode, maxDepth);
  const input: RunInput = {
    message: user,
    ...(task.input !== undefined ? { input: task.input } : {}),
    mode,
    ...(task.conversationId !== undefined ? { conversation_id: task.conversationId } : {}),
    messages,
  };
  const trigger = run.execution.trigger;
  const event: RunEvent = {
    type: 'start',
    run_id: runIdFor(trigger.id),
    request_id: task.requestId,
    definition_id: run.execution.definitionRef.id,
    workflow_version: run.execution.definitionRef.version,
    input,
    // A run deeper than its max_depth fails at once, naming the limit.
    depth: task.depth,
    reply_tags: [...task.correlationTags],
    trigger: { id: trigger.id, schema_name: trigger.schema_name, context: trigger.context },
    driver: agentDriver(run.definition.agent_id),
    definition,
  };
  return drive(run, type, deps, event.run_id, event, definition);
}

// ---------------------------------------------------------------------------------------------------------------
// Driving: every event of the agent's runs

function inlineDefinition(run: Run | undefined, generated?: Record<string, unknown>): WorkflowDefinition {
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

async function drive(
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
        `thread:${thread}`,
        `request:${r.request_id}`,
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

/** An event addressed to one of the agent's runs (an answer, a human response, a control from the API). */
export async function onRunMessage(
  run: AgentRun,
  type: AgentType,
  deps: OrchestrationDeps,
): Promise<ExecutionResult> {
  const message = readAddressedMessage(incoming(run.execution.trigger));
  if ('ignored' in message) {
    deps.log.info(`agent ${run.definition.agent_id}: ${message.ignored}`);
    return { outputs: [] };
  }
  return drive(run, type, deps, message.run_id, message.event);
}

// ---------------------------------------------------------------------------------------------------------------
// Actions on a run: seed 004's vocabulary → the run's controls

async function act(
  run: AgentRun,
  type: AgentType,
  deps: OrchestrationDeps,
  action: Exclude<OrchestrationAction, 'execute'>,
): Promise<ExecutionResult> {
  const o = run.task.orchestration;
  const runId = o?.runId ?? '';
  const def = run.definition;
  const driver = createRunDriver({ store: deps.store, clock: deps.clock, log: deps.log });
  const stored = await driver.readRun(run.workspace, runId);
  if (stored === undefined || stored.schema_name !== 'workflow.run.v1') {
    throw new NonRetriableError(`run_id: no run ${runId} in workspace ${run.workspace}`);
  }
  const current = parseRun(stored);
  if (current.driver !== agentDriver(def.agent_id)) {
    throw new NonRetriableError(`run_id: run ${runId} is not an orchestration of agent ${def.agent_id}`);
  }
  const definition = inlineDefinition(current);
  // Only people act on a run (`../orchestration/authority.ts`): the agent relays its requester's own message, so a
  // request another agent, a tool or a plain put wrote is refused here with why, and by the engine all the same.
  const trigger = run.execution.trigger;
  if (!isPerson(trigger.created_by)) {
    throw new NonRetriableError(
      `only a person acts on a run through its agent: this request was written by ${trigger.created_by}`,
    );
  }
  // The event as the written control or response reads: by the driver, relaying the request (its causation).
  const by = agentDriver(def.agent_id);
  const relayOf = `${trigger.id}@${trigger.version}`;
  const controlId = deterministicId('orchctl', def.agent_id, run.task.requestId);
  const tags = [`run:${runId}`, `reply-to:${agentDriver(def.agent_id)}`, `request:${run.task.requestId}`];
  let written: OutputBreadcrumb;
  let event: RunEvent;
  if (action === 'human-response') {
    const waiting = Object.entries(current.steps).filter(
      ([, s]) => s.kind === 'human' && s.status === 'waiting',
    );
    if (current.status !== 'waiting' || waiting.length === 0) {
      throw new NonRetriableError(`run ${runId} is ${current.status}, not waiting for a person`);
    }
    const chosen =
      o?.step !== undefined
        ? waiting.find(([key]) => key === o.step)
        : waiting.length === 1
          ? waiting[0]
          : undefined;
    if (chosen === undefined) {
      throw new NonRetriableError(
        `step: ${o?.step !== undefined ? `"${o.step}" is not waiting` : 'several steps wait'}; waiting: ${waiting.map(([k]) => k).join(', ')}`,
      );
    }
    const [step, state] = chosen;
    const decision = o?.decision ?? 'approve';
    const problem = decision === 'approve' ? humanInputProblem(definition, step, run.task.input) : undefined;
    if (problem !== undefined) throw new NonRetriableError(problem);
    const context = {
      request_id: state.attempt_id ?? '',
      decision,
      ...(decision === 'approve' && run.task.input !== undefined ? { input: run.task.input } : {}),
      ...(o?.comment !== undefined ? { comment: o.comment } : {}),
    };
    written = {
      id: controlId,
      schema_name: SCHEMAS.humanResponse,
      title: `${current.workflow} › ${step}: ${decision}`,
      tags: [...tags, `step:${step}`],
      context,
    };
    event = {
      type: 'human',
      id: controlId,
      request_id: context.request_id,
      decision,
      input: 'input' in context ? context.input : undefined,
      comment: context.comment,
      by,
      relay_of: relayOf,
    };
  } else {
    const control = action === 'rollback' ? 'retry' : action === 'continue' ? 'resume' : action;
    if (control === 'retry' && !definition.steps.some((s) => s.id === o?.fromStep)) {
      throw new NonRetriableError(
        `from_step: expected a top-level step of the run: ${definition.steps.map((s) => s.id).join(', ')}`,
      );
    }
    if (!controlAllowed(current.status, control)) {
      throw new NonRetriableError(`cannot ${action} run ${runId}: it is ${current.status}`);
    }
    const context = {
      run_id: runId,
      action: control,
      ...(control === 'retry' ? { from_step: o?.fromStep } : {}),
    };
    written = {
      id: controlId,
      schema_name: SCHEMAS.control,
      title: `${current.workflow}: ${control}`,
      tags,
      context,
    };
    event = {
      type: 'control',
      id: controlId,
      action: control,
      from_step: o?.fromStep,
      by,
      relay_of: relayOf,
    };
  }
  const result = await drive(run, type, deps, runId, event);
  const after = await driver.readRun(run.workspace, runId);
  const status = after === undefined ? current.status : parseRun(after).status;
  const answer: OutputBreadcrumb = {
    schema_name: AGENT_RESPONSE_SCHEMA,
    title: `${def.agent_id}: ${action} ${runId}: ${status}`,
    tags: [
      'agent:response',
      `agent:${def.agent_id}`,
      `thread:${threadOf(run.execution.trigger)}`,
      `request:${run.task.requestId}`,
      ...run.task.correlationTags,
    ],
    context: {
      agent_id: def.agent_id,
      request_id: run.task.requestId,
      type: run.spec.type,
      status: 'success',
      action,
      run_id: runId,
      run_status: status,
      output: { action, run_id: runId, run_status: status },
      text: `${action}: run ${runId} is ${status}`,
      message: `${action}: run ${runId} is ${status}`,
    },
  };
  // The answer first (the pipeline's first output id, which an error answer would take), then the control.
  return { outputs: [answer, written, ...result.outputs] };
}

/** `orchestrate: true` / `orchestrationAction` on a request. */
export async function orchestrate(
  run: AgentRun,
  type: AgentType,
  mode: AgentMode,
  deps: OrchestrationDeps,
): Promise<ExecutionResult> {
  const action = run.task.orchestration?.action ?? 'execute';
  return action === 'execute' ? execute(run, type, mode, deps) : act(run, type, deps, action);
}
