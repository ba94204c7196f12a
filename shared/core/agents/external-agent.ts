/**
 * The `external` agent type (seed 004, flow 5): hands the request to another agent over A2A v1.0.
 *
 *   1. The message: the request's `message` as a text part, its `input` as a data part; `messageId` is the request
 *      id, so a resend after a crash is the same message to the partner.
 *   2. Through the partner's circuit breaker (`circuit-breaker.ts`, key `a2a:<host>`): a partner that is down fails
 *      fast, and after the cool-down one trial call goes first (after the health check, when `healthCheck` is set).
 *   3. `message/send` (streamed when the partner streams), bounded by `timeout_ms`. A task that ends within the
 *      bound is the answer: completed → success with the artifacts as `output` (a single data part is the value
 *      itself; text parts become `text`); failed, rejected, canceled → an error answer with the partner's status
 *      message; input-required, auth-required → an error answer saying what the partner waits for.
 *   4. A task still running when the call returns is not waited for: its id, kept as soon as the partner names it,
 *      is in an `agent.external_task.v1` (one per agent and request), and RetriableError has the queue deliver the
 *      request again, when the task is read by id instead of sent again. No Lambda sleeps; the queue's receive
 *      limit bounds how long a task is followed, after which the request is answered with an error.
 */
import { createHash } from 'node:crypto';
import { NonRetriableError, NotFoundError, RetriableError } from '#shared/domain/errors.ts';
import { EXTERNAL_TASK_SCHEMA, requestTag } from '#shared/domain/protocol.ts';
import type { A2aClient, A2aEndpoint, A2aPart, A2aReply } from '#shared/ports/a2a.ts';
import type { BreadcrumbStore } from '#shared/ports/breadcrumb-store.ts';
import type { SecretSource } from '#shared/ports/secrets.ts';
import { resolveHeaders } from '#shared/tools/credentials.ts';
import type { CircuitBreaker } from './circuit-breaker.ts';
import { type AgentAnswer, type AgentRun, type AgentType, answer, type SpecOf } from './contract.ts';

/** When to look at a running task again (seconds). */
const RECHECK_AFTER_SECONDS = 5;

export interface ExternalAgentDeps {
  readonly a2a: A2aClient;
  readonly breaker: CircuitBreaker;
  readonly secrets: SecretSource;
  readonly store: BreadcrumbStore;
  /** A guarded fetch (network policy) for the health check, bound to the partner's configured origins. */
  readonly fetch: typeof fetch;
}

export function createExternalAgent(deps: ExternalAgentDeps): AgentType<'external'> {
  return { type: 'external', run: (run) => runExternal(run, deps) };
}

/** The breadcrumb that remembers a running partner task for one request. */
export function externalTaskId(agentId: string, requestId: string): string {
  return `a2atask-${createHash('sha256').update(`${agentId}\u0000${requestId}`).digest('hex').slice(0, 32)}`;
}

async function runExternal(run: AgentRun<SpecOf<'external'>>, deps: ExternalAgentDeps) {
  const ext = run.spec.external;
  const base = new URL(ext.endpoint);
  const cardUrl = ext.agent_card_url ?? new URL('/.well-known/agent-card.json', base).href;
  const origins = [...new Set([base.origin, new URL(cardUrl).origin])];
  const endpoint: A2aEndpoint = {
    cardUrl,
    headers: await resolveHeaders(
      'transport.external',
      run.workspace,
      ext.headers,
      ext.authentication,
      deps.secrets,
    ),
    origins,
  };
  const stateId = externalTaskId(run.definition.agent_id, run.task.requestId);
  const pending = await pendingTask(run, deps, stateId);
  const timeout = AbortSignal.timeout(ext.timeout_ms);
  const signal = AbortSignal.any([run.signal, timeout]);
  const reply = await deps.breaker
    .run(
      run.workspace,
      `a2a:${base.host}`,
      {
        failureThreshold: ext.circuit_breaker.failure_threshold,
        cooldownMs: ext.circuit_breaker.cooldown_ms,
      },
      {
        call: () =>
          pending !== undefined
            ? deps.a2a.getTask(endpoint, pending, signal)
            : deps.a2a.send(
                endpoint,
                { messageId: run.task.requestId, parts: partsOf(run) },
                signal,
                (taskId) => remember(run, deps, stateId, taskId),
              ),
        ...(ext.healthCheck !== undefined
          ? {
              probe: () =>
                healthCheck(
                  new URL(ext.healthCheck?.endpoint ?? '/health', base),
                  ext.healthCheck?.timeout_ms ?? 2000,
                  origins,
                  deps.fetch,
                ),
            }
          : {}),
        isFailure: (error) => error instanceof RetriableError,
      },
    )
    .catch((error: unknown) => {
      if (timeout.aborted && !run.signal.aborted && !(error instanceof NonRetriableError)) {
        throw new RetriableError(
          `the partner ${base.host} did not finish within ${ext.timeout_ms} ms (transport.external.timeout_ms); asking again later`,
          { cause: error, retryAfterSeconds: RECHECK_AFTER_SECONDS },
        );
      }
      throw error;
    });

  if (reply.state === 'submitted' || reply.state === 'working' || reply.state === 'unknown') {
    if (reply.taskId !== undefined && reply.taskId !== pending)
      await remember(run, deps, stateId, reply.taskId);
    throw new RetriableError(
      `the partner's task ${reply.taskId ?? '(no id)'} is ${reply.state}; it is read again later`,
      { retryAfterSeconds: RECHECK_AFTER_SECONDS },
    );
  }
  return answer(toAnswer(reply, base.host));
}

