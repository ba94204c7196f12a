/**
 * Modes (seed 004's CONVERSE, PLAN, BUILD): what a request's `mode` makes an agent of any type answer.
 *
 *   converse  the type's own turn (a context agent's chat with tool rounds, another type's one job).
 *   plan      one model call for a plan in the agent's `plan` format, written as `agent.plan.v1`.
 *   build     a context agent's one model call (no tools) for the deliverable in its `deliverable` format, or
 *             another type's job output, checked without retry. Written as `agent.deliverable.v1`, ONE per
 *             (conversation, type), upserted: its versions are the deliverable's history.
 *
 * A model's plan or deliverable that fails its format's check (`mode-formats.ts`) is sent back once with the
 * problems, then answered as an error. The request's `agent.response.v1` comes first among the outputs (a
 * failure's error answer takes its id). A mode the agent does not list is refused, naming its modes; without one
 * a request is `converse` when the agent lists it, else the agent's first mode.
 */
import { dataChecks } from '#shared/adapters/checks/checks.ts';
import type { AgentSpec } from '#shared/domain/agent-spec.ts';
import type { AgentMode } from '#shared/domain/agent-types.ts';
import { NonRetriableError } from '#shared/domain/errors.ts';
import { DEFAULT_MODEL_ID } from '#shared/domain/llm-model.ts';
import {
  AGENT_DELIVERABLE_SCHEMA,
  AGENT_PLAN_SCHEMA,
  requestTag,
  threadTag,
} from '#shared/domain/protocol.ts';
import type { YamlParser } from '#shared/domain/yaml.ts';
import type { BreadcrumbStore } from '#shared/ports/breadcrumb-store.ts';
import type { LlmClient, LlmMessage, LlmRequest, ResponseFormat } from '#shared/ports/llm.ts';
import type { Tokenizers } from '#shared/ports/tokenizer.ts';
import { threadOf } from '../executor/answers.ts';
import type { OutputBreadcrumb } from '../executor/contract.ts';
import { deterministicId } from '../executor/outputs.ts';
import { contextPrompt, formatSection } from './context/prompt.ts';
import type { AgentOutcome, AgentRun, AgentTask, AgentType } from './contract.ts';
import { conversationHistory, conversationTag } from './conversation-history.ts';
import {
  buildInstruction,
  type Check,
  checkDeliverable,
  checkPlan,
  contentOf,
  planInstruction,
  schemaProblems,
  type Validate,
} from './mode-formats.ts';

export interface ModeDeps {
  /** The model plan and build call (and an orchestration's planner and final step); absent: those modes fail. */
  readonly llm?: LlmClient;
  readonly store: BreadcrumbStore;
  readonly tokenizers?: Tokenizers;
  readonly parseYaml?: YamlParser;
}

/** An orchestration's final step: the request that started it and what its sub-agents answered. */
export interface FinalStep {
  readonly user: string;
  readonly results: Record<string, unknown>;
  readonly runId: string;
}

/** The mode a task runs in, or a NonRetriableError naming the modes the agent supports. */
export function modeOf(spec: AgentSpec, task: AgentTask, agentId: string): AgentMode {
  if (task.mode === undefined)
    return spec.modes.includes('converse') ? 'converse' : (spec.modes[0] ?? 'converse');
  if (!spec.modes.includes(task.mode)) {
    throw new NonRetriableError(
      `agent ${agentId} does not support mode "${task.mode}"; supported modes: ${spec.modes.join(', ')}`,
    );
  }
  return task.mode;
}

