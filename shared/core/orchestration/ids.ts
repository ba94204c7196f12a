/**
 * Deterministic ids for everything a run writes, so writing it again is a replay (create-if-absent), never a
 * second request, timer or result:
 *
 *   run            `run-<request breadcrumb id>`
 *   attempt        `<run id>.<segment>.<attempt>[.<segment>.<attempt>…]`: the request breadcrumb's id and
 *                  `request_id`; a segment is a step id or a map item's index, one pair per enclosing step, so a
 *                  rerun of an enclosing map or parallel (another attempt of it) gives its children new ids
 *   timer          `<attempt id>.wait | .timeout | .retry`
 *   result         `<run id>.result.<n>` (the n-th time the run ended; a retried run ends again)
 *   control        `<child run id>.cancel`
 *
 * Breadcrumb ids are at most 128 characters; a longer id keeps an 80-character prefix (readable in listings) and
 * ends with a hash of the whole id.
 */
import { createHash } from 'node:crypto';

const MAX_ID_LENGTH = 128;
const KEEP = 80;

export function boundedId(id: string): string {
  if (id.length <= MAX_ID_LENGTH) return id;
  const hash = createHash('sha256').update(id).digest('hex').slice(0, 40);
  return `${id.slice(0, KEEP)}_${hash}`;
}

export function runIdFor(requestBreadcrumbId: string): string {
  return boundedId(`run-${requestBreadcrumbId}`);
}

/** One enclosing level of a step instance: its segment (step id, or item index) and its attempt. */
export type AttemptChain = ReadonlyArray<readonly [segment: string, attempt: number]>;

export function attemptIdFor(runId: string, chain: AttemptChain): string {
  return boundedId([runId, ...chain.flatMap(([segment, attempt]) => [segment, String(attempt)])].join('.'));
}

export const TIMER_PURPOSES = ['wait', 'timeout', 'retry'] as const;
export type TimerPurpose = (typeof TIMER_PURPOSES)[number];

export function timerIdFor(attemptId: string, purpose: TimerPurpose): string {
  return boundedId(`${attemptId}.${purpose}`);
}

export function resultIdFor(runId: string, completion: number): string {
  return boundedId(`${runId}.result.${completion}`);
}

export function cancelIdFor(childRunId: string): string {
  return boundedId(`${childRunId}.cancel`);
}

/** The answer to an invalid human response (its input failed the step's schema). */
export function responseErrorIdFor(responseId: string): string {
  return boundedId(`${responseId}.error`);
}
