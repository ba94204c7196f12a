/**
 * crumbs as an MCP server for one workspace and one caller: an SDK `Server` (low-level, since the tools change with
 * the workspace's definitions) built per HTTP request, as the stateless Streamable HTTP transport wants.
 *
 * Everything goes through the crumbs API in process (`deps.api`), as the caller: a tool call writes the request
 * breadcrumb an API user would write (same checks, `created_by` the caller, a thread of its own) and answers from
 * the response the executor writes; a read is the API's context view, never hidden fields. So the MCP endpoint can
 * reach exactly what the caller's token reaches through the API, and nothing else.
 *
 * Long work: a call waits for its answer — a streamed one (progress, an SSE response) up to the front door's stream
 * cap (`FRONT_DOOR.streamCapSeconds`), a JSON one, which says nothing until it answers, up to
 * `FRONT_DOOR.jsonWaitSeconds` (API Gateway closes a stream idle for 5 minutes) — and never past the function's
 * remaining time. A call still running then is answered `isError` with the request id and a `resource_link` to
 * `crumbs://{ws}/requests/{id}/answer`, which reads the answer once it exists. A client that
 * opts into tasks (`tools/call` with `task`) gets a task at once instead: its id is the request breadcrumb's id, and
 * `tasks/get`, `tasks/result` and `tasks/list` read the request and its answer — the task store is the table, so
 * any instance answers for any task. Tasks cannot be cancelled (a tool or agent request has no cancel) and live as
 * long as their request (`ttl: null`).
 *
 * Streaming: an agent's call with a progress token, where the stack has a delta channel, writes its request with a
 * `stream_id` after subscribing to that stream as the caller, and sends the answer's chunks as progress
 * notifications before the result (`progressOf`). Such a call can be stopped: its `notifications/cancelled`,
 * a POST of its own on any instance, finds the request through the call index and cancels it (`cancel.ts`).
 *
 * Errors: a tool's failure (its error answer, a 4xx of the API) is a tool result with `isError`; an unknown tool or
 * resource is a JSON-RPC error; nothing a client sends makes a 5xx (`http.ts`).
 */
