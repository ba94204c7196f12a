/**
 * The wire protocol crumbs' executors, runs and people speak through breadcrumbs, in one place: every schema name
 * of a request, an answer, a run message or a record crumbs writes; the tags crumbs routes by and the ones an answer
 * copies from its request; a request's id; what a run reads of a breadcrumb; and what nothing acting for a model
 * may write. `CONVENTIONS.md` beside this file describes the shapes and rules; this module is their code, so a
 * name or a rule is spelled here once and imported wherever it is written or read.
 *
 * It imports only the topology and the breadcrumb's basics, so every floor above (the DLQ handler included) can
 * load it without what executing needs.
 */
import { DEFINITION_SCHEMAS, type DefinitionSchema } from '../topology.ts';
import { SCHEMA_NAME_PATTERN } from './breadcrumb.ts';

export { RULES_SYNC_SCHEMA, SCHEDULE_DEFINITION_SCHEMA } from '../topology.ts';

// ---------------------------------------------------------------------------------------------------------------
// Schema names (CONVENTIONS.md "Schema names")

/** Requests: each is answered once (CONVENTIONS.md "Requests and answers"). */
export const TOOL_REQUEST_SCHEMA = 'tool.request.v1';
export const AGENT_REQUEST_SCHEMA = 'agent.request.v1';
export const WORKFLOW_REQUEST_SCHEMA = 'workflow.request.v1';
export const HUMAN_REQUEST_SCHEMA = 'human.request.v1';

/** Answers to requests, and error answers. */
export const TOOL_RESPONSE_SCHEMA = 'tool.response.v1';
export const AGENT_RESPONSE_SCHEMA = 'agent.response.v1';
export const AGENT_ERROR_SCHEMA = 'agent.error.v1';
export const WORKFLOW_RESULT_SCHEMA = 'workflow.result.v1';
export const WORKFLOW_ERROR_SCHEMA = 'workflow.error.v1';
export const HUMAN_RESPONSE_SCHEMA = 'human.response.v1';
/** The answer to a human response a run could not take (its input failed the step's schema). */
export const HUMAN_ERROR_SCHEMA = 'human.error.v1';
export const CONTEXT_ERROR_SCHEMA = 'context.error.v1';

/** A run (id = run id) and what moves one on besides answers. */
export const RUN_SCHEMA = 'workflow.run.v1';
export const CONTROL_SCHEMA = 'workflow.control.v1';
export const TIMER_SCHEMA = 'workflow.timer.v1';

/** People's messages, built contexts and the records agents keep. */
export const USER_MESSAGE_SCHEMA = 'user.message.v1';
export const AGENT_CONTEXT_SCHEMA = 'agent.context.v1';
export const AGENT_CONVERSATION_SCHEMA = 'agent.conversation.v1';
export const AGENT_PLAN_SCHEMA = 'agent.plan.v1';
export const AGENT_DELIVERABLE_SCHEMA = 'agent.deliverable.v1';
export const EXTERNAL_TASK_SCHEMA = 'agent.external_task.v1';
/** What a `create_breadcrumbs` entry that names no schema is written as. */
export const AGENT_NOTE_SCHEMA = 'agent.note.v1';
/** A trigger schema (`selector.ts`) nothing in crumbs writes: other systems may. */
export const SYSTEM_MESSAGE_SCHEMA = 'system.message.v1';

/** System records. */
export const LOOP_STOPPED_SCHEMA = 'system.loop_stopped.v1';
export const STATUS_SCHEMA = 'definition.status.v1';
export const SYNC_RESULT_SCHEMA = 'system.rules_sync_result.v1';
export const PLACEMENT_SCHEMA = 'system.bus_placement.v1';
export const SCHEMA_DEF = 'schema.def.v1';

