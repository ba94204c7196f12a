/**
 * The A2aClient port on the official A2A SDK (`@a2a-js/sdk`, protocol v1.0): the agent card is read from its URL,
 * the SDK picks the transport the card offers (JSON-RPC or HTTP+JSON). A partner that streams
 * (`capabilities.streaming`) gets `SendStreamingMessage`: the task id is known from the first event (and handed
 * to `onTask`), and the events are followed until the task ends or the caller's signal gives up, so a task that
 * outlives the call is never lost. Others get a blocking `SendMessage`.
 *
 * Every request goes through the guarded fetch the adapter is given, bound to the endpoint's configured origins,
 * with the endpoint's headers (credentials resolved from their references) added. Clients are cached per card URL
 * for five minutes, so a warm Lambda does not fetch the card before every message.
 *
 * Errors: a partner that cannot be reached, times out, or answers a status `isRetriableStatus` retries (408, 409,
 * 429, 5xx) is RetriableError (and counts as a failure for the circuit breaker); a JSON-RPC error from a partner
 * that is up (bad request, unknown task) is NonRetriableError. A task that ends failed is not an error here: the
 * reply says `failed`.
 */
import {
  type Client,
  ClientFactory,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
  RestTransportFactory,
} from '@a2a-js/sdk/client';
import { isRetriableStatus, NonRetriableError, RetriableError } from '#shared/domain/errors.ts';
import {
  A2A_FINAL_STATES,
  type A2aCard,
  type A2aClient,
  type A2aEndpoint,
  type A2aMessage,
  type A2aPart,
  type A2aReply,
  type A2aTaskState,
} from '#shared/ports/a2a.ts';
import { boundToOrigins } from '../network/guarded-fetch.ts';
import { NetworkGuardError } from '../network/network-guard.ts';

const CLIENT_TTL_MS = 5 * 60_000;
const ROLE_USER = 1;

/** `lf.a2a.v1.TaskState` numbers (the SDK's protobuf enum), named as the spec names the states. */
const STATES: Readonly<Record<number, A2aTaskState>> = {
  1: 'submitted',
  2: 'working',
  3: 'completed',
  4: 'failed',
  5: 'canceled',
  6: 'input-required',
  7: 'rejected',
  8: 'auth-required',
};

interface SdkPart {
  content?:
    | { $case: 'text'; value: string }
    | { $case: 'data'; value: unknown }
    | { $case: 'url'; value: string }
    | { $case: 'raw'; value: unknown };
  filename?: string;
  mediaType?: string;
}

export interface SdkA2aClientOptions {
  readonly fetch: typeof fetch;
  readonly now?: () => number;
}

export class SdkA2aClient implements A2aClient {
  private readonly clients = new Map<string, { client: Promise<Client>; until: number }>();
  private readonly now: () => number;

  constructor(private readonly options: SdkA2aClientOptions) {
    this.now = options.now ?? Date.now;
  }

  async card(endpoint: A2aEndpoint, signal: AbortSignal): Promise<A2aCard> {
    const client = await this.client(endpoint, signal);
    const card = await this.call(endpoint, 'the agent card', () => client.getAgentCard({ signal }));
    return {
      name: card.name,
      ...(card.description ? { description: card.description } : {}),
      ...(card.version ? { version: card.version } : {}),
      skills: card.skills.map((s) => ({
        id: s.id,
        name: s.name,
        ...(s.description ? { description: s.description } : {}),
      })),
    };
  }

  async send(
    endpoint: A2aEndpoint,
    message: A2aMessage,
    signal: AbortSignal,
    onTask?: (taskId: string) => Promise<void>,
  ): Promise<A2aReply> {
    const client = await this.client(endpoint, signal);
    const card = await this.call(endpoint, 'the agent card', () => client.getAgentCard({ signal }));
    const params = {
      tenant: '',
      message: {
        messageId: message.messageId,
        contextId: message.contextId ?? '',
        taskId: '',
        role: ROLE_USER,
        parts: message.parts.map(toSdkPart) as never,
        metadata: undefined,
        extensions: [],
        referenceTaskIds: [],
      },
      configuration: {
        acceptedOutputModes: [],
        taskPushNotificationConfig: undefined,
        returnImmediately: false,
      },
      metadata: undefined,
    };
    if (card.capabilities?.streaming === true) {
      return this.call(endpoint, 'message/stream', () => followStream(client, params, signal, onTask));
    }
    const result = await this.call(endpoint, 'message/send', () => client.sendMessage(params, { signal }));
    return toReply(result as unknown as Record<string, unknown>);
  }