import { randomUUID } from 'node:crypto';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  type CallToolResult,
  CancelledNotificationSchema,
  type CreateTaskResult,
  ErrorCode,
  GetTaskPayloadRequestSchema,
  GetTaskRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListTasksRequestSchema,
  ListToolsRequestSchema,
  McpError,
  type ProgressNotification,
  type ProgressToken,
  RELATED_TASK_META_KEY,
  ReadResourceRequestSchema,
  type Task,
} from '@modelcontextprotocol/sdk/types.js';
import { CfWorkerJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/cfworker';
import type { DefinitionSummary } from '#shared/core/api/activity-routes.ts';
import type { Caller, HttpRequest, HttpResult } from '#shared/core/api/http.ts';
import {
  type AnswerRecord,
  type ApiAnswer,
  findAnswer,
  isOk,
  listFull,
  problemText,
  type WorkspaceApi,
  waitForAnswer,
  workspaceApi,
} from '#shared/core/api/in-process.ts';
import type { DeltaEvent } from '#shared/core/streaming/events.ts';
import {
  AGENT_ERROR_SCHEMA,
  AGENT_REQUEST_SCHEMA,
  AGENT_RESPONSE_SCHEMA,
  LEGACY_AGENT_DEF_SCHEMA,
  TOOL_REQUEST_SCHEMA,
  TOOL_RESPONSE_SCHEMA,
} from '#shared/domain/protocol.ts';
import type { CallIndex } from '#shared/ports/call-index.ts';
import { findAttachments } from '#shared/rooms/attachments/reference.ts';
import { FRONT_DOOR } from '#shared/topology.ts';
import { cancelCall, indexable } from './cancel.ts';
import { type CatalogDefinition, type CatalogTool, catalogOf } from './catalog.ts';

export const SERVER_INFO = { name: 'crumbs', version: '0.1.0' };
/** How long a streamed call (progress notifications on an SSE response) waits for its answer. */
export const STREAMED_ANSWER_WITHIN_MS = FRONT_DOOR.streamCapSeconds * 1000;
/** How long a call answered with JSON waits: nothing is sent meanwhile, so it ends before the idle timeout. */
export const JSON_ANSWER_WITHIN_MS = FRONT_DOOR.jsonWaitSeconds * 1000;
const DEFINITION_PAGES = 5;

export interface McpDeps {
  /** The crumbs API, called in process with the MCP caller's identity. */
  readonly api: (request: HttpRequest) => Promise<HttpResult>;
  /** How long a call waits for its answer; default `STREAMED_ANSWER_WITHIN_MS` or `JSON_ANSWER_WITHIN_MS`. */
  readonly answerWithinMs?: number;
  /** First and longest pause between looks for an answer (they grow from the first to the longest). */
  readonly pollMs?: { first: number; max: number };
  /** Which request a call that can be stopped wrote, for its `notifications/cancelled` (`cancel.ts`). */
  readonly calls?: CallIndex;
}

/** The work a server's notifications started, which the HTTP handler awaits before it answers (`settled`). */
const notificationWork = new WeakMap<Server, Promise<unknown>[]>();

/**
 * Resolves once the notifications this server took have been acted on: the transport answers a POST of
 * notifications at once, and a Lambda is frozen once it has answered, so a cancel must be done before then.
 */
export async function settled(server: Server): Promise<void> {
  // The SDK hands a notification to its handler a microtask after the transport took it.
  await new Promise((resolve) => setImmediate(resolve));
  await Promise.allSettled(notificationWork.get(server) ?? []);
}

export interface McpCall {
  readonly workspace: string;
  readonly caller: Caller;
  readonly remainingMs?: () => number;
  /**
   * Subscribes to a request's delta channel with the caller's own token; resolves once subscribed. Given only
   * where the stack has a channel and the response can carry notifications (an SSE response, `http.ts`).
   */
  readonly subscribeDeltas?: SubscribeDeltas;
  /** Aborted when the client of a streamed response goes away: the call stops waiting (the request goes on). */
  readonly signal?: AbortSignal;
}

export type SubscribeDeltas = (
  streamId: string,
  onEvent: (event: DeltaEvent) => void,
) => Promise<{ close(): void; readonly done: Promise<unknown> }>;

/** How long a call waits for its answer: streamed or JSON (see the header), and the function's remaining time. */
function answerWithinMs(deps: McpDeps, call: McpCall): number {
  return deps.answerWithinMs ?? (call.subscribeDeltas ? STREAMED_ANSWER_WITHIN_MS : JSON_ANSWER_WITHIN_MS);
}

function waitOf(deps: McpDeps, call: McpCall) {
  return {
    withinMs: answerWithinMs(deps, call),
    remainingMs: call.remainingMs,
    // Short at first (a tool answers in about 100 ms locally), longer for agents that think.
    poll: deps.pollMs ?? { first: 25, max: 1000 },
  };
}

/** The workspace's MCP server for this caller; connect it to a fresh transport per HTTP request. */
export function mcpServer(deps: McpDeps, call: McpCall): Server {
  const server = new Server(SERVER_INFO, {
    capabilities: {
      tools: { listChanged: false },
      resources: { subscribe: false, listChanged: false },
      tasks: { list: {}, requests: { tools: { call: {} } } },
    },
    instructions:
      `crumbs workspace ${call.workspace}: its tools and agents (ask_<agent>) as defined there, and breadcrumbs ` +
      '(crumbs_get, crumbs_list, crumbs_create; resources crumbs://<workspace>/breadcrumbs/<id>).',
    jsonSchemaValidator: new CfWorkerJsonSchemaValidator(),
  });
  const api = workspaceApi(deps.api, call);
  let catalog: Promise<CatalogTool[]> | undefined;
  const tools = () => {
    catalog ??= readCatalog(api);
    return catalog;
  };

  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: (await tools()).map(({ target, ...tool }) => ({
      ...tool,
      ...(target.kind === 'builtin' ? {} : { execution: { taskSupport: 'optional' as const } }),
    })),
  }));

  server.setRequestHandler(
    CallToolRequestSchema,
    async (request, extra): Promise<CallToolResult | CreateTaskResult> => {
      const tool = (await tools()).find((t) => t.name === request.params.name);
      if (tool === undefined) {
        throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${request.params.name.slice(0, 128)}`);
      }
      const args = request.params.arguments ?? {};
      if (tool.target.kind === 'builtin') {
        if (request.params.task) {
          throw new McpError(ErrorCode.InvalidParams, `${tool.name} answers at once: call it without task`);
        }
        return builtin(api, tool.target.op, args);
      }
      const progressToken = request.params._meta?.progressToken;
      // An agent's answer streams to a caller that asked for progress: subscribed before the request is written
      // (it carries the stream's id), so nothing is missed. Without a channel, the call answers with JSON, unstreamed.
      const progress =
        tool.target.kind === 'agent' &&
        progressToken !== undefined &&
        !request.params.task &&
        call.subscribeDeltas !== undefined
          ? await progressOf(call.subscribeDeltas, progressToken, (n) => extra.sendNotification(n)).catch(
              () => undefined,
            )
          : undefined;
      try {
        const outcome = await startRequest(
          api,
          call,
          tool.target,
          args,
          request.params.task !== undefined,
          progress?.streamId,
        );
        if (!outcome.ok) return outcome.refused;
        const started = outcome.request;
        // A streamed answer can be stopped: its cancel, on any instance, finds the request by this call's id. An
        // entry that could not be written leaves only the cancel without effect; the call goes on.
        if (progress !== undefined && deps.calls !== undefined && indexable(extra.requestId)) {
          await deps.calls
            .put(call.workspace, call.caller.principal, extra.requestId, started.id)
            .catch(() => undefined);
        }
        if (request.params.task) return { task: taskOf(started, undefined) };
        const answer = await untilAborted(
          waitForAnswer(api, started.id, answerSchemas(started.schema_name), waitOf(deps, call)),
          call.signal,
        );
        if (answer === undefined) return stillRunning(call.workspace, started.id, answerWithinMs(deps, call));
        // Every chunk goes out before the result that ends the response; the last ones may still be on their
        // way when the stored answer is found.
        await progress?.flush();
        return withAttachmentContent(api, call.workspace, resultOf(started, answer), answer.context);
      } finally {
        progress?.close();
      }
    },
  );

  // In a stateless server the call a cancel names is not this server's: it is found through the call index.
  const calls = deps.calls;
  server.setNotificationHandler(CancelledNotificationSchema, (notification) => {
    const { requestId, reason } = notification.params;
    if (calls === undefined || requestId === undefined) return;
    const work = cancelCall(api, calls, call, requestId, reason);
    notificationWork.set(server, [...(notificationWork.get(server) ?? []), work]);
    return work.then(() => undefined);
  });

  server.setRequestHandler(GetTaskRequestSchema, async (request) => {
    const { request: asked, answer } = await taskRecords(api, call, request.params.taskId);
    return taskOf(asked, answer);
  });

  server.setRequestHandler(GetTaskPayloadRequestSchema, async (request) => {
    const { request: asked, answer: found } = await taskRecords(api, call, request.params.taskId);
    const answer =
      found ?? (await waitForAnswer(api, asked.id, answerSchemas(asked.schema_name), waitOf(deps, call)));
    if (answer === undefined) {
      throw new McpError(
        ErrorCode.InvalidRequest,
        `task ${asked.id} is still working after the wait this endpoint can hold; poll tasks/get and ask again`,
      );
    }
    const result = await withAttachmentContent(api, call.workspace, resultOf(asked, answer), answer.context);
    return { ...result, _meta: { ...result._meta, [RELATED_TASK_META_KEY]: { taskId: asked.id } } };
  });

  server.setRequestHandler(ListTasksRequestSchema, async (request) => {
    const page = await api('GET', 'breadcrumbs', {
      query: {
        tag: TASK_TAG,
        view: 'full',
        limit: '50',
        ...(request.params?.cursor ? { cursor: request.params.cursor } : {}),
      },
    });
    if (!isOk(page)) throw new McpError(ErrorCode.InvalidParams, problemText(page));
    const body = page.body as { items: RequestRecord[]; next_cursor: string | null };
    const mine = body.items.filter((r) => r.created_by === call.caller.principal);
    const tasks = await Promise.all(
      mine.map(async (r) => taskOf(r, await findAnswer(api, r.id, answerSchemas(r.schema_name)))),
    );
    return { tasks, ...(body.next_cursor ? { nextCursor: body.next_cursor } : {}) };
  });

  server.setRequestHandler(ListResourcesRequestSchema, async () => {
    const defs = await api('GET', 'definitions');
    const items = isOk(defs) ? ((defs.body as { items: DefinitionSummary[] }).items ?? []) : [];
    return {
      resources: items.slice(0, 200).map((d) => ({
        uri: breadcrumbUri(call.workspace, d.id),
        name: d.id,
        title: d.title,
        description: `${d.schema_name} v${d.version} (${d.state})`,
        mimeType: 'application/json',
      })),
    };
  });

  server.setRequestHandler(ListResourceTemplatesRequestSchema, async () => ({
    resourceTemplates: [
      {
        uriTemplate: `crumbs://${call.workspace}/breadcrumbs/{id}`,
        name: 'breadcrumb',
        description: "A breadcrumb's context view (fields its schema's llm_hints hide are left out).",
        mimeType: 'application/json',
      },
      {
        uriTemplate: `crumbs://${call.workspace}/schemas/{schema_name}`,
        name: 'breadcrumbs by schema',
        description: 'The newest 50 breadcrumbs of a schema, as context views.',
        mimeType: 'application/json',
      },
      {
        uriTemplate: `crumbs://${call.workspace}/tags/{tag}`,
        name: 'breadcrumbs by tag',
        description: 'The newest 50 breadcrumbs carrying a tag, as context views.',
        mimeType: 'application/json',
      },
      {
        uriTemplate: `crumbs://${call.workspace}/attachments/{id}`,
        name: 'attachment',
        description:
          'A file of the workspace (its bytes), as a breadcrumb\'s {"$attachment"} reference names it.',
      },
      {
        uriTemplate: `crumbs://${call.workspace}/requests/{id}/answer`,
        name: "a request's answer",
        description: 'The answer to a tool or agent request (a call that outlasted its wait names this).',
        mimeType: 'application/json',
      },
    ],
  }));

  server.setRequestHandler(ReadResourceRequestSchema, async (request) => {
    const uri = request.params.uri;
    // An attachment's contents are its bytes (a blob resource), read through the API as the caller.
    if (uri.startsWith(`crumbs://${call.workspace}/attachments/`))
      return readAttachment(api, call.workspace, uri);
    const body = await readResource(api, call.workspace, uri);
    return { contents: [{ uri, mimeType: 'application/json', text: JSON.stringify(body) }] };
  });

  return server;
}