/** Definitions (which kind runs each: `DEFINITION_SCHEMAS` in the topology, which these are checked against). */
export const AGENT_DEF_SCHEMA = 'agent.def.v1' satisfies DefinitionSchema;
/** The older RCRT agent shape (seed 002); loads unchanged, runs as an agent. */
export const LEGACY_AGENT_DEF_SCHEMA = 'agent.definition.v1' satisfies DefinitionSchema;
export const TOOL_DEF_SCHEMA = 'tool.def.v1' satisfies DefinitionSchema;
export const WORKFLOW_DEF_SCHEMA = 'workflow.def.v1' satisfies DefinitionSchema;
export const CONTEXT_CONFIG_SCHEMA = 'context.config.v1' satisfies DefinitionSchema;

/** What an `agent.request.v1` (or a workflow's agent step) asks of the agent: its `mode`. */
export const AGENT_MODES = ['converse', 'plan', 'build'] as const;

/** The request schemas an agent may write, and the context field naming what each asks. */
export const REQUESTS = {
  [TOOL_REQUEST_SCHEMA]: { kind: 'tool', field: 'tool' },
  [AGENT_REQUEST_SCHEMA]: { kind: 'agent', field: 'agent' },
  [WORKFLOW_REQUEST_SCHEMA]: { kind: 'workflow', field: 'workflow' },
} as const;
export type RequestSchema = keyof typeof REQUESTS;
export type RequestKind = (typeof REQUESTS)[RequestSchema]['kind'];

/** A guardrail policy (`shared/rooms/guardrails/`): written and deleted by people only, through the API or CLI. */
export const GUARDRAIL_DEF_SCHEMA = 'guardrail.def.v1';
/** An intervention of a guardrail policy, written by the executor whose content it checked. */
export const GUARDRAIL_EVENT_SCHEMA = 'guardrail.event.v1';

/**
 * Records only a person writes or deletes, through the API (as themselves): an agent, a tool, another principal
 * or a plain put (which names nobody in particular) is refused, and the refusal recorded.
 */
export const PEOPLE_ONLY_SCHEMAS: ReadonlySet<string> = new Set([GUARDRAIL_DEF_SCHEMA]);

/** Records crumbs and people write to move work on: runs and their messages, answers, people's messages. */
export const PROTOCOL_SCHEMAS: ReadonlySet<string> = new Set([
  GUARDRAIL_EVENT_SCHEMA,
  RUN_SCHEMA,
  CONTROL_SCHEMA,
  TIMER_SCHEMA,
  WORKFLOW_RESULT_SCHEMA,
  WORKFLOW_ERROR_SCHEMA,
  HUMAN_REQUEST_SCHEMA,
  HUMAN_RESPONSE_SCHEMA,
  HUMAN_ERROR_SCHEMA,
  TOOL_RESPONSE_SCHEMA,
  AGENT_RESPONSE_SCHEMA,
  AGENT_ERROR_SCHEMA,
  AGENT_CONVERSATION_SCHEMA,
  AGENT_CONTEXT_SCHEMA,
  USER_MESSAGE_SCHEMA,
]);

// ---------------------------------------------------------------------------------------------------------------
// Tags (CONVENTIONS.md "Correlation tags")

export const RUN_TAG_PREFIX = 'run:';
export const STEP_TAG_PREFIX = 'step:';
/** Names who a request's answer goes to: `reply-to:<principal>` (a run's driver). */
export const REPLY_TO_TAG_PREFIX = 'reply-to:';
export const REQUEST_TAG_PREFIX = 'request:';
export const THREAD_TAG_PREFIX = 'thread:';

/**
 * Constant tags that say what a breadcrumb is, each belonging to one schema (`tool:response` on a
 * `tool.response.v1`). On a breadcrumb of that schema, listing by the tag is that schema's listing filtered by the
 * tag, so the tag needs no listing entry of its own (shared/adapters/dynamodb/table-design.md "Tags").
 */
