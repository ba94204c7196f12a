/**
 * One crumbs agent as an A2A v1.0 agent, for one caller: the SDK's `A2ARequestHandler` on the crumbs API, called in
 * process as the caller (as the MCP server does, `shared/core/mcp/server.ts`), so it reaches what the caller's
 * token reaches and nothing else.
 *
 * A task is the `agent.request.v1` an API user would write (its id is the task's id, `created_by` the caller); its
 * state and artifacts are read from the table (`task.ts`): working, input-required while it waits on a person (an
 * approval, a run's human step), completed / failed / canceled from the answer. The message's text parts are the
 * request's `message`, a data part its `input` (less `mode` and `orchestrate`, the request's options); the
 * `contextId` is the conversation. A message on an input-required task is the person's answer (`human-answer.ts`).
 *
 * `SendMessage` waits for the answer at most `FRONT_DOOR.jsonWaitSeconds` (its JSON answer says nothing until then,
 * and API Gateway closes a stream idle for 5 minutes) unless the client asks to return at once; it answers with the
 * task as it is then. `SendStreamingMessage` / `SubscribeToTask` send the task's states as they change
 * (`stream.ts`), each as it happens, until the task's final state — or until `FRONT_DOOR.streamCapSeconds` have
 * passed, when the stream ends without one and the client calls `SubscribeToTask` to follow on.
 * `CancelTask` cancels an orchestrated request's run (`cancelRequest`). Push notifications are not offered.
 */

import { randomUUID } from 'node:crypto';
import type {
  AgentCard,
  CancelTaskRequest,
  GetTaskRequest,
  ListTasksRequest,
  ListTasksResponse,
  Message,
  Part,
  SendMessageRequest,
  StreamResponse,
  SubscribeToTaskRequest,
  Task,
  TaskPushNotificationConfig,
} from '@a2a-js/sdk';
import {
  PushNotificationNotSupportedError,
  RequestMalformedError,
  TaskNotCancelableError,
  TaskNotFoundError,
  UnsupportedOperationError,
} from '@a2a-js/sdk/errors';
import type { A2ARequestHandler } from '@a2a-js/sdk/server';
import type { Caller, HttpRequest, HttpResult } from '#shared/core/api/http.ts';
import {
  isOk,
  problemText,
  stopRequest,
  type WorkspaceApi,
  workspaceApi,
} from '#shared/core/api/in-process.ts';
import { AGENT_MODES, AGENT_REQUEST_SCHEMA } from '#shared/domain/protocol.ts';
import { ATTACHMENT_KEY } from '#shared/rooms/attachments/reference.ts';
import { FRONT_DOOR } from '#shared/topology.ts';
import { type LiveDeltas, liveDeltas, type SubscribeDeltas } from './deltas.ts';
import { humanAnswerOf, sendHumanAnswer } from './human-answer.ts';
import { type DeltaSource, statusKey, taskStates, withDeltas } from './stream.ts';
import { isTerminal, type Record_, readTask, runIdOf, STATE, taskOf } from './task.ts';

/** How long `SendMessage` (a JSON answer) waits for the task to settle. */
export const ANSWER_WITHIN_MS = FRONT_DOOR.jsonWaitSeconds * 1000;
/** How long a stream lasts without reaching the task's final state. */
export const STREAM_WITHIN_MS = FRONT_DOOR.streamCapSeconds * 1000;
/** Time kept out of the function's remaining time to end a wait or a stream and answer. */
const MARGIN_MS = 2_500;
const STATE_NAMES: Record<number, string> = {
  [STATE.working]: 'working',
  [STATE.completed]: 'completed',
  [STATE.failed]: 'failed',
  [STATE.canceled]: 'canceled',
  [STATE.inputRequired]: 'input-required',
};

export interface A2aDeps {
  /** The crumbs API, called in process with the caller's identity. */
  readonly api: (request: HttpRequest) => Promise<HttpResult>;
  readonly answerWithinMs?: number;
  readonly pollMs?: { first: number; max: number };
  /**
   * How long a stream (`SendStreamingMessage`, `SubscribeToTask`) may last, less the function's remaining time and
   * a margin: `STREAM_WITHIN_MS` by default.
   */
  readonly streamWithinMs?: number;
  /** How often a stream reads the task's state again (500 ms by default). */
  readonly streamPollMs?: number;
  /** Model output of a task as it is produced, merged into its stream (`stream.ts`); none by default. */
  readonly deltas?: DeltaSource;
}