/** The active definitions with their own fields: the definitions listing (states) joined with the full records. */
async function readCatalog(api: WorkspaceApi): Promise<CatalogTool[]> {
  const [summaries, ...full] = await Promise.all([
    api('GET', 'definitions'),
    listFull<FullRecord>(api, 'tool.def.v1', DEFINITION_PAGES),
    listFull<FullRecord>(api, 'agent.def.v1', DEFINITION_PAGES),
  ]);
  if (!isOk(summaries)) throw new McpError(ErrorCode.InternalError, 'could not read the definitions');
  const items = (summaries.body as { items: DefinitionSummary[] }).items;
  // Seed 002's agent shape is read only where the workspace has one: no listing more for everyone else.
  if (items.some((s) => s.schema_name === LEGACY_AGENT_DEF_SCHEMA)) {
    full.push(await listFull<FullRecord>(api, LEGACY_AGENT_DEF_SCHEMA, DEFINITION_PAGES));
  }
  const byId = new Map(full.flat().map((b) => [b.id, b] as const));
  const definitions: CatalogDefinition[] = [];
  for (const summary of items) {
    const record = byId.get(summary.id);
    if (record === undefined || record.version !== summary.version) continue;
    definitions.push({ summary, context: record.context });
  }
  return catalogOf(definitions);
}