export const SCHEMA_TAGS: Readonly<Record<string, string>> = {
  'tool:request': TOOL_REQUEST_SCHEMA,
  'tool:response': TOOL_RESPONSE_SCHEMA,
  'agent:response': AGENT_RESPONSE_SCHEMA,
  'agent:error': AGENT_ERROR_SCHEMA,
  'agent:conversation': AGENT_CONVERSATION_SCHEMA,
  'workflow:error': WORKFLOW_ERROR_SCHEMA,
  'context:error': CONTEXT_ERROR_SCHEMA,
  'system:loop_stopped': LOOP_STOPPED_SCHEMA,
  'user:message': USER_MESSAGE_SCHEMA,
};

/**
 * Schemas whose breadcrumbs are listed by when they were created, not by their last write: a run is rewritten at
 * every step, and is shown where it started (the Runs view, `GET …/runs`), not moved to the top by each step. Their
 * index entries do not move when they are rewritten, so a step does not pay for deleting and re-adding them
 * (shared/adapters/dynamodb/table-design.md "Indexes").
 */
export const LISTED_BY_START: ReadonlySet<string> = new Set([RUN_SCHEMA]);

/** The tags an answer copies from its request, so the run that asked finds it. */
export const CORRELATION_TAG_PREFIXES = [RUN_TAG_PREFIX, STEP_TAG_PREFIX, REPLY_TO_TAG_PREFIX] as const;

/** Tags crumbs writes itself: a run (`run:`, `step:`, `reply-to:`) or a caller (`request:`) reads them. */
export const ROUTING_TAG_PREFIXES = [...CORRELATION_TAG_PREFIXES, REQUEST_TAG_PREFIX] as const;

/** Whether `tag` is one crumbs routes runs and answers by (`run:`, `step:`, `reply-to:`, `request:`). */
export function isRoutingTag(tag: string): boolean {
  return ROUTING_TAG_PREFIXES.some((p) => tag.startsWith(p) && tag.length > p.length);
}

/**
 * The request's `run:*`, `step:*` and `reply-to:*` tags, copied onto every answer to it (and onto its error
 * answer), so the run that asked finds the answer. Only answers get them, never requests made on the way.
 */
export function correlationTags(tags: readonly string[]): string[] {
  return tags.filter((t) => CORRELATION_TAG_PREFIXES.some((p) => t.startsWith(p)));
}

/** The value of the first tag with this prefix (`run:<id>` → `<id>`). */
export function tagValue(tags: readonly string[], prefix: string): string | undefined {
  const tag = tags.find((t) => t.startsWith(prefix));
  return tag?.slice(prefix.length);
}

/** The tag an answer to request `requestId` carries, and a caller waits on. */
export function requestTag(requestId: string): string {
  return `${REQUEST_TAG_PREFIX}${requestId}`;
}

/** The tag of everything belonging to run `runId`: its requests, timers, and what is addressed to it. */
export function runTag(runId: string): string {
  return `${RUN_TAG_PREFIX}${runId}`;
}

export function stepTag(stepKey: string): string {
  return `${STEP_TAG_PREFIX}${stepKey}`;
}

export function threadTag(thread: string): string {
  return `${THREAD_TAG_PREFIX}${thread}`;
}

/** What is addressed to the runs `principal` drives (`workflow:<id>`, `agent:<id>`): its rule matches this tag. */
export function replyToTag(principal: string): string {
  return `${REPLY_TO_TAG_PREFIX}${principal}`;
}

// ---------------------------------------------------------------------------------------------------------------
// Request ids (CONVENTIONS.md "Requests and answers")

function contextOf(crumb: { readonly context: unknown }): Record<string, unknown> {
  const c = crumb.context;
  return c !== null && typeof c === 'object' && !Array.isArray(c) ? (c as Record<string, unknown>) : {};
}

const nonEmpty = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

/** An agent or workflow request's id: its `request_id`, else the request breadcrumb's id. */
export function requestIdOf(request: { readonly id: string; readonly context: unknown }): string {
  return nonEmpty(contextOf(request).request_id) ?? request.id;
}

