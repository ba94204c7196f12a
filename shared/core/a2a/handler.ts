/**
 * One crumbs agent as an A2A v1.0 agent, for one caller: the SDK's `A2ARequestHandler` on the crumbs API, called in
 * process as the caller (as the MCP server does, `shared/core/mcp/server.ts`), so it reaches what the caller's
 * token reaches and nothing else.
 *
 * A task is the `agent.request.v1` an API user would write (its id is the task's id, `created_by` the caller); its
 * state comes from the answer: none yet → working, `agent.response.v1` → completed (the answer as an artifact and
 * the status message), an error answer → failed. The message's text parts are the request's `message`, a data part
 * its `input`; the `contextId` is the conversation (`conversation_id`), so follow-ups share one.
 *
 * `SendMessage` waits for the answer at most 25 s (API Gateway ends a request at 30 s) unless the client asks to
 * return at once; a task still working is answered as such, and `GetTask` reads it later. Tasks cannot be
 * cancelled (an agent request has no cancel); push notifications are not offered; streaming comes with the
 * delta channel (the card says `streaming: false` until then).
 */
import type {
  AgentCard,
  Artifact,
  CancelTaskRequest,
  GetTaskRequest,
  ListTasksRequest,
  ListTasksResponse,
  Message,
  Part,
  SendMessageRequest,
  StreamResponse,
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
  type AnswerRecord,
  findAnswer,
  isOk,
  problemText,
  type WorkspaceApi,
  waitForAnswer,
  workspaceApi,
} from '#shared/core/api/in-process.ts';
import { AGENT_ERROR_SCHEMA, AGENT_REQUEST_SCHEMA, AGENT_RESPONSE_SCHEMA } from '#shared/domain/protocol.ts';

/** API Gateway's integration limit is 30 s and not adjustable; this leaves room to answer. */
export const ANSWER_WITHIN_MS = 25_000;
const STATE = { working: 2, completed: 3, failed: 4 } as const;
const ANSWER_SCHEMAS = [AGENT_RESPONSE_SCHEMA, AGENT_ERROR_SCHEMA];
const ROLE_USER = 1;
const ROLE_AGENT = 2;

export interface A2aDeps {
  /** The crumbs API, called in process with the caller's identity. */
  readonly api: (request: HttpRequest) => Promise<HttpResult>;
  readonly answerWithinMs?: number;
  readonly pollMs?: { first: number; max: number };
}

export interface A2aCall {
  readonly workspace: string;
  readonly agent: string;
  readonly caller: Caller;
  readonly card: AgentCard;
  readonly remainingMs?: () => number;
}