interface FullRecord {
  id: string;
  version: number;
  context: Record<string, unknown>;
}

/** The tag of requests written for a task, so `tasks/list` finds them. */
export const TASK_TAG = 'mcp:task';
const TASK_POLL_MS = 1000;

interface RequestRecord {
  id: string;
  schema_name: string;
  created_by: string;
  created_at: string;
  updated_at: string;
  context: Record<string, unknown>;
}

/** Writes the request an API user would write for a tool or agent call; an API refusal is a tool error. */
async function startRequest(
  api: WorkspaceApi,
  call: McpCall,
  target: { kind: 'tool'; tool: string } | { kind: 'agent'; agent: string },
  args: Record<string, unknown>,
  asTask: boolean,
  streamId?: string,
): Promise<{ ok: true; request: RequestRecord } | { ok: false; refused: CallToolResult }> {
  let body: Record<string, unknown>;
  if (target.kind === 'tool') {
    body = {
      schema_name: TOOL_REQUEST_SCHEMA,
      title: `MCP call: ${target.tool}`,
      tags: asTask ? [TASK_TAG] : [],
      context: { tool: target.tool, input: args, requestedBy: call.caller.principal },
    };
  } else {
    const context: Record<string, unknown> = { agent: target.agent };
    for (const field of ['message', 'input', 'mode', 'conversation_id']) {
      if (args[field] !== undefined) context[field] = args[field];
    }
    if (streamId !== undefined) context.stream_id = streamId;
    body = {
      schema_name: AGENT_REQUEST_SCHEMA,
      title: `MCP call: ask ${target.agent}`,
      tags: ['agent:request', `agent:${target.agent}`, ...(asTask ? [TASK_TAG] : [])],
      context,
    };
  }
  const written = await api('POST', 'breadcrumbs', { body });
  if (!isOk(written)) return { ok: false, refused: refused(written) };
  return { ok: true, request: written.body as RequestRecord };
}

