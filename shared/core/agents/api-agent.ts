/**
 * The `api` agent type (seed 004, flow 4): one HTTP call to `transport.api.endpoint`, shaped by transforms.
 *
 *   1. request_transform (JSONata, or a mapping of JSONata leaves) over `{ input, message, request }` gives the
 *      JSON body (for GET and DELETE: the query parameters). Without one, the body is the request's `input`, or
 *      `{ message }` when it has none.
 *   2. The call: method, headers, authentication (bearer / header / basic from `secret_ref`), a timeout, at most
 *      `max_response_bytes` read, every hop checked by the network guard against `allowed_hosts` (default: the
 *      endpoint's own host) and the stack's private-network policy.
 *   3. A status in `retry_on_status` (429 and 5xx by default) throws RetriableError carrying the response's
 *      Retry-After: the queue delivers the request again later; the Lambda does not sleep. Other non-2xx answers
 *      are an error answer naming the status, with the body in `output`.
 *   4. response_transform over the parsed body (`$status` and `$headers` bound) gives `output`.
 *
 * The request carries an `Idempotency-Key` derived from the agent, the trigger and its version
 * (`shared/domain/idempotency-key.ts`): a retry, a redelivery or a takeover sends the same key.
 */

import { readCappedBody } from '#shared/adapters/network/capped-body.ts';
import type { Transform } from '#shared/domain/agent-types.ts';
import { NonRetriableError, RetriableError } from '#shared/domain/errors.ts';
import { withIdempotencyKey } from '#shared/domain/idempotency-key.ts';
import type { DataChecks } from '#shared/ports/checks.ts';
import type { SecretSource } from '#shared/ports/secrets.ts';
import { resolveHeaders } from '#shared/tools/credentials.ts';
import { effectKey } from '../executor/outputs.ts';
import { type AgentRun, type AgentType, answer, type SpecOf } from './contract.ts';

export interface ApiAgentDeps {
  /**
   * A guarded fetch limited to these hosts, with the definition's body cap (never above the operator's ceiling),
   * and the stack's network policy.
   */
  readonly fetchFor: (allowedHosts: readonly string[], maxResponseBytes: number) => typeof fetch;
  readonly secrets: SecretSource;
  /** Where the transforms (JSONata) run: the workspace's data checks, off the event loop past a slice. */
  readonly checks: Pick<DataChecks, 'evaluate'>;
}

const BODYLESS = new Set(['GET', 'DELETE']);

export function createApiAgent(deps: ApiAgentDeps): AgentType<'api'> {
  return { type: 'api', run: (run) => runApi(run, deps) };
}

