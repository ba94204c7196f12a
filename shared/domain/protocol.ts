/**
 * The wire protocol crumbs' executors and people speak through breadcrumbs, in one place: the schema names of
 * requests, answers and run messages, the correlation tags crumbs routes by, and what nothing acting for a model may
 * write. `CONVENTIONS.md` beside this file describes the shapes and rules; this module is their code.
 */
import { SCHEMA_NAME_PATTERN } from './breadcrumb.ts';
import { isDefinitionSchema } from './definitions.ts';

export const TOOL_DEF_SCHEMA = 'tool.def.v1';

/** The request schemas an agent may write, and the context field naming what each asks. */
export const REQUESTS = {
  'tool.request.v1': { kind: 'tool', field: 'tool' },
  'agent.request.v1': { kind: 'agent', field: 'agent' },
  'workflow.request.v1': { kind: 'workflow', field: 'workflow' },
} as const;
export type RequestSchema = keyof typeof REQUESTS;
export type RequestKind = (typeof REQUESTS)[RequestSchema]['kind'];

/** Records crumbs and people write to move work on (see the header). */
export const PROTOCOL_SCHEMAS: ReadonlySet<string> = new Set([
  'workflow.run.v1',
  'workflow.control.v1',
  'workflow.timer.v1',
  'workflow.result.v1',
  'workflow.error.v1',
  'human.request.v1',
  'human.response.v1',
  'human.error.v1',
  'tool.response.v1',
  'agent.response.v1',
  'agent.error.v1',
  'agent.conversation.v1',
  'agent.context.v1',
  'user.message.v1',
]);

/** Correlation tags crumbs writes itself: a run (`run:`, `step:`, `reply-to:`) or a caller (`request:`) reads them. */
export const ROUTING_TAG_PREFIXES = ['run:', 'step:', 'reply-to:', 'request:'] as const;

/**
 * A definition or anything written like one (`*.def.vN`): the four executor kinds' definitions, and also
 * `schedule.def.v1`, which the rule manager turns into a recurring schedule that writes on its own.
 */
export function isDefinitionLike(schema: string): boolean {
  return isDefinitionSchema(schema) || /\.def\.v[0-9]+$/.test(schema);
}

/**
 * Why nothing crumbs runs on a model's behalf may write this, whatever it was given (see the header: definitions,
 * system records, run messages, answers, people's messages, routing tags), or undefined. Requests are checked
 * against grants by `Grants.refusal`.
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