function answerSchemas(requestSchema: string): readonly string[] {
  return requestSchema === TOOL_REQUEST_SCHEMA
    ? [TOOL_RESPONSE_SCHEMA]
    : [AGENT_RESPONSE_SCHEMA, AGENT_ERROR_SCHEMA];
}

/** The metadata key of a progress notification that says the streamed answer starts over (drop the text so far). */
export const RESET_META_KEY = 'crumbs/reset';

/**
 * An agent's answer as MCP progress notifications on the call's progress token. The spec's `progress` must grow
 * with every notification and `message` is text for a person about the progress: so `progress` counts the
 * notifications and `message` is the answer's next chunk, verbatim — joined, the messages are the answer. A
 * `reset` (a model call started over, a tool round) is a notification whose `_meta` carries `crumbs/reset: true`
 * and whose message says so: a client drops what it joined so far. Notifications are sent one after another, in
 * the channel's order.
 */
async function progressOf(
  subscribe: SubscribeDeltas,
  progressToken: ProgressToken,
  send: (notification: ProgressNotification) => Promise<void>,
): Promise<{ streamId: string; flush(): Promise<void>; close(): void }> {
  const streamId = randomUUID();
  let count = 0;
  let sent: Promise<void> = Promise.resolve();
  const notify = (message: string, meta?: Record<string, unknown>) => {
    count += 1;
    const params = { progressToken, progress: count, message, ...(meta ? { _meta: meta } : {}) };
    // A notification that cannot be sent (the client went away) ends nothing: the result still comes.
    sent = sent.then(() => send({ method: 'notifications/progress', params }).catch(() => undefined));
  };
  let ended = false;
  let wake: (() => void) | undefined;
  const end = () => {
    ended = true;
    wake?.();
  };
  const subscription = await subscribe(streamId, (event) => {
    if (event.type === 'final') end();
    else if (event.type === 'delta') {
      if (event.text !== '') notify(event.text);
    } else if (event.type === 'reset') {
      notify('(the answer starts over)', { [RESET_META_KEY]: true });
    }
  });
  void subscription.done.then(end, end);
  return {
    streamId,
    async flush() {
      if (!ended) {
        const timer = new Promise<void>((resolve) => {
          wake = resolve;
          setTimeout(resolve, FINAL_GRACE_MS).unref();
        });
        await timer;
      }
      await sent;
    },
    close: () => subscription.close(),
  };
}

