/**
 * What a breadcrumb says about how things went, for traces and dashboards: an error answer (`*.error.v1`, or a
 * response or run whose `status` is `error` / `failed`), a loop the hop limit stopped, or nothing special. One
 * rule, used by the thread view, the change stream and `crumbs trace`.
 */
import { LOOP_STOPPED_SCHEMA } from './protocol.ts';

export type Outcome = 'error' | 'loop_stopped' | 'ok';

const ERROR_STATUSES = new Set(['error', 'failed']);

export function outcomeOf(entry: { schema_name: string; status?: string | undefined }): Outcome {
  if (entry.schema_name === LOOP_STOPPED_SCHEMA) return 'loop_stopped';
  if (/\.error\.v\d+$/.test(entry.schema_name)) return 'error';
  if (entry.status !== undefined && ERROR_STATUSES.has(entry.status)) return 'error';
  return 'ok';
}

/** The writer principal's definition, when an executor wrote it: `agent:chat` → { kind: agent, name: chat }. */
export function definitionOf(principal: string): { kind: string; name: string } | null {
  const m = /^(agent|tool|workflow|context-builder):(.+)$/.exec(principal);
  return m ? { kind: m[1]!, name: m[2]! } : null;
}

/** A short text of an error answer's context (its `error`, `reason` or `message`), for one line of a trace. */
export function errorText(context: Record<string, unknown>): string | undefined {
  for (const key of ['error', 'reason', 'message']) {
    const value = context[key];
    if (typeof value === 'string' && value !== '')
      return value.length > 300 ? `${value.slice(0, 299)}…` : value;
    if (value !== null && typeof value === 'object') {
      const text = JSON.stringify(value);
      return text.length > 300 ? `${text.slice(0, 299)}…` : text;
    }
  }
  return undefined;
}
