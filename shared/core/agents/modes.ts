/**
 * Modes (seed 004's CONVERSE, PLAN, BUILD; issue 12): what a request's `mode` makes an agent of any type answer.
 *
 *   converse  the type's own turn, as before modes: a context agent's chat with tool rounds, another type's one
 *             job; answered by `agent.response.v1`.
 *   plan      one model call (every type: the context agent with its assembled context, the others with their
 *             `system_prompt` / description) asking for a plan in the agent's `plan` format; the answer is checked
 *             (json: parses and matches `schema`; yaml: parses and matches `schema`; markdown: not empty and has
 *             every heading of `template`). An answer that fails is sent back once with the problems, then the
 *             request is answered as an error. Written as `agent.plan.v1 { agent_id, request_id, mode, format,
 *             plan, conversation_id }` (id `plan-<hash of agent, request>`).
 *   build     the type's BUILD: a context agent makes one model call (no tools) for the deliverable in its
 *             `deliverable` format, checked and retried once like a plan (json: `schema`; markdown and html: every
 *             one of `sections` as a heading, in order); the other types do their job and their output becomes
 *             the content (checked against `schema`, no retry: no model wrote it). Written as
 *             `agent.deliverable.v1 { agent_id, request_id, mode, type, format, content, conversation_id }`,
 *             ONE breadcrumb per (conversation_id, type) — id `deliverable-<hash of both>`, upserted — so later
 *             builds in the conversation update it and its versions are the deliverable's history; a duplicate
 *             or retried build writes the same breadcrumb again (no change when the content is the same).
 *
 * Every request also gets its one `agent.response.v1` (status, `output` = the plan or the deliverable's content,
 * `plan_id` / `deliverable_id`), first among the outputs so a failure's error answer takes its id; the plan and the
 * deliverable are tagged `request:<request_id>` too. `conversation_id` is the request's, else its request id.
 *
 * A mode the agent does not list (`modes`, or `yaml.agent_card.modes`) is refused with an error answer naming the
 * modes it supports; a request without a mode is `converse` when the agent supports it, else its first mode.
 */
import { createHash } from 'node:crypto';
import type { AgentSpec } from '#shared/domain/agent-spec.ts';
import type { AgentMode } from '#shared/domain/agent-types.ts';
import {
  type FieldIssue,
  InvalidJsonSchemaError,
  NonRetriableError,
  ValidationError,
} from '#shared/domain/errors.ts';
import { compileJsonSchema, formatIssues } from '#shared/domain/lang/json-schema.ts';
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
import { contextPrompt, formatSection } from './context/turn.ts';
import type { AgentAnswer, AgentOutcome, AgentRun, AgentTask, AgentType } from './contract.ts';

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
async function basePrompt(run: AgentRun, deps: ModeDeps, final: FinalStep | undefined): Promise<Prompt> {
  const extra = final === undefined ? [] : [{ key: 'sub_agent_results', value: final.results }];
  if (run.spec.type === 'context') {
    return contextPrompt(run.execution, deps, run.spec, run.task, extra, final?.user);
  }
  const def = run.definition;
  const intro =
    def.system_prompt ?? `You are ${def.agent_id}${def.description ? `: ${def.description}` : ', an agent'}.`;
  return {
    model: run.spec.llm.model ?? DEFAULT_MODEL_ID,
    system: [intro, ...extra.map((e) => formatSection(e.key, e.value))].join('\n\n'),
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
// Checked model calls: one retry with the problems

type Check<T> = (text: string) => { ok: true; value: T } | { ok: false; problems: string };

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
  const prompt = await basePrompt(run, deps, final);
  return {
    model: prompt.model,
    system: `${prompt.system}\n\n${instruction}`,
    messages: [{ role: 'user', content: prompt.user }],
    ...(cfg.format === 'json' ? { responseSchema: cfg.schema ?? { type: 'object' } } : {}),
    responseFormat: format,
    ...(run.spec.llm.temperature !== undefined ? { temperature: run.spec.llm.temperature } : {}),
  };
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
    const checked = check(response.text);
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

function schemaProblems(
  schema: Record<string, unknown> | undefined,
  value: unknown,
  path: string,
): string | undefined {
  if (schema === undefined) return undefined;
  let issues: FieldIssue[];
  try {
    issues = compileJsonSchema(`${path}:${JSON.stringify(schema)}`, schema, path).validate(value);
  } catch (error) {
    if (!(error instanceof InvalidJsonSchemaError)) throw error;
    throw new NonRetriableError(`${path} is not a usable JSON Schema: ${error.problem}`, { cause: error });
  }
  return issues.length > 0 ? formatIssues(issues) : undefined;
}

function parseJson(text: string): { ok: true; value: unknown } | { ok: false; problems: string } {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false, problems: `not JSON: ${text.slice(0, 120)}` };
  }
}