/** How long a found answer waits for its stream's final event, so the chunks still on their way go out first. */
const FINAL_GRACE_MS = 2000;

/** The wait, or undefined at once when the client went away (the request goes on; its answer is stored). */
function untilAborted<T>(wait: Promise<T>, signal: AbortSignal | undefined): Promise<T | undefined> {
  if (signal === undefined) return wait;
  if (signal.aborted) return Promise.resolve(undefined);
  return Promise.race([
    wait,
    new Promise<undefined>((resolve) =>
      signal.addEventListener('abort', () => resolve(undefined), { once: true }),
    ),
  ]);
}

/** The tool result of an answer: a tool's output (structured when it is an object), or an agent's reply. */
function resultOf(request: RequestRecord, answer: AnswerRecord): CallToolResult {
  const c = answer.context;
  const meta = { 'crumbs/request_id': request.id, 'crumbs/response_id': answer.id };
  if (
    c.status === 'error' ||
    answer.schema_name === AGENT_ERROR_SCHEMA ||
    (request.schema_name === TOOL_REQUEST_SCHEMA && c.status !== 'success')
  ) {
    return {
      isError: true,
      content: [{ type: 'text', text: String(c.error ?? 'the request failed') }],
      _meta: meta,
    };
  }
  if (request.schema_name === TOOL_REQUEST_SCHEMA) {
    const output = c.output;
    return {
      content: [{ type: 'text', text: typeof output === 'string' ? output : JSON.stringify(output ?? null) }],
      ...(isPlainObject(output) ? { structuredContent: output } : {}),
      _meta: meta,
    };
  }
  const text =
    typeof c.text === 'string'
      ? c.text
      : typeof c.message === 'string'
        ? c.message
        : JSON.stringify(c.output);
  return {
    content: [{ type: 'text', text }],
    structuredContent: {
      answer: text,
      ...(c.output !== undefined ? { output: c.output } : {}),
      request_id: request.id,
      response_id: answer.id,
    },
    _meta: meta,
  };
}

/** A task as MCP shows it, from its request and, once there is one, its answer. */
function taskOf(request: RequestRecord, answer: AnswerRecord | undefined): Task {
  const failed =
    answer !== undefined &&
    (answer.context.status === 'error' ||
      answer.schema_name === AGENT_ERROR_SCHEMA ||
      (request.schema_name === TOOL_REQUEST_SCHEMA && answer.context.status !== 'success'));
  return {
    taskId: request.id,
    status: answer === undefined ? 'working' : failed ? 'failed' : 'completed',
    ttl: null,
    createdAt: request.created_at,
    lastUpdatedAt: answer?.updated_at ?? request.updated_at,
    pollInterval: TASK_POLL_MS,
    ...(failed ? { statusMessage: String(answer?.context.error ?? 'the request failed').slice(0, 500) } : {}),
  };
}

