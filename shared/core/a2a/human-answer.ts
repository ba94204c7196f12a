/**
 * A follow-up message on an input-required task is a person's answer to what the task waits on (`task.ts`
 * `Waiting`). What the message may say, and nothing else:
 *   - a data part `{ "decision": "approve"|"reject", "reason"?, "arguments"?, "input"?, "approval_id"?, "step"? }`
 *     (`arguments`: an approval's edited tool arguments; `input`: a run step's input; `approval_id` / `step` say
 *     which, when several wait), or
 *   - the text "approve" (optionally "approve: <comment>") or "reject" / "reject: <reason>".
 * The answer goes through the API as the caller — `POST …/approvals/{id}` or `POST …/runs/{id}/approve|reject` —
 * so its rules hold unchanged: only people answer (a caller that is not `user:` is refused), edited arguments and
 * inputs fit their schemas, an approval is decided once. The API's refusals come back as A2A errors saying why.
 */
import type { Part } from '@a2a-js/sdk';
import { RequestMalformedError, TaskNotFoundError, UnsupportedOperationError } from '@a2a-js/sdk/errors';
import { isOk, problemText, type WorkspaceApi } from '#shared/core/api/in-process.ts';
import { HOW_TO_ANSWER, type Waiting } from './task.ts';

export interface HumanAnswer {
  decision: 'approve' | 'reject';
  reason?: string;
  arguments?: Record<string, unknown>;
  input?: unknown;
  approval_id?: string;
  step?: string;
}

const KEYS = new Set(['decision', 'reason', 'arguments', 'input', 'approval_id', 'step']);
const TEXT = /^\s*(approve|reject)\s*(?::\s*([\s\S]*))?$/i;
const MAX_REASON = 4000;

function refuse(what: string): never {
  throw new RequestMalformedError(`${what}. ${HOW_TO_ANSWER}`);
}

/** The person's answer in a message's parts, or an InvalidParams error naming what was expected. */
export function humanAnswerOf(parts: readonly Part[]): HumanAnswer {
  const data = parts.filter((p) => p.content?.$case === 'data');
  const texts = parts.flatMap((p) => (p.content?.$case === 'text' ? [p.content.value] : []));
  if (data.length > 1) refuse('the answer has more than one data part');
  if (data.length === 1) {
    const value = data[0]?.content?.$case === 'data' ? data[0].content.value : undefined;
    if (value === null || typeof value !== 'object' || Array.isArray(value))
      refuse('the data part is not an object');
    const v = value as Record<string, unknown>;
    const unknownKeys = Object.keys(v).filter((k) => !KEYS.has(k));
    if (unknownKeys.length > 0)
      refuse(`the data part has unknown fields: ${unknownKeys.slice(0, 5).join(', ')}`);
    if (v.decision !== 'approve' && v.decision !== 'reject')
      refuse('decision: expected "approve" or "reject"');
    if (v.reason !== undefined && (typeof v.reason !== 'string' || v.reason.length > MAX_REASON)) {
      refuse(`reason: expected a string of at most ${MAX_REASON} characters`);
    }
    if (
      v.arguments !== undefined &&
      (v.arguments === null || typeof v.arguments !== 'object' || Array.isArray(v.arguments))
    ) {
      refuse('arguments: expected an object of tool arguments');
    }
    for (const k of ['approval_id', 'step'] as const) {
      if (v[k] !== undefined && typeof v[k] !== 'string') refuse(`${k}: expected a string`);
    }
    return v as unknown as HumanAnswer;
  }
  const m = TEXT.exec(texts.join('\n'));
  if (!m) refuse('the answer is neither "approve" nor "reject"');
  const reason = m[2]?.trim();
  if (reason !== undefined && reason.length > MAX_REASON) refuse(`reason: at most ${MAX_REASON} characters`);
  return {
    decision: m[1]?.toLowerCase() === 'approve' ? 'approve' : 'reject',
    ...(reason ? { reason } : {}),
  };
}

/** Which waiting item the answer is for: the one it names, or the only one. */
function chosen(waiting: readonly Waiting[], answer: HumanAnswer): Waiting {
  if (answer.approval_id !== undefined || answer.step !== undefined) {
    const named = waiting.find((w) =>
      w.kind === 'approval' ? w.approval_id === answer.approval_id : w.step === answer.step,
    );
    if (named === undefined)
      refuse(`nothing waits as ${answer.approval_id ?? answer.step}; waiting: ${names(waiting)}`);
    return named;
  }
  if (waiting.length > 1) refuse(`several wait (${names(waiting)}); name one with approval_id or step`);
  return waiting[0] as Waiting;
}

function names(waiting: readonly Waiting[]): string {
  return waiting
    .map((w) => (w.kind === 'approval' ? `approval_id ${w.approval_id}` : `step ${w.step}`))
    .join(', ');
}

/** Sends the answer through the approvals or runs API as the caller. */
export async function sendHumanAnswer(
  api: WorkspaceApi,
  waiting: readonly Waiting[],
  answer: HumanAnswer,
): Promise<void> {
  const item = chosen(waiting, answer);
  let sent: Awaited<ReturnType<WorkspaceApi>>;
  if (item.kind === 'approval') {
    if (answer.input !== undefined) refuse('an approval takes edited "arguments", not "input"');
    sent = await api('POST', `approvals/${encodeURIComponent(item.approval_id)}`, {
      body: {
        decision: answer.decision,
        ...(answer.arguments !== undefined ? { arguments: answer.arguments } : {}),
        ...(answer.reason !== undefined ? { reason: answer.reason } : {}),
      },
    });
  } else {
    if (answer.arguments !== undefined) refuse('a run step takes "input", not "arguments"');
    sent = await api('POST', `runs/${encodeURIComponent(item.run_id)}/${answer.decision}`, {
      body: {
        step: item.step,
        ...(answer.input !== undefined ? { input: answer.input } : {}),
        ...(answer.reason !== undefined ? { comment: answer.reason } : {}),
      },
    });
  }
  if (isOk(sent)) return;
  const why = problemText(sent);
  if (sent.status === 404) throw new TaskNotFoundError(why);
  // Who may answer (only people) and when (still pending) are not the message's shape: not InvalidParams.
  if (sent.status === 403 || sent.status === 409) throw new UnsupportedOperationError(why);
  throw new RequestMalformedError(why);
}