const HEADING = /^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$/gm;

function markdownHeadings(text: string): string[] {
  return [...text.matchAll(HEADING)].map((m) => (m[1] ?? '').trim().toLowerCase());
}

function htmlHeadings(text: string): string[] {
  return [...text.matchAll(/<h[1-6][^>]*>([\s\S]*?)<\/h[1-6]>/gi)].map((m) =>
    (m[1] ?? '')
      .replace(/<[^>]+>/g, '')
      .replace(/&amp;/g, '&')
      .replace(/&lt;/g, '<')
      .replace(/&gt;/g, '>')
      .trim()
      .toLowerCase(),
  );
}

/** The headings missing from `found` (in order: each after the previous). */
function missingSections(wanted: readonly string[], found: readonly string[]): string[] {
  const missing: string[] = [];
  let from = 0;
  for (const section of wanted) {
    const at = found.indexOf(section.trim().toLowerCase(), from);
    if (at < 0) missing.push(section);
    else from = at + 1;
  }
  return missing;
}

// ---------------------------------------------------------------------------------------------------------------
// plan

function checkPlan(spec: AgentSpec, parseYaml: YamlParser | undefined): Check<unknown> {
  const cfg = spec.plan;
  return (text) => {
    switch (cfg.format) {
      case 'json': {
        const parsed = parseJson(text);
        if (!parsed.ok) return parsed;
        const problems = schemaProblems(cfg.schema, parsed.value, 'plan.schema');
        return problems === undefined ? parsed : { ok: false, problems };
      }
      case 'yaml': {
        if (parseYaml === undefined) throw new NonRetriableError('a yaml plan needs the YAML parser');
        let value: unknown;
        try {
          value = parseYaml(text, 'plan');
        } catch (error) {
          if (!(error instanceof ValidationError)) throw error;
          return { ok: false, problems: error.message };
        }
        const problems = schemaProblems(cfg.schema, value, 'plan.schema');
        return problems === undefined ? { ok: true, value: text } : { ok: false, problems };
      }
      case 'markdown': {
        if (text.trim() === '') return { ok: false, problems: 'the plan is empty' };
        const missing = missingSections(markdownHeadings(cfg.template ?? ''), markdownHeadings(text));
        return missing.length === 0
          ? { ok: true, value: text }
          : { ok: false, problems: `the template's headings are missing: ${missing.join(', ')}` };
      }
    }
  };
}

function planInstruction(spec: AgentSpec): string {
  const cfg = spec.plan;
  return [
    '# Mode: plan',
    'Write a plan for the request: the steps you would take and what each produces. Do not carry it out.',
    `Format: ${cfg.format}.`,
    ...(cfg.format === 'yaml' && cfg.schema !== undefined
      ? [`The YAML must match this JSON Schema: ${JSON.stringify(cfg.schema)}`]
      : []),
    ...(cfg.template !== undefined ? [`Follow this template, keeping its headings:\n${cfg.template}`] : []),
  ].join('\n');
}

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
    checkPlan(run.spec, deps.parseYaml),
    'plan',
  );
  const task = run.task;
  const planId = deterministicId('plan', def.agent_id, task.requestId);
  const conversationId = task.conversationId ?? task.requestId;
  const text = typeof value === 'string' ? value : JSON.stringify(value, null, 2);
  const planOutput: OutputBreadcrumb = {
    id: planId,
    schema_name: AGENT_PLAN_SCHEMA,
    title: `${def.agent_id} plan: ${firstLine(text)}`,
    tags: [
      'agent:plan',
      `agent:${def.agent_id}`,
      requestTag(task.requestId),
      threadTag(threadOf(run.execution.trigger)),
      ...conversationTag(conversationId),
    ],
    context: {
      agent_id: def.agent_id,
      request_id: task.requestId,
      mode: 'plan',
      format: cfg.format,
      plan: value,
      conversation_id: conversationId,
      attempts,
      model,
      ...(final !== undefined ? { run_id: final.runId } : {}),
    },
  };
  return {
    kind: 'answer',
    answer: { status: 'success', output: value, text },
    details: { plan_id: planId, format: cfg.format, attempts },
    outputs: [planOutput],
  };
}