export interface A2aCall {
  readonly workspace: string;
  readonly agent: string;
  readonly caller: Caller;
  readonly card: AgentCard;
  readonly remainingMs?: () => number;
  /** Subscribes to a stream's model output with the caller's token, where the stack has a delta channel. */
  readonly subscribeDeltas?: SubscribeDeltas;
  /** Aborted when the client of a stream goes away: the stream stops reading. */
  readonly signal?: AbortSignal;
}

export class CrumbsA2aHandler implements A2ARequestHandler {
  private readonly api: WorkspaceApi;

  constructor(
    private readonly deps: A2aDeps,
    private readonly call: A2aCall,
  ) {
    this.api = workspaceApi(deps.api, call);
  }

  async getAgentCard(): Promise<AgentCard> {
    return this.call.card;
  }

  async getAuthenticatedExtendedAgentCard(): Promise<AgentCard> {
    return this.call.card;
  }

  async sendMessage(params: SendMessageRequest): Promise<Message | Task> {
    const { request, sent, answered } = await this.start(params);
    if (params.configuration?.returnImmediately) return taskOf(await readTask(this.api, request), sent);
    // After a person's answer the task still reads as waiting on it until the run or the agent applies it: that
    // question is not what the caller waits for (a new one is).
    return this.settled(
      request,
      sent,
      (state, task) => state !== STATE.working && (answered === undefined || statusKey(task) !== answered),
    );
  }

  async *sendMessageStream(params: SendMessageRequest): AsyncGenerator<StreamResponse, void, undefined> {
    // A new request streams its model output: subscribed before the request is written, so nothing is missed.
    const live =
      this.call.subscribeDeltas !== undefined && !params.message?.taskId
        ? await liveDeltas(this.call.subscribeDeltas, randomUUID()).catch(() => undefined)
        : undefined;
    try {
      const { request, sent } = await this.start(params, live?.streamId);
      yield* this.stream(request, taskOf(await readTask(this.api, request), sent), live);
    } finally {
      live?.close();
    }
  }

  async *resubscribe(params: SubscribeToTaskRequest): AsyncGenerator<StreamResponse, void, undefined> {
    const request = await this.ownRequest(params.id);
    const task = taskOf(await readTask(this.api, request));
    if (isTerminal(task.status?.state)) {
      throw new UnsupportedOperationError(
        `task ${request.id} has ended (${STATE_NAMES[task.status?.state ?? 0]}); read it with GetTask`,
      );
    }
    yield* this.stream(request, task);
  }

  async getTask(params: GetTaskRequest): Promise<Task> {
    const request = await this.ownRequest(params.id);
    return taskOf(await readTask(this.api, request));
  }

  async cancelTask(params: CancelTaskRequest): Promise<Task> {
    const request = await this.ownRequest(params.id);
    const task = taskOf(await readTask(this.api, request));
    const state = task.status?.state;
    if (isTerminal(state)) {
      throw new TaskNotCancelableError(
        `task ${request.id} cannot be cancelled: it has ended (${STATE_NAMES[state ?? 0]})`,
      );
    }
    if ((await this.cancelRequest(request)) === undefined) {
      throw new TaskNotCancelableError(
        `task ${request.id} cannot be cancelled: only an orchestrated request (orchestrate: true) or a streaming one (SendStreamingMessage) can be stopped`,
      );
    }
    // The run's executor applies the cancel; answer with the task once it has (or as it is when the wait is spent).
    return this.settled(request, undefined, isTerminal);
  }

  /**
   * Stops the work of a request, or says it cannot be stopped (undefined): an orchestrated request's run is
   * cancelled through the runs API (its refusal — the run ended, or has not started — is the client's error); a
   * streaming request (`stream_id`, as `SendStreamingMessage` writes) through the requests API, which the model
   * call looks for between its deltas. A plain request that does not stream has nothing watching for a cancel.
   */
  protected async cancelRequest(request: Record_): Promise<{ cancelled: true } | undefined> {
    const stopped = await stopRequest(this.api, request, 'CancelTask', runIdOf(request));
    if ('unstoppable' in stopped) return undefined;
    if ('refused' in stopped) {
      throw new TaskNotCancelableError(`task ${request.id}: ${problemText(stopped.refused)}`);
    }
    return { cancelled: true };
  }