/** A task's request (one this caller made for a task) and its answer if there is one; not found otherwise. */
async function taskRecords(
  api: WorkspaceApi,
  call: McpCall,
  taskId: string,
): Promise<{ request: RequestRecord; answer: AnswerRecord | undefined }> {
  const read = await api('GET', `breadcrumbs/${encodeURIComponent(taskId)}/full`);
  const request = read.body as RequestRecord & { tags?: string[] };
  if (
    !isOk(read) ||
    !Array.isArray(request.tags) ||
    !request.tags.includes(TASK_TAG) ||
    request.created_by !== call.caller.principal
  ) {
    throw new McpError(ErrorCode.InvalidParams, `Task not found: ${taskId.slice(0, 128)}`);
  }
  return { request, answer: await findAnswer(api, request.id, answerSchemas(request.schema_name)) };
}

async function builtin(
  api: WorkspaceApi,
  op: 'get' | 'list' | 'create',
  args: Record<string, unknown>,
): Promise<CallToolResult> {
  let answer: ApiAnswer;
  if (op === 'get') {
    if (typeof args.id !== 'string' || args.id === '') return failed('id: expected a breadcrumb id');
    answer = await api('GET', `breadcrumbs/${encodeURIComponent(args.id)}`);
  } else if (op === 'list') {
    const query: Record<string, string> = { limit: '20' };
    for (const field of ['schema_name', 'tag', 'cursor'] as const) {
      if (args[field] !== undefined) {
        if (typeof args[field] !== 'string') return failed(`${field}: expected a string`);
        query[field] = args[field] as string;
      }
    }
    if (args.limit !== undefined) {
      if (!Number.isInteger(args.limit)) return failed('limit: expected an integer from 1 to 100');
      query.limit = String(args.limit);
    }
    answer = await api('GET', 'breadcrumbs', { query });
  } else {
    answer = await api('POST', 'breadcrumbs', { body: { tags: [], ...args } });
  }
  if (!isOk(answer)) return refused(answer);
  return {
    content: [{ type: 'text', text: JSON.stringify(answer.body) }],
    ...(isPlainObject(answer.body) ? { structuredContent: answer.body } : {}),
  };
}

async function readResource(api: WorkspaceApi, workspace: string, uri: string): Promise<unknown> {
  const prefix = `crumbs://${workspace}/`;
  const notFound = () => new McpError(-32002, `Resource not found: ${uri.slice(0, 300)}`);
  if (!uri.startsWith(prefix)) throw notFound();
  const [kind, rawKey, rest, extra] = uri.slice(prefix.length).split('/');
  if (rawKey === undefined || rawKey === '' || extra !== undefined) throw notFound();
  let key: string;
  try {
    key = decodeURIComponent(rawKey);
  } catch {
    throw notFound();
  }
  let answer: ApiAnswer;
  if (kind === 'breadcrumbs' && rest === undefined) {
    answer = await api('GET', `breadcrumbs/${encodeURIComponent(key)}`);
  } else if ((kind === 'schemas' || kind === 'tags') && rest === undefined) {
    answer = await api('GET', 'breadcrumbs', {
      query: { [kind === 'schemas' ? 'schema_name' : 'tag']: key, limit: '50' },
    });
  } else if (kind === 'requests' && rest === 'answer') {
    const request = await api('GET', `breadcrumbs/${encodeURIComponent(key)}`);
    if (!isOk(request)) throw notFound();
    const found = await findAnswer(api, key, [
      TOOL_RESPONSE_SCHEMA,
      AGENT_RESPONSE_SCHEMA,
      AGENT_ERROR_SCHEMA,
    ]);
    return found === undefined
      ? { request_id: key, status: 'working' }
      : { request_id: key, status: 'answered', answer: found };
  } else {
    throw notFound();
  }
  if (answer.status === 404) throw notFound();
  if (!isOk(answer)) throw new McpError(ErrorCode.InvalidParams, problemText(answer));
  return answer.body;
}