  async getTask(endpoint: A2aEndpoint, taskId: string, signal: AbortSignal): Promise<A2aReply> {
    const client = await this.client(endpoint, signal);
    const task = await this.call(endpoint, `task ${taskId}`, () =>
      client.getTask({ tenant: '', id: taskId, historyLength: 0 }, { signal }),
    );
    return toReply(task as unknown as Record<string, unknown>);
  }

  private client(endpoint: A2aEndpoint, signal: AbortSignal): Promise<Client> {
    const origins = endpoint.origins ?? [new URL(endpoint.cardUrl).origin];
    const key = `${endpoint.cardUrl}\u0000${JSON.stringify(endpoint.headers ?? {})}\u0000${origins.join(' ')}`;
    const cached = this.clients.get(key);
    if (cached && cached.until > this.now()) return cached.client;
    // The configured origins only: a card whose interface URL, or a redirect, names another origin is refused.
    const bound = boundToOrigins(this.options.fetch, origins, "the A2A partner's configured origins");
    const fetchWithHeaders: typeof fetch = (input, init) => {
      const headers = new Headers(init?.headers);
      for (const [name, value] of Object.entries(endpoint.headers ?? {})) headers.set(name, value);
      return bound(input, { ...init, headers, signal: init?.signal ?? signal });
    };
    const factory = new ClientFactory({
      transports: [
        new JsonRpcTransportFactory({ fetchImpl: fetchWithHeaders }),
        new RestTransportFactory({ fetchImpl: fetchWithHeaders }),
      ],
      cardResolver: new DefaultAgentCardResolver({ fetchImpl: fetchWithHeaders }),
    });
    // An empty path: `cardUrl` is the card's own URL.
    const created = this.call(endpoint, 'the agent card', () => factory.createFromUrl(endpoint.cardUrl, ''));
    created.catch(() => this.clients.delete(key));
    this.clients.set(key, { client: created, until: this.now() + CLIENT_TTL_MS });
    return created;
  }

  private async call<T>(endpoint: A2aEndpoint, what: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (error) {
      throw classify(error, endpoint, what);
    }
  }
}

type Params = Parameters<Client['sendMessage']>[0];
type Rec = Record<string, unknown>;

/** Follows a streamed task: the Task, then status and artifact updates, until a final state or the stream's end. */
async function followStream(
  client: Client,
  params: Params,
  signal: AbortSignal,
  onTask?: (taskId: string) => Promise<void>,
): Promise<A2aReply> {
  let task: Rec | undefined;
  let told = false;
  for await (const event of client.sendMessageStream(params, { signal })) {
    const payload = (event as { payload?: { $case: string; value: Rec } }).payload;
    if (payload === undefined) continue;
    if (payload.$case === 'message') return toReply(payload.value);
    if (payload.$case === 'task') task = { ...payload.value };
    else if (payload.$case === 'statusUpdate')
      task = { ...task, id: payload.value.taskId, status: payload.value.status };
    else if (payload.$case === 'artifactUpdate') {
      const artifact = payload.value.artifact as Rec | undefined;
      const artifacts = [...((task?.artifacts as Rec[] | undefined) ?? [])];
      const at = artifacts.findIndex((a) => a.artifactId === artifact?.artifactId);
      if (artifact !== undefined && at >= 0 && payload.value.append === true) {
        const previous = artifacts[at] as Rec;
        artifacts[at] = {
          ...previous,
          parts: [...(previous.parts as unknown[]), ...(artifact.parts as unknown[])],
        };
      } else if (artifact !== undefined) {
        if (at >= 0) artifacts[at] = artifact;
        else artifacts.push(artifact);
      }
      task = { ...task, id: payload.value.taskId, artifacts };
    }
    const id = task?.id;
    if (!told && typeof id === 'string' && id !== '') {
      told = true;
      await onTask?.(id);
    }
    const reply = toReply(task ?? {});
    if (A2A_FINAL_STATES.has(reply.state)) return reply;
  }
  return toReply(task ?? {});
}