/** Runs `run.task` in `mode` with the type's implementation. */
export async function runMode(
  run: AgentRun,
  type: AgentType,
  mode: AgentMode,
  deps: ModeDeps,
  final?: FinalStep,
): Promise<AgentOutcome> {
  switch (mode) {
    case 'converse':
      return final === undefined ? type.run(run as never) : finalConverse(run, type, deps, final);
    case 'plan':
      return plan(run, deps, final);
    case 'build':
      return build(run, type, deps, final);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Prompts

interface Prompt {
  model: string;
  system: string;
  user: string;
}

function taskText(task: AgentTask): string {
  const parts = [
    ...(task.message !== undefined ? [task.message] : []),
    ...(task.input !== undefined ? [`Input:\n${JSON.stringify(task.input, null, 2)}`] : []),
  ];
  return parts.length > 0 ? parts.join('\n\n') : '(an empty request)';
}

/** The agent's own prompt: a context agent's assembled one, else its system prompt or description. */
async function basePrompt(
  run: AgentRun,
  deps: ModeDeps,
  final: FinalStep | undefined,
  /** The conversation's earlier plans, deliverables and messages (plan and build), fitted after the context. */
  history?: string,
): Promise<Prompt> {
  const extra = final === undefined ? [] : [{ key: 'sub_agent_results', value: final.results }];
  const trailing = history === undefined ? [] : [{ key: 'conversation_history', value: history }];
  if (run.spec.type === 'context') {
    return contextPrompt(run.execution, deps, run.spec, run.task, extra, final?.user, trailing);
  }
  const def = run.definition;
  const intro =
    def.system_prompt ?? `You are ${def.agent_id}${def.description ? `: ${def.description}` : ', an agent'}.`;
  return {
    model: run.spec.llm.model ?? DEFAULT_MODEL_ID,
    system: [intro, ...[...extra, ...trailing].map((e) => formatSection(e.key, e.value))].join('\n\n'),
    user: final?.user ?? taskText(run.task),
  };
}

function modelOf(deps: ModeDeps, mode: string, agentId: string): LlmClient {
  if (deps.llm === undefined) {
    throw new NonRetriableError(`${mode} mode needs a model, and the function running ${agentId} has none`);
  }
  return deps.llm;
}

// ---------------------------------------------------------------------------------------------------------------
// Checked model calls: one retry with the problems (`mode-formats.ts` checks)

/**
 * The model request of plan and build mode: the agent's prompt with the mode's instruction appended, asking for
 * the configured format (a JSON Schema when the format is json).
 */
async function modeRequest(
  run: AgentRun,
  deps: ModeDeps,
  final: FinalStep | undefined,
  instruction: string,
  cfg: { format: string; schema?: Record<string, unknown> },
  format: ResponseFormat,
): Promise<LlmRequest> {
  const history = await conversationHistory(deps.store, run.execution.trigger.workspace, run.task);
  const prompt = await basePrompt(run, deps, final, history);
  return {
    model: prompt.model,
    system: `${prompt.system}\n\n${instruction}`,
    messages: [{ role: 'user', content: prompt.user }],
    ...(cfg.format === 'json' ? { responseSchema: cfg.schema ?? { type: 'object' } } : {}),
    responseFormat: format,
    ...(run.spec.llm.temperature !== undefined ? { temperature: run.spec.llm.temperature } : {}),
    ...(run.spec.llm.maxTokens !== undefined ? { maxOutputTokens: run.spec.llm.maxTokens } : {}),
  };
}

/** Schemas of an agent's mode formats are checked in its workspace's share of the data checks. */
function validateIn(run: AgentRun): Validate {
  return (check) => dataChecks().validate(run.workspace, check);
}

async function generateChecked<T>(
  run: AgentRun,
  llm: LlmClient,
  request: LlmRequest,
  check: Check<T>,
  what: string,
): Promise<{ value: T; attempts: number; model: string }> {
  const messages: LlmMessage[] = [...request.messages];
  let problems = '';
  for (let attempt = 1; attempt <= 2; attempt++) {
    const response = await llm.generate({ ...request, messages, signal: run.signal });
    const checked = await check(response.text);
    if (checked.ok) return { value: checked.value, attempts: attempt, model: response.model };
    problems = checked.problems;
    run.log.warn(`the model's ${what} is not valid`, { agentId: run.definition.agent_id, attempt, problems });
    messages.push(
      { role: 'assistant', content: response.text },
      {
        role: 'user',
        content: `That ${what} is not valid: ${problems}\nAnswer again with the whole ${what}, fixed.`,
      },
    );
  }
  throw new NonRetriableError(`the model's ${what} is not valid after one retry: ${problems}`);
}

// ---------------------------------------------------------------------------------------------------------------
// plan

async function plan(run: AgentRun, deps: ModeDeps, final: FinalStep | undefined): Promise<AgentOutcome> {
  const def = run.definition;
  const cfg = run.spec.plan;
  const { value, attempts, model } = await generateChecked(
    run,
    modelOf(deps, 'plan', def.agent_id),
    await modeRequest(run, deps, final, planInstruction(run.spec), cfg, {
      kind: cfg.format,
      ...(cfg.template !== undefined ? { template: cfg.template } : {}),
    }),
    checkPlan(run.spec, deps.parseYaml, validateIn(run)),
    'plan',
  );
  const planId = deterministicId('plan', def.agent_id, run.task.requestId);
  const text = typeof value === 'string' ? value : JSON.stringify(value, null, 2);
  const planOutput = modeArtifact(run, final, {
    mode: 'plan',
    title: `${def.agent_id} plan: ${firstLine(text)}`,
    tags: [],
    content: { format: cfg.format, plan: value },
    about: { attempts, model },
  });
  return {
    kind: 'answer',
    answer: { status: 'success', output: value, text },
    details: { plan_id: planId, format: cfg.format, attempts },
    outputs: [{ id: planId, ...planOutput }],
  };
}

// ---------------------------------------------------------------------------------------------------------------
// build

async function build(
  run: AgentRun,
  type: AgentType,
  deps: ModeDeps,
  final: FinalStep | undefined,
): Promise<AgentOutcome> {
  const def = run.definition;
  const cfg = run.spec.deliverable;
  let content: unknown;
  let details: Record<string, unknown> = {};
  let extra: readonly OutputBreadcrumb[] = [];
  if (run.spec.type === 'context') {
    const built = await generateChecked(
      run,
      modelOf(deps, 'build', def.agent_id),
      await modeRequest(run, deps, final, buildInstruction(run.spec), cfg, {
        kind: cfg.format,
        ...(cfg.sections !== undefined ? { sections: cfg.sections } : {}),
      }),
      checkDeliverable(run.spec, validateIn(run)),
      'deliverable',
    );
    content = built.value;
    details = { attempts: built.attempts, model: built.model };
  } else {
    const typeRun =
      final === undefined
        ? run
        : {
            ...run,
            task: {
              ...run.task,
              message: final.user,
              input: { request: run.task.input ?? null, sub_agent_results: final.results },
            },
          };
    const outcome = await type.run(typeRun as never);
    if (outcome.kind !== 'answer') {
      throw new NonRetriableError(`a ${run.spec.type} agent's build did not answer`);
    }
    if (outcome.answer.status === 'error') return outcome;
    content = contentOf(outcome.answer, run.spec);
    extra = outcome.outputs ?? [];
    const text = typeof content === 'string' ? content : JSON.stringify(content);
    const problems =
      cfg.format === 'json'
        ? await schemaProblems(validateIn(run), cfg.schema, content, 'deliverable.schema')
        : await (async () => {
            const r = await checkDeliverable(run.spec, validateIn(run))(text);
            return r.ok ? undefined : r.problems;
          })();
    if (problems !== undefined) {
      throw new NonRetriableError(
        `the ${run.spec.type} agent's output is not a valid deliverable: ${problems}`,
      );
    }
  }
  const deliverableId = deliverableIdFor(conversationOf(run.task), cfg.type);
  const text = typeof content === 'string' ? content : JSON.stringify(content, null, 2);
  const deliverable = modeArtifact(run, final, {
    mode: 'build',
    title: `${cfg.type}: ${firstLine(text)}`,
    tags: [`deliverable:${cfg.type}`],
    content: { type: cfg.type, format: cfg.format, content },
    about: {},
  });
  return {
    kind: 'answer',
    answer: { status: 'success', output: content, text },
    details: { deliverable_id: deliverableId, deliverable_type: cfg.type, format: cfg.format, ...details },
    outputs: [{ upsertId: deliverableId, ...deliverable }, ...extra],
  };
}

/** The one deliverable of a type in a conversation (see the header). */
export function deliverableIdFor(conversationId: string, type: string): string {
  return deterministicId('deliverable', conversationId, type);
}

// ---------------------------------------------------------------------------------------------------------------
// converse, as an orchestration's final step: one model call over the sub-agents' results (no tool rounds)

async function finalConverse(
  run: AgentRun,
  type: AgentType,
  deps: ModeDeps,
  final: FinalStep,
): Promise<AgentOutcome> {
  if (run.spec.type !== 'context') {
    return type.run({
      ...run,
      task: { ...run.task, message: final.user, input: { sub_agent_results: final.results } },
    } as never);
  }
  const llm = modelOf(deps, 'converse', run.definition.agent_id);
  const prompt = await basePrompt(run, deps, final);
  const response = await llm.generate({
    model: prompt.model,
    system: prompt.system,
    messages: [{ role: 'user', content: prompt.user }],
    ...(run.spec.llm.temperature !== undefined ? { temperature: run.spec.llm.temperature } : {}),
    ...(run.spec.llm.maxTokens !== undefined ? { maxOutputTokens: run.spec.llm.maxTokens } : {}),
    signal: run.signal,
  });
  return {
    kind: 'answer',
    answer: { status: 'success', text: response.text },
    details: { model: response.model },
  };
}

// ---------------------------------------------------------------------------------------------------------------
// The plan and the deliverable breadcrumbs

/** The conversation a request belongs to: its own `conversation_id`, else its request id. */
function conversationOf(task: AgentTask): string {
  return task.conversationId ?? task.requestId;
}

/** What plan and build mode write. */
const ARTIFACTS = {
  plan: { schema: AGENT_PLAN_SCHEMA, tag: 'agent:plan' },
  build: { schema: AGENT_DELIVERABLE_SCHEMA, tag: 'agent:deliverable' },
} as const;

/**
 * The plan or the deliverable (see the header), without its id: tagged `agent:plan` / `agent:deliverable`, the
 * agent, `request:`, `thread:` and the conversation; its context names the agent, the request, the mode and the
 * conversation around what the mode produced (`content`) and how (`about`).
 */
function modeArtifact(
  run: AgentRun,
  final: FinalStep | undefined,
  artifact: {
    mode: keyof typeof ARTIFACTS;
    title: string;
    /** Tags of this kind of artifact, after `agent:<id>`. */
    tags: readonly string[];
    content: Record<string, unknown>;
    about: Record<string, unknown>;
  },
): OutputBreadcrumb {
  const task = run.task;
  const conversationId = conversationOf(task);
  return {
    schema_name: ARTIFACTS[artifact.mode].schema,
    title: artifact.title,
    tags: [
      ARTIFACTS[artifact.mode].tag,
      `agent:${run.definition.agent_id}`,
      ...artifact.tags,
      requestTag(task.requestId),
      threadTag(threadOf(run.execution.trigger)),
      conversationTag(conversationId),
    ],
    context: {
      agent_id: run.definition.agent_id,
      request_id: task.requestId,
      // The breadcrumb that asked, where a later plan or build reads its message (conversation-history.ts).
      trigger_id: run.execution.trigger.id,
      mode: artifact.mode,
      ...artifact.content,
      conversation_id: conversationId,
      ...artifact.about,
      ...(final !== undefined ? { run_id: final.runId } : {}),
    },
  };
}

function firstLine(text: string): string {
  const line =
    text
      .split('\n')
      .map((l) =>
        l
          .replace(/<[^>]+>/g, '')
          .replace(/^#+\s*/, '')
          .trim(),
      )
      .find((l) => l !== '') ?? '';
  return line.slice(0, 80);
}

/** A conversation tag, when the id fits in one (tags are at most 128 characters). */