  async listTasks(params: ListTasksRequest): Promise<ListTasksResponse> {
    const size = Math.min(Math.max(params.pageSize ?? 20, 1), 50);
    const page = await this.api('GET', 'breadcrumbs', {
      query: {
        schema_name: AGENT_REQUEST_SCHEMA,
        tag: `agent:${this.call.agent}`,
        view: 'full',
        limit: String(size),
        ...(params.pageToken ? { cursor: params.pageToken } : {}),
      },
    });
    if (!isOk(page)) throw new RequestMalformedError(problemText(page));
    const body = page.body as { items: Record_[]; next_cursor: string | null };
    const mine = body.items.filter(
      (r) =>
        r.created_by === this.call.caller.principal &&
        (!params.contextId || r.context.conversation_id === params.contextId),
    );
    const tasks = await Promise.all(mine.map(async (r) => taskOf(await readTask(this.api, r))));
    return { tasks, nextPageToken: body.next_cursor ?? '', pageSize: size, totalSize: tasks.length };
  }

  async createTaskPushNotificationConfig(): Promise<TaskPushNotificationConfig> {
    throw new PushNotificationNotSupportedError('push notifications are not offered');
  }

  async getTaskPushNotificationConfig(): Promise<TaskPushNotificationConfig> {
    throw new PushNotificationNotSupportedError('push notifications are not offered');
  }

  async listTaskPushNotificationConfigs(): Promise<never> {
    throw new PushNotificationNotSupportedError('push notifications are not offered');
  }

  async deleteTaskPushNotificationConfig(): Promise<void> {
    throw new PushNotificationNotSupportedError('push notifications are not offered');
  }

  /**
   * A new message writes the request; a message on an input-required task (`taskId`) is the person's answer to
   * what it waits on; on any other task it is refused.
   */
  private async start(
    params: SendMessageRequest,
    streamId?: string,
  ): Promise<{ request: Record_; sent?: Message; answered?: string }> {
    const message = params.message;
    if (message === undefined) throw new RequestMalformedError('message is required');
    if (message.taskId) {
      const request = await this.ownRequest(message.taskId);
      const view = await readTask(this.api, request);
      const state = taskOf(view).status?.state;
      if (state !== STATE.inputRequired) {
        throw new UnsupportedOperationError(
          isTerminal(state)
            ? `task ${request.id} has ended (${STATE_NAMES[state ?? 0]}) and takes no further messages; send a new one`
            : `task ${request.id} is working and waits for no input; a message on a task answers it only while it is input-required`,
        );
      }
      await sendHumanAnswer(this.api, view.waiting, humanAnswerOf(message.parts));
      return { request, answered: statusKey(taskOf(view)) };
    }
    const { text, data } = contentOf(message.parts);
    const files = await this.storeFiles(message.parts);
    if (text === '' && data === undefined && files.length === 0) {
      throw new RequestMalformedError('the message has no text, data or file part');
    }
    const { input, options } = requestOptionsOf(data, message.metadata);
    const written = await this.api('POST', 'breadcrumbs', {
      body: {
        schema_name: AGENT_REQUEST_SCHEMA,
        title: `A2A message to ${this.call.agent}`,
        tags: ['agent:request', `agent:${this.call.agent}`],
        context: {
          agent: this.call.agent,
          ...(text !== '' ? { message: text } : {}),
          ...(input !== undefined ? { input } : {}),
          ...(files.length > 0 ? { attachments: files.map((ref) => ({ [ATTACHMENT_KEY]: ref })) } : {}),
          ...options,
          ...(message.contextId ? { conversation_id: message.contextId } : {}),
          ...(streamId !== undefined ? { stream_id: streamId } : {}),
        },
      },
    });
    if (!isOk(written)) throw new RequestMalformedError(problemText(written));
    return { request: written.body as Record_, sent: message };
  }

  /**
   * The message's file parts stored as attachments of the workspace (through the API as the caller: the same
   * checks of bytes, type and size as an upload), in order. A part by `url` is refused: crumbs fetches no address a
   * caller names (send the bytes).
   */
  private async storeFiles(parts: readonly Part[]): Promise<unknown[]> {
    const refs: unknown[] = [];
    for (const [i, part] of parts.entries()) {
      const content = part.content;
      if (content?.$case === 'url') {
        throw new RequestMalformedError(
          `parts[${i}]: a file part by url is not fetched; send its bytes (raw) with its mediaType`,
        );
      }
      if (content?.$case !== 'raw') continue;
      const stored = await this.api('POST', 'attachments', {
        body: {
          media_type: part.mediaType,
          ...(part.filename ? { name: part.filename } : {}),
          data_base64: Buffer.from(content.value).toString('base64'),
        },
      });
      if (!isOk(stored)) throw new RequestMalformedError(`parts[${i}]: ${problemText(stored)}`);
      refs.push(stored.body);
    }
    return refs;
  }