/** A request or answer as read from the API (the full record). */
type Record_ = AnswerRecord & { created_by: string; created_at: string; updated_at: string };

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
    const message = params.message;
    if (message === undefined) throw new RequestMalformedError('message is required');
    if (message.taskId) {
      // A task ends when its answer is stored; nothing waits for more input on one (runs waiting on a person are
      // answered through their own human step).
      throw new UnsupportedOperationError(`task ${message.taskId} takes no further messages; send a new one`);
    }
    const { text, data } = contentOf(message.parts);
    if (text === '' && data === undefined) {
      throw new RequestMalformedError('the message has no text or data part');
    }
    const written = await this.api('POST', 'breadcrumbs', {
      body: {
        schema_name: AGENT_REQUEST_SCHEMA,
        title: `A2A message to ${this.call.agent}`,
        tags: ['agent:request', `agent:${this.call.agent}`],
        context: {
          agent: this.call.agent,
          ...(text !== '' ? { message: text } : {}),
          ...(data !== undefined ? { input: data } : {}),
          ...(message.contextId ? { conversation_id: message.contextId } : {}),
        },
      },
    });
    if (!isOk(written)) throw new RequestMalformedError(problemText(written));
    const request = written.body as Record_;
    const answer = params.configuration?.returnImmediately
      ? undefined
      : ((await waitForAnswer(this.api, request.id, ANSWER_SCHEMAS, {
          withinMs: this.deps.answerWithinMs ?? ANSWER_WITHIN_MS,
          remainingMs: this.call.remainingMs,
          poll: this.deps.pollMs ?? { first: 50, max: 1000 },
        })) as Record_ | undefined);
    return taskOf(request, answer, message);
  }

  // biome-ignore lint/correctness/useYield: streaming is not offered (the card says so); the SDK asks anyway.
  async *sendMessageStream(): AsyncGenerator<StreamResponse, void, undefined> {
    throw new UnsupportedOperationError('streaming is not offered by this agent yet');
  }

  // biome-ignore lint/correctness/useYield: as above.
  async *resubscribe(): AsyncGenerator<StreamResponse, void, undefined> {
    throw new UnsupportedOperationError('streaming is not offered by this agent yet');
  }

  async getTask(params: GetTaskRequest): Promise<Task> {
    const request = await this.ownRequest(params.id);
    return taskOf(
      request,
      (await findAnswer(this.api, request.id, ANSWER_SCHEMAS)) as Record_ | undefined,
      undefined,
    );
  }

  async cancelTask(params: CancelTaskRequest): Promise<Task> {
    await this.ownRequest(params.id);
    throw new TaskNotCancelableError(`task ${params.id} cannot be cancelled: an agent request has no cancel`);
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
    const tasks = await Promise.all(
      mine.map(async (r) =>
        taskOf(r, (await findAnswer(this.api, r.id, ANSWER_SCHEMAS)) as Record_ | undefined, undefined),
      ),
    );
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

function textPart(text: string): Part {
  return {
    content: { $case: 'text', value: text },
    metadata: undefined,
    filename: '',
    mediaType: 'text/plain',
  };
}

function dataPart(value: unknown): Part {
  return {
    content: { $case: 'data', value },
    metadata: undefined,
    filename: '',
    mediaType: 'application/json',
  };
}

/** The A2A task of a request and, once there is one, its answer. */
function taskOf(request: Record_, answer: Record_ | undefined, sent: Message | undefined): Task {
  const contextId = String(request.context.conversation_id ?? request.id);
  const agentMessage = (text: string): Message => ({
    messageId: `${answer?.id ?? request.id}-status`,
    contextId,
    taskId: request.id,
    role: ROLE_AGENT,
    parts: [textPart(text)],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  });
  const history: Message[] = [
    sent ?? {
      messageId: request.id,
      contextId,
      taskId: request.id,
      role: ROLE_USER,
      parts: [
        ...(typeof request.context.message === 'string' ? [textPart(request.context.message)] : []),
        ...(request.context.input !== undefined ? [dataPart(request.context.input)] : []),
      ],
      metadata: undefined,
      extensions: [],
      referenceTaskIds: [],
    },
  ];
  if (answer === undefined) {
    return {
      id: request.id,
      contextId,
      status: { state: STATE.working, message: undefined, timestamp: request.updated_at },
      artifacts: [],
      history,
      metadata: undefined,
    };
  }
  const c = answer.context;
  const failed = c.status === 'error' || answer.schema_name === AGENT_ERROR_SCHEMA;
  if (failed) {
    return {
      id: request.id,
      contextId,
      status: {
        state: STATE.failed,
        message: agentMessage(String(c.error ?? 'the agent failed')),
        timestamp: answer.updated_at,
      },
      artifacts: [],
      history,
      metadata: undefined,
    };
  }
  const text =
    typeof c.text === 'string'
      ? c.text
      : typeof c.message === 'string'
        ? c.message
        : JSON.stringify(c.output ?? '');
  const artifact: Artifact = {
    artifactId: answer.id,
    name: 'answer',
    description: `${request.context.agent}'s answer`,
    parts: [textPart(text), ...(c.output !== undefined && c.output !== null ? [dataPart(c.output)] : [])],
    metadata: undefined,
    extensions: [],
  };
  return {
    id: request.id,
    contextId,
    status: { state: STATE.completed, message: agentMessage(text), timestamp: answer.updated_at },
    artifacts: [artifact],
    history: [...history, agentMessage(text)],
    metadata: undefined,
  };
}