// ---------------------------------------------------------------------------------------------------------------
// build

function checkDeliverable(spec: AgentSpec): Check<unknown> {
  const cfg = spec.deliverable;
  return (text) => {
    switch (cfg.format) {
      case 'json': {
        const parsed = parseJson(text);
        if (!parsed.ok) return parsed;
        const problems = schemaProblems(cfg.schema, parsed.value, 'deliverable.schema');
        return problems === undefined ? parsed : { ok: false, problems };
      }
      case 'markdown':
      case 'html': {
        if (text.trim() === '') return { ok: false, problems: 'the deliverable is empty' };
        const found = cfg.format === 'html' ? htmlHeadings(text) : markdownHeadings(text);
        const missing = missingSections(cfg.sections ?? [], found);
        return missing.length === 0
          ? { ok: true, value: text }
          : { ok: false, problems: `sections missing (each a heading, in order): ${missing.join(', ')}` };
      }
    }
  };
}

function buildInstruction(spec: AgentSpec): string {
  const cfg = spec.deliverable;
  return [
    '# Mode: build',
    `Produce the deliverable "${cfg.type}" the request asks for, complete and ready to use.`,
    `Format: ${cfg.format}.`,
    ...(cfg.sections !== undefined && cfg.sections.length > 0
      ? [`Sections, each as a heading, in this order: ${cfg.sections.join(', ')}.`]
      : []),
  ].join('\n');
}

/** A non-model type's answer as deliverable content in the configured format. */
function contentOf(answer: Extract<AgentAnswer, { status: 'success' }>, spec: AgentSpec): unknown {
  const format = spec.deliverable.format;
  const value = answer.output !== undefined ? answer.output : (answer.text ?? null);
  if (format === 'json') {
    if (answer.output === undefined && typeof answer.text === 'string') {
      const parsed = parseJson(answer.text);
      return parsed.ok ? parsed.value : { text: answer.text };
    }
    return value;
  }
  const text = typeof value === 'string' ? value : JSON.stringify(value, null, 2);
  if (format === 'html') {
    const escaped = text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
    return typeof value === 'string'
      ? `<article>\n<p>${escaped}</p>\n</article>\n`
      : `<pre>${escaped}</pre>\n`;
  }
  return typeof value === 'string' ? value : `\`\`\`json\n${text}\n\`\`\`\n`;
}

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
      checkDeliverable(run.spec),
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
        ? schemaProblems(cfg.schema, content, 'deliverable.schema')
        : (() => {
            const r = checkDeliverable(run.spec)(text);
            return r.ok ? undefined : r.problems;
          })();
    if (problems !== undefined) {
      throw new NonRetriableError(
        `the ${run.spec.type} agent's output is not a valid deliverable: ${problems}`,
      );
    }
  }
  const task = run.task;
  const conversationId = task.conversationId ?? task.requestId;
  const deliverableId = deliverableIdFor(conversationId, cfg.type);
  const text = typeof content === 'string' ? content : JSON.stringify(content, null, 2);
  const deliverable: OutputBreadcrumb = {
    upsertId: deliverableId,
    schema_name: AGENT_DELIVERABLE_SCHEMA,
    title: `${cfg.type}: ${firstLine(text)}`,
    tags: [
      'agent:deliverable',
      `agent:${def.agent_id}`,
      `deliverable:${cfg.type}`,
      requestTag(task.requestId),
      threadTag(threadOf(run.execution.trigger)),
      ...conversationTag(conversationId),
    ],
    context: {
      agent_id: def.agent_id,
      request_id: task.requestId,
      mode: 'build',
      type: cfg.type,
      format: cfg.format,
      content,
      conversation_id: conversationId,
      ...(final !== undefined ? { run_id: final.runId } : {}),
    },
  };
  return {
    kind: 'answer',
    answer: { status: 'success', output: content, text },
    details: { deliverable_id: deliverableId, deliverable_type: cfg.type, format: cfg.format, ...details },
    outputs: [deliverable, ...extra],
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
    signal: run.signal,
  });
  return {
    kind: 'answer',
    answer: { status: 'success', text: response.text },
    details: { model: response.model },
  };
}

// ---------------------------------------------------------------------------------------------------------------

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
function conversationTag(conversationId: string): string[] {
  const tag = `conversation:${conversationId}`;
  return tag.length <= 128
    ? [tag]
    : [`conversation:${createHash('sha256').update(conversationId).digest('hex')}`];
}
