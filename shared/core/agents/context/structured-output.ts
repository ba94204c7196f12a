/**
 * A context agent's structured output. With `response_schema` the model's JSON is validated (the project's one JSON
 * Schema validator, `#shared/domain/lang/json-schema.ts`) and kept in the answer's `output`; its `create_breadcrumbs`
 * are written in the agent's own workspace (the pipeline writes every output there) and its `tools_to_invoke`
 * (seed 002) become fire-and-forget tool requests — each only as the allow-list allows
 * (`#shared/core/executor/allow-list.ts`: requests only for what the agent was given; never definitions, system
 * records, run messages, answers or routing tags). A refused write is sent back to the model once with why; what its
 * next answer still asks and may not is left out. Either way the refusals are counted on the answer
 * (`refused_writes`, `refusals`) and logged.
 */

import { createHash } from 'node:crypto';
import { dataChecks } from '#shared/adapters/checks/checks.ts';
import { type Grants, grantsOf, type Refusal } from '#shared/core/executor/allow-list.ts';
import { type AgentSpec, agentSpec } from '#shared/domain/agent-spec.ts';
import type { AgentDefinition } from '#shared/domain/definitions.ts';
import {
  type FieldIssue,
  InvalidJsonSchemaError,
  NonRetriableError,
  ValidationError,
} from '#shared/domain/errors.ts';
import { formatIssues } from '#shared/domain/lang/json-schema.ts';
import { AGENT_NOTE_SCHEMA, requestTag, TOOL_REQUEST_SCHEMA, threadTag } from '#shared/domain/protocol.ts';
import type { YamlParser } from '#shared/domain/yaml.ts';
import type { BreadcrumbStore } from '#shared/ports/breadcrumb-store.ts';
import type { LlmResponse } from '#shared/ports/llm.ts';
import { type Log, silentLog } from '#shared/ports/log.ts';
import type { ExecutionInput, OutputBreadcrumb } from '../../executor/contract.ts';
import { asObject } from './fields.ts';
import { type AgentConversation, ownRequestContext } from './tool-rounds.ts';

const MAX_CREATED_BREADCRUMBS = 10;

/**
 * The structured answer: its output and the writes it may make; or, the first time some of it may not be written,
 * the conversation that tells the model why and asks again (nothing of this answer is written).
 */
export async function structuredAnswer(
  input: ExecutionInput<AgentDefinition>,
  deps: { readonly store: BreadcrumbStore; readonly parseYaml?: YamlParser; readonly log?: Log },
  conversation: AgentConversation,
  response: LlmResponse,
  schema: Record<string, unknown>,
): Promise<
  | { again: AgentConversation }
  | { conversation: AgentConversation; output: Record<string, unknown>; writes: OutputBreadcrumb[] }
> {
  const def = input.definition;
  const output = await structuredOutput(input.trigger.workspace, schema, response.text);
  const planned = await plannedWrites(def, conversation, output, grantsFor(input, deps));
  for (const r of planned.refused) {
    (deps.log ?? silentLog).warn('agent refused a write: it may not write this', {
      agentId: def.agent_id,
      at: r.at,
      schemaName: r.schema_name,
      reason: r.reason,
      thread: conversation.thread,
    });
  }
  const refusedWrites = [...(conversation.refused_writes ?? []), ...planned.refused];
  if (planned.refused.length > 0 && conversation.writes_sent_back !== true) {
    // Tell the model once what was not written and why, and take its answer again (nothing of this one is
    // written): a structured answer has no tool-call ids to answer with failed results, so the refusals go back
    // as the next user message. Once per turn, so a model that insists costs one extra call, not a loop.
    const again: AgentConversation = {
      ...conversation,
      messages: [
        ...conversation.messages,
        { role: 'assistant', content: response.text },
        { role: 'user', content: refusalFeedback(planned.refused) },
      ],
      refused_writes: refusedWrites,
      writes_sent_back: true,
    };
    return { again };
  }
  return {
    conversation: { ...conversation, refused_writes: refusedWrites },
    output,
    writes: planned.outputs,
  };
}

/** The agent's grants, with the orchestration config of its spec (definition or `yaml`). */
function grantsFor(
  input: ExecutionInput<AgentDefinition>,
  deps: { readonly store: BreadcrumbStore; readonly parseYaml?: YamlParser },
): Grants {
  let orchestration: AgentSpec['orchestration'] | undefined;
  try {
    orchestration = agentSpec(
      input.definition,
      deps.parseYaml ? { parseYaml: deps.parseYaml } : {},
    ).orchestration;
  } catch (error) {
    // A spec that does not resolve names no agents or workflows: the agent is given none.
    if (!(error instanceof ValidationError)) throw error;
  }
  return grantsOf(input.definition, orchestration, input.trigger.workspace, deps.store);
}

