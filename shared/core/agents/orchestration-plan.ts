/**
 * The plan an orchestrating agent runs: a workflow definition, checked by the engine's own schema.
 *
 *   steps        the configured `orchestration.steps`, else the model's plan: calls of `availableAgents` (every
 *                agent of the workspace but itself when absent), in `defaultMode` (sequential: one step per call;
 *                parallel: one `parallel` step `agents`), each in its `mode` or `subAgentMode` (build). The model is
 *                asked with a JSON Schema whose agent enum is the available agents; an invalid plan is sent back
 *                once, then the request is answered as an error.
 *   checkpoints  human steps (`after` a step, else before the final step): the run waits for an approval.
 *   final        the agent's own last step (id `final`), in the requested mode (`orchestration-run.ts`).
 */
import { FINAL_STEP_ID } from '#shared/domain/agent-modes.ts';
import type { AgentMode } from '#shared/domain/agent-types.ts';
import type { AgentDefinition } from '#shared/domain/definitions.ts';
import { NonRetriableError } from '#shared/domain/errors.ts';
import { compileJsonSchema, formatIssues } from '#shared/domain/lang/json-schema.ts';
import { AGENT_DEF_SCHEMA } from '#shared/domain/protocol.ts';
import { type StepDefinition, WorkflowDefinitionSchema } from '#shared/domain/workflow-definition.ts';
import { ORCHESTRATION_PLAN_SCHEMA_ID } from '#shared/ports/llm.ts';
import type { AgentRun } from './contract.ts';
import { agentDriver, type OrchestrationDeps } from './orchestration-run.ts';

const MAX_PLANNED_CALLS = 20;
const AGENT_PAGES = 10;

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
      schema_name: AGENT_DEF_SCHEMA,
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
      ...(run.spec.llm.maxTokens !== undefined ? { maxOutputTokens: run.spec.llm.maxTokens } : {}),
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
export function planDefinition(
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

export async function plannedSteps(
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