/** A tool request's id: its `requestId` (the seeds' spelling), else its `request_id`, else the breadcrumb's id. */
export function toolRequestIdOf(request: { readonly id: string; readonly context: unknown }): string {
  const c = contextOf(request);
  return nonEmpty(c.requestId) ?? nonEmpty(c.request_id) ?? request.id;
}

// ---------------------------------------------------------------------------------------------------------------
// What a run reads of a breadcrumb

/** A breadcrumb as the readers of run messages see it (`shared/core/orchestration/messages.ts`). */
export interface IncomingBreadcrumb {
  readonly id: string;
  readonly schema_name: string;
  readonly tags: readonly string[];
  readonly context: unknown;
  readonly created_by: string;
  readonly version?: number;
  /** Its `causation.caused_by`: what a human response or a control relays (`authority.ts`). */
  readonly caused_by?: string | undefined;
}

/** A stored breadcrumb (or a pipeline trigger) as a run message is read from. */
export function incoming(trigger: {
  readonly id: string;
  readonly schema_name: string;
  readonly tags: readonly string[];
  readonly context: unknown;
  readonly created_by: string;
  readonly causation?: { readonly caused_by: string } | undefined;
}): IncomingBreadcrumb {
  return {
    id: trigger.id,
    schema_name: trigger.schema_name,
    tags: trigger.tags,
    context: trigger.context,
    created_by: trigger.created_by,
    caused_by: trigger.causation?.caused_by,
  };
}

// ---------------------------------------------------------------------------------------------------------------
// What nothing acting for a model writes (CONVENTIONS.md "Principals")

/**
 * A definition or anything written like one (`*.def.vN`): the four executor kinds' definitions, and also
 * `schedule.def.v1`, which the rule manager turns into a recurring schedule that writes on its own.
 */
export function isDefinitionLike(schema: string): boolean {
  return Object.hasOwn(DEFINITION_SCHEMAS, schema) || /\.def\.v[0-9]+$/.test(schema);
}

/**
 * Why nothing crumbs runs on a model's behalf may write this, whatever it was given (definitions, system records,
 * run messages, answers, people's messages, routing tags), or undefined. Requests are checked against grants by
 * `Grants.refusal` (`shared/core/executor/allow-list.ts`).
 */
export function protocolRefusal(schema: string, tags: readonly string[]): string | undefined {
  if (!SCHEMA_NAME_PATTERN.test(schema)) return `"${shown(schema)}" is not a schema name (domain.noun.vN)`;
  if (isDefinitionLike(schema) || /^(system|schema)\./.test(schema)) {
    return `${schema}: an agent does not write definitions or system records`;
  }
  if (PROTOCOL_SCHEMAS.has(schema)) {
    return `${schema}: runs, answers, human responses and people's messages are written by crumbs and people, not by an agent`;
  }
  const routing = tags.find((t) => ROUTING_TAG_PREFIXES.some((p) => t.startsWith(p)));
  if (routing !== undefined) {
    return `the tag "${shown(routing)}" is one crumbs routes runs and answers by; an agent does not write it`;
  }
  return undefined;
}

/** What a refusal quotes of a model's text: enough to recognise it, never the whole of a long one. */
export function shown(text: string): string {
  return text.length > 100 ? `${text.slice(0, 100)}…` : text;
}

/** A breadcrumb an executor asks the pipeline to write. The pipeline adds causation and created_by. */
export interface OutputBreadcrumb {
  schema_name: string;
  title?: string;
  tags?: string[];
  context: Record<string, unknown>;
  /** Create under this id, once (a repeat is a replay). Default: derived from the trigger and the output index. */
  id?: string;
  /** Create or replace this breadcrumb (context builder, conversations): written again only when it differs. */
  upsertId?: string;
  /**
   * Nothing in it refers to the outputs next to it that say the same (a run's step requests): such neighbours are
   * written together instead of one after the other.
   */
  independent?: true;
}