function toSdkPart(part: A2aPart): SdkPart & { metadata: undefined; filename: string; mediaType: string } {
  switch (part.kind) {
    case 'text':
      return {
        content: { $case: 'text', value: part.text },
        metadata: undefined,
        filename: '',
        mediaType: 'text/plain',
      };
    case 'data':
      return {
        content: { $case: 'data', value: part.data },
        metadata: undefined,
        filename: '',
        mediaType: 'application/json',
      };
    case 'file':
      return {
        content: { $case: 'url', value: part.url ?? '' },
        metadata: undefined,
        filename: part.filename ?? '',
        mediaType: part.mediaType ?? '',
      };
  }
}

function fromSdkPart(part: SdkPart): A2aPart {
  const c = part.content;
  if (c?.$case === 'text') return { kind: 'text', text: c.value };
  if (c?.$case === 'data') return { kind: 'data', data: c.value };
  return {
    kind: 'file',
    ...(c?.$case === 'url' ? { url: c.value } : {}),
    ...(part.mediaType ? { mediaType: part.mediaType } : {}),
    ...(part.filename ? { filename: part.filename } : {}),
  };
}

/** A Task (id, status, artifacts) or a direct Message (parts) → the port's reply. */
function toReply(result: Record<string, unknown>): A2aReply {
  if (Array.isArray(result.parts)) {
    return {
      state: 'completed',
      ...(typeof result.contextId === 'string' && result.contextId ? { contextId: result.contextId } : {}),
      parts: (result.parts as SdkPart[]).map(fromSdkPart),
      artifacts: [],
    };
  }
  const status = (result.status ?? {}) as { state?: number; message?: { parts?: SdkPart[] } };
  const artifacts = Array.isArray(result.artifacts)
    ? (result.artifacts as { name?: string; parts?: SdkPart[] }[])
    : [];
  return {
    ...(typeof result.id === 'string' ? { taskId: result.id } : {}),
    ...(typeof result.contextId === 'string' && result.contextId ? { contextId: result.contextId } : {}),
    state: STATES[status.state ?? 0] ?? 'unknown',
    parts: (status.message?.parts ?? []).map(fromSdkPart),
    artifacts: artifacts.map((a) => ({
      ...(a.name ? { name: a.name } : {}),
      parts: (a.parts ?? []).map(fromSdkPart),
    })),
  };
}

function classify(error: unknown, endpoint: A2aEndpoint, what: string): Error {
  if (error instanceof NonRetriableError || error instanceof RetriableError) return error;
  const where = `A2A partner ${new URL(endpoint.cardUrl).host}, ${what}`;
  if (error instanceof NetworkGuardError)
    return new NonRetriableError(`${where}: ${error.message}`, { cause: error });
  const message = error instanceof Error ? error.message : String(error);
  // The SDK reports HTTP failures as "HTTP error … status: 503" and JSON-RPC errors with their code.
  const status = /\bstatus:?\s*(\d{3})\b/i.exec(message)?.[1];
  if (status !== undefined) {
    const code = Number(status);
    return isRetriableStatus(code)
      ? new RetriableError(`${where}: HTTP ${code}`, { cause: error })
      : new NonRetriableError(`${where}: HTTP ${code}: ${message}`, { cause: error });
  }
  if (/json-?rpc|-32\d{3}|task not found|not supported|invalid/i.test(message)) {
    return new NonRetriableError(`${where}: ${message}`, { cause: error });
  }
  return new RetriableError(`${where}: ${message}`, { cause: error });
}