function partsOf(run: AgentRun<SpecOf<'external'>>): A2aPart[] {
  const parts: A2aPart[] = [];
  if (run.task.message !== undefined) parts.push({ kind: 'text', text: run.task.message });
  if (run.task.input !== undefined) parts.push({ kind: 'data', data: run.task.input });
  if (parts.length === 0) parts.push({ kind: 'text', text: '' });
  return parts;
}

/** The artifacts (or a direct message) as the answer (see the header). */
export function toAnswer(reply: A2aReply, host: string): AgentAnswer {
  const statusText = textOf(reply.parts);
  const meta = { ...(reply.taskId !== undefined ? { task_id: reply.taskId } : {}), state: reply.state };
  switch (reply.state) {
    case 'completed': {
      const parts = reply.artifacts.length > 0 ? reply.artifacts.flatMap((a) => a.parts) : reply.parts;
      const data = parts.filter((p) => p.kind === 'data').map((p) => (p as { data: unknown }).data);
      const text = textOf(parts) || statusText;
      const output =
        data.length === 1
          ? data[0]
          : data.length > 1
            ? data
            : reply.artifacts.length > 0
              ? { artifacts: reply.artifacts }
              : (text ?? null);
      return { status: 'success', output, ...(text ? { text } : {}) };
    }
    case 'input-required':
    case 'auth-required':
      return {
        status: 'error',
        error: `the partner ${host} needs ${reply.state === 'auth-required' ? 'authentication' : 'more input'}: ${statusText || '(no message)'}`,
        output: meta,
      };
    default:
      return {
        status: 'error',
        error: `the partner ${host} ${reply.state} the task: ${statusText || '(no message)'}`,
        output: meta,
      };
  }
}

function textOf(parts: readonly A2aPart[]): string {
  return parts
    .filter((p) => p.kind === 'text')
    .map((p) => (p as { text: string }).text)
    .join('\n');
}

/** The health endpoint, on the partner's configured origins only; a redirect is an unhealthy answer. */
async function healthCheck(
  url: URL,
  timeoutMs: number,
  origins: readonly string[],
  fetchIt: typeof fetch,
): Promise<void> {
  if (!origins.includes(url.origin)) {
    throw new NonRetriableError(
      `transport.external.healthCheck.endpoint ${url.href} is not on the partner's configured origins (${origins.join(', ')})`,
    );
  }
  let status: number;
  try {
    const response = await fetchIt(url, {
      method: 'GET',
      redirect: 'manual',
      signal: AbortSignal.timeout(timeoutMs),
    });
    status = response.status;
    await response.body?.cancel();
  } catch (error) {
    if (error instanceof NonRetriableError) throw error;
    throw new RetriableError(`health check ${url.href} failed: ${(error as Error).message}`, {
      cause: error,
    });
  }
  if (status < 200 || status >= 300) throw new RetriableError(`health check ${url.href} answered ${status}`);
}

async function pendingTask(run: AgentRun, deps: ExternalAgentDeps, id: string): Promise<string | undefined> {
  try {
    const stored = await deps.store.get(run.workspace, id);
    const taskId = (stored.context as { task_id?: unknown }).task_id;
    return typeof taskId === 'string' ? taskId : undefined;
  } catch (error) {
    if (error instanceof NotFoundError) return undefined;
    throw error;
  }
}

/** Keeps the partner's task id for this request (a repeat of the same create is a replay: nothing changes). */
async function remember(run: AgentRun, deps: ExternalAgentDeps, id: string, taskId: string): Promise<void> {
  await deps.store.create(
    run.workspace,
    {
      schema_name: EXTERNAL_TASK_SCHEMA,
      title: `${run.definition.agent_id}: partner task ${taskId}`,
      tags: [`agent:${run.definition.agent_id}`, requestTag(run.task.requestId)],
      context: { agent_id: run.definition.agent_id, request_id: run.task.requestId, task_id: taskId },
    },
    { principal: run.principal, id, causation: run.execution.causation },
  );
}