  /** Time left for a wait or a stream: `within`, less the function's remaining time and a margin. */
  private deadline(withinMs: number): number {
    const remaining = this.call.remainingMs?.() ?? Number.POSITIVE_INFINITY;
    return Date.now() + Math.max(0, Math.min(withinMs, remaining - MARGIN_MS));
  }

  /** The task once `done(state)` holds, read again after pauses that grow; as it is when the wait is spent. */
  private async settled(
    request: Record_,
    sent: Message | undefined,
    done: (state: number | undefined, task: Task) => boolean,
  ): Promise<Task> {
    const deadline = this.deadline(this.deps.answerWithinMs ?? ANSWER_WITHIN_MS);
    const poll = this.deps.pollMs ?? { first: 50, max: 1000 };
    let pause = poll.first;
    for (;;) {
      const task = taskOf(await readTask(this.api, request), sent);
      if (done(task.status?.state, task) || Date.now() + pause > deadline) return task;
      await new Promise((r) => setTimeout(r, pause));
      pause = Math.min(poll.max, Math.ceil(pause * 1.5));
    }
  }

  private stream(
    request: Record_,
    first: Task,
    live?: LiveDeltas,
  ): AsyncGenerator<StreamResponse, void, undefined> {
    const states = taskStates(first, async () => taskOf(await readTask(this.api, request)), {
      pollMs: this.deps.streamPollMs ?? 500,
      deadline: this.deadline(this.deps.streamWithinMs ?? STREAM_WITHIN_MS),
      signal: this.call.signal,
    });
    return withDeltas(first, states, live !== undefined ? () => live.chunks : this.deps.deltas);
  }

  /** A request this caller sent this agent (a task of theirs); not found otherwise, whatever it is. */
  private async ownRequest(id: string): Promise<Record_> {
    const read = await this.api('GET', `breadcrumbs/${encodeURIComponent(id)}/full`);
    const r = read.body as Record_;
    if (
      !isOk(read) ||
      r.schema_name !== AGENT_REQUEST_SCHEMA ||
      r.context.agent !== this.call.agent ||
      r.created_by !== this.call.caller.principal
    ) {
      throw new TaskNotFoundError(`no task ${id.slice(0, 128)}`);
    }
    return r;
  }
}
/**
 * The request's options in a message: `mode` (converse, plan, build) and `orchestrate` (true) in its data part or
 * its metadata; the data part's other fields are the request's `input` (a data part that is not an object is the
 * input whole).
 */
function requestOptionsOf(
  data: unknown,
  metadata: Record<string, unknown> | undefined,
): { input: unknown; options: { mode?: string; orchestrate?: boolean } } {
  const options: { mode?: string; orchestrate?: boolean } = {};
  let input = data;
  const take = (from: Record<string, unknown>, where: string) => {
    if (from.mode !== undefined) {
      if (!(AGENT_MODES as readonly unknown[]).includes(from.mode)) {
        throw new RequestMalformedError(`${where}.mode: expected one of ${AGENT_MODES.join(', ')}`);
      }
      options.mode = from.mode as string;
    }
    if (from.orchestrate !== undefined) {
      if (typeof from.orchestrate !== 'boolean') {
        throw new RequestMalformedError(`${where}.orchestrate: expected true or false`);
      }
      options.orchestrate = from.orchestrate;
    }
  };
  if (data !== null && typeof data === 'object' && !Array.isArray(data)) {
    const { mode, orchestrate, ...rest } = data as Record<string, unknown>;
    take({ mode, orchestrate }, 'data');
    input = Object.keys(rest).length > 0 ? rest : undefined;
  }
  if (metadata !== undefined && metadata !== null && typeof metadata === 'object') take(metadata, 'metadata');
  return { input, options };
}

/** The text parts joined, and the data part (the last one, when several). */
function contentOf(parts: readonly Part[]): { text: string; data: unknown } {
  const texts: string[] = [];
  let data: unknown;
  for (const part of parts) {
    if (part.content?.$case === 'text') texts.push(part.content.value);
    else if (part.content?.$case === 'data') data = part.content.value;
  }
  return { text: texts.join('\n'), data };
}