function refusalFeedback(refused: readonly Refusal[]): string {
  return [
    'Nothing of your last answer was written, because these parts of it are not allowed:',
    ...refused.map((r) => `- ${r.at} (${r.schema_name}): ${r.reason}`),
    'Answer again, with only what you may write and request.',
  ].join('\n');
}

async function structuredOutput(
  workspace: string,
  schema: Record<string, unknown>,
  text: string,
): Promise<Record<string, unknown>> {
  let value: unknown;
  try {
    // The LLM port hands back the bare JSON (adapters take it out of fences and chatter), so parse it as is.
    value = JSON.parse(text);
  } catch {
    throw new NonRetriableError(
      `the model's answer is not the JSON its response_schema asks for: ${text.slice(0, 200)}`,
    );
  }
  let issues: FieldIssue[];
  try {
    // Keyed by the schema itself: agents sharing one response_schema share its compiled form. Checked in the
    // workspace's share of the data checks, off the event loop past a slice.
    issues = await dataChecks().validate(workspace, {
      cacheKey: `response_schema:${JSON.stringify(schema)}`,
      schema,
      what: 'response_schema',
      value,
    });
  } catch (error) {
    if (!(error instanceof InvalidJsonSchemaError)) throw error;
    throw new NonRetriableError(`response_schema is not a usable JSON Schema: ${error.problem}`, {
      cause: error,
    });
  }
  if (issues.length > 0) {
    throw new NonRetriableError(`the model's answer does not match response_schema: ${formatIssues(issues)}`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new NonRetriableError('response_schema must describe a JSON object');
  }
  return value as Record<string, unknown>;
}

/**
 * What a structured answer asks to write (`create_breadcrumbs`, seed 002's `tools_to_invoke`), each checked by
 * the allow-list (`#shared/core/executor/allow-list.ts`): what the agent may not write is refused, never written.
 */
async function plannedWrites(
  def: AgentDefinition,
  conversation: AgentConversation,
  output: Record<string, unknown>,
  grants: Grants,
): Promise<{ outputs: OutputBreadcrumb[]; refused: Refusal[] }> {
  const outputs: OutputBreadcrumb[] = [];
  const refused: Refusal[] = [];
  const created = Array.isArray(output.create_breadcrumbs) ? output.create_breadcrumbs : [];
  if (created.length > MAX_CREATED_BREADCRUMBS) {
    throw new NonRetriableError(
      `create_breadcrumbs lists ${created.length}; at most ${MAX_CREATED_BREADCRUMBS} per answer`,
    );
  }
  for (const [i, raw] of created.entries()) {
    const b = asObject(raw);
    const schema = typeof b.schema_name === 'string' ? b.schema_name : AGENT_NOTE_SCHEMA;
    const tags = Array.isArray(b.tags) ? b.tags.filter((t): t is string => typeof t === 'string') : [];
    const context = asObject(b.context);
    const reason = await grants.refusal({ schema_name: schema, tags, context });
    if (reason !== undefined) {
      refused.push({ at: `create_breadcrumbs[${i}]`, schema_name: schema, reason });
      continue;
    }
    outputs.push({
      schema_name: schema,
      title: typeof b.title === 'string' ? b.title : `${def.agent_id} note`,
      tags: [...tags, `agent:${def.agent_id}`],
      // A tool request is the agent's own: its answer comes back to this agent, whoever the context named.
      context: schema === TOOL_REQUEST_SCHEMA ? ownRequestContext(def.agent_id, context) : context,
    });
  }
  const invoked = Array.isArray(output.tools_to_invoke) ? output.tools_to_invoke : [];
  for (const [i, raw] of invoked.slice(0, MAX_CREATED_BREADCRUMBS).entries()) {
    const t = asObject(raw);
    const reason = await grants.refusal({ schema_name: TOOL_REQUEST_SCHEMA, context: { tool: t.tool } });
    if (reason !== undefined || typeof t.tool !== 'string') {
      refused.push({
        at: `tools_to_invoke[${i}]`,
        schema_name: TOOL_REQUEST_SCHEMA,
        reason: reason ?? 'no tool named',
      });
      continue;
    }
    const requestId = `req-${sha(`${conversation.trigger_id}\u0000invoke\u0000${i}`).slice(0, 24)}`;
    outputs.push({
      schema_name: TOOL_REQUEST_SCHEMA,
      title: `${def.agent_id} asks ${t.tool}`,
      tags: ['tool:request', requestTag(requestId), threadTag(conversation.thread)],
      context: {
        tool: t.tool,
        input: asObject(t.input),
        requestId,
        requestedBy: def.agent_id,
        thread: conversation.thread,
        ...(typeof t.reason === 'string' ? { reason: t.reason } : {}),
      },
    });
  }
  return { outputs, refused };
}

function sha(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}