async function runApi(run: AgentRun<SpecOf<'api'>>, deps: ApiAgentDeps) {
  const { api } = run.spec;
  const task = run.task;
  const scope = {
    input: task.input ?? null,
    message: task.message ?? null,
    request: { request_id: task.requestId, agent: run.definition.agent_id, mode: task.mode ?? null },
  };
  const payload =
    run.spec.requestTransform !== undefined
      ? await applyTransform(run.spec.requestTransform, scope, {}, run.workspace, deps)
      : (task.input ?? (task.message !== undefined ? { message: task.message } : {}));

  const url = new URL(api.endpoint);
  const headers = await resolveHeaders(
    'transport.api',
    run.workspace,
    api.headers,
    api.authentication,
    deps.secrets,
  );
  let body: string | undefined;
  if (BODYLESS.has(api.method)) {
    for (const [key, value] of Object.entries(asObject(payload))) {
      url.searchParams.set(key, typeof value === 'string' ? value : JSON.stringify(value));
    }
  } else {
    body = JSON.stringify(payload ?? null);
    if (!Object.keys(headers).some((h) => h.toLowerCase() === 'content-type'))
      headers['content-type'] = 'application/json';
  }
  headers.accept ??= 'application/json';
  // The same key on every attempt of this request (a redelivery, a takeover): the partner applies it once.
  const execution = run.execution;
  const sent = withIdempotencyKey(
    headers,
    api.method,
    effectKey(execution.definitionRef.id, execution.trigger.id, execution.trigger.version, 0),
  );

  const timeout = AbortSignal.timeout(api.timeout_ms);
  const signal = AbortSignal.any([run.signal, timeout]);
  const doFetch = deps.fetchFor(api.allowed_hosts ?? [url.hostname], api.max_response_bytes);
  let response: Response;
  try {
    response = await doFetch(url, {
      method: api.method,
      headers: sent,
      ...(body !== undefined ? { body } : {}),
      signal,
    });
  } catch (error) {
    if (timeout.aborted && !run.signal.aborted) {
      throw new RetriableError(
        `${url.host} did not answer within ${api.timeout_ms} ms (transport.api.timeout_ms)`,
      );
    }
    if (error instanceof NonRetriableError) throw error;
    throw new RetriableError(`${url.host} could not be reached: ${(error as Error).message}`, {
      cause: error,
    });
  }

  if (api.retry_on_status.includes(response.status)) {
    await response.body?.cancel();
    throw new RetriableError(`${url.host} answered ${response.status}`, {
      retryAfterSeconds: retryAfterSeconds(response.headers.get('retry-after')),
    });
  }
  const parsed = parseBody(
    await readCappedBody(response, api.max_response_bytes, 'transport.api.max_response_bytes'),
    response.headers.get('content-type'),
  );
  if (response.status < 200 || response.status >= 300) {
    return answer({
      status: 'error',
      error: `${url.host} answered ${response.status}: ${snippet(parsed)}`,
      output: { status: response.status, body: parsed },
    });
  }
  const output =
    run.spec.responseTransform !== undefined
      ? await applyTransform(
          run.spec.responseTransform,
          parsed,
          {
            status: response.status,
            headers: Object.fromEntries(response.headers.entries()),
          },
          run.workspace,
          deps,
        )
      : parsed;
  return answer({ status: 'success', output, ...(typeof output === 'string' ? { text: output } : {}) });
}

/** A JSONata string, or a mapping whose string leaves are JSONata (an empty mapping passes `data` through). */
export async function applyTransform(
  transform: Transform,
  data: unknown,
  bindings: Record<string, unknown>,
  workspace: string,
  deps: Pick<ApiAgentDeps, 'checks'>,
): Promise<unknown> {
  const evaluate = (expression: string) => deps.checks.evaluate(workspace, { expression, data, bindings });
  if (typeof transform === 'string') return evaluate(transform);
  const entries = Object.entries(transform);
  if (entries.length === 0) return data;
  const out: Record<string, unknown> = {};
  for (const [key, value] of entries) {
    if (typeof value === 'string') out[key] = await evaluate(value);
    else if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
      out[key] = await applyTransform(value as Record<string, unknown>, data, bindings, workspace, deps);
    } else out[key] = value;
  }
  return out;
}

/** Seconds from a Retry-After header: a number of seconds or an HTTP date; capped at 15 minutes. */
export function retryAfterSeconds(header: string | null, now = Date.now()): number | undefined {
  if (header === null || header.trim() === '') return undefined;
  const seconds = /^\d+$/.test(header.trim()) ? Number(header.trim()) : (Date.parse(header) - now) / 1000;
  return Number.isFinite(seconds) ? Math.min(900, Math.max(0, Math.ceil(seconds))) : undefined;
}

function parseBody(bytes: Uint8Array, contentType: string | null): unknown {
  const text = Buffer.from(bytes).toString('utf8');
  if (text === '') return null;
  if (contentType === null || /[/+]json\b/i.test(contentType)) {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      return text;
    }
  }
  return text;
}

function snippet(value: unknown): string {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return text.length > 300 ? `${text.slice(0, 300)}…` : text;
}

function asObject(value: unknown): Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {};
}