function breadcrumbUri(workspace: string, id: string): string {
  return `crumbs://${workspace}/breadcrumbs/${encodeURIComponent(id)}`;
}

function stillRunning(workspace: string, id: string, waitedMs: number): CallToolResult {
  const uri = `crumbs://${workspace}/requests/${id}/answer`;
  return {
    isError: true,
    content: [
      {
        type: 'text',
        text:
          `Not answered within the wait (about ${Math.round(waitedMs / 1000)} s); request ${id} is still running. ` +
          `Read ${uri} for its answer.`,
      },
      { type: 'resource_link', uri, name: `answer to ${id}`, mimeType: 'application/json' },
    ],
    _meta: { 'crumbs/request_id': id, 'crumbs/status': 'working' },
  };
}

function failed(message: string): CallToolResult {
  return { isError: true, content: [{ type: 'text', text: message }] };
}

/** An API refusal (4xx) as the tool result a model can read: the problem's title, detail and field errors. */
function refused(answer: ApiAnswer): CallToolResult {
  return failed(problemText(answer));
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/**
 * A result whose answer refers to attachments carries them as MCP content too: an image as `image` content, any
 * other file as an embedded `resource` (its bytes), read through the API as the caller (so only the caller's
 * workspace's files); one too large for an answer, or that cannot be read, as a `resource_link` to its
 * `crumbs://` URI.
 */
async function withAttachmentContent(
  api: WorkspaceApi,
  workspace: string,
  result: CallToolResult,
  answer: Record<string, unknown>,
): Promise<CallToolResult> {
  const refs = findAttachments(answer).slice(0, MAX_ATTACHMENT_CONTENT);
  if (refs.length === 0 || result.isError) return result;
  const content = [...result.content];
  for (const { ref } of refs) {
    const read = await api('GET', `attachments/${encodeURIComponent(ref.id)}`, { query: { data: 'true' } });
    const data = isOk(read) ? (read.body as { data_base64?: unknown }).data_base64 : undefined;
    const uri = attachmentUri(workspace, ref.id);
    if (typeof data !== 'string') {
      content.push({ type: 'resource_link', uri, name: ref.name ?? ref.id, mimeType: ref.media_type });
    } else if (ref.media_type.startsWith('image/')) {
      content.push({ type: 'image', data, mimeType: ref.media_type });
    } else {
      content.push({ type: 'resource', resource: { uri, mimeType: ref.media_type, blob: data } });
    }
  }
  return { ...result, content };
}

/** Files one tool result carries at most (each up to the API's inline answer size). */
const MAX_ATTACHMENT_CONTENT = 4;

function attachmentUri(workspace: string, id: string): string {
  return `crumbs://${workspace}/attachments/${encodeURIComponent(id)}`;
}

async function readAttachment(api: WorkspaceApi, workspace: string, uri: string) {
  const id = decodeURIComponent(uri.slice(`crumbs://${workspace}/attachments/`.length));
  const answer = await api('GET', `attachments/${encodeURIComponent(id)}`, { query: { data: 'true' } });
  if (answer.status === 404 || !isOk(answer))
    throw new McpError(-32002, `Resource not found: ${uri.slice(0, 300)}`);
  const body = answer.body as { media_type: string; data_base64?: string; download_url: string };
  if (body.data_base64 === undefined) {
    throw new McpError(
      ErrorCode.InvalidParams,
      `${id} is larger than a resource read carries; download it from its presigned URL: ${body.download_url}`,
    );
  }
  return { contents: [{ uri, mimeType: body.media_type, blob: body.data_base64 }] };
}
