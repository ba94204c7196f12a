/**
 * crumbs as an MCP server for one workspace and one caller: an SDK `Server` (low-level, since the tools change with
 * the workspace's definitions) built per HTTP request, as the stateless Streamable HTTP transport wants.
 *
 * Everything goes through the crumbs API in process (`deps.api`), as the caller: a tool call writes the request
 * breadcrumb an API user would write (same checks, `created_by` the caller, a thread of its own) and answers from
 * the response the executor writes; a read is the API's context view, never hidden fields. So the MCP endpoint can
 * reach exactly what the caller's token reaches through the API, and nothing else.
 *
 * Long work: a call waits for its answer at most `answerWithinMs` (25 s: API Gateway ends an integration at 30 s)
 * and the function's remaining time. A call still running then is answered `isError` with the request id and a
 * `resource_link` to `crumbs://{ws}/requests/{id}/answer`, which reads the answer once it exists.
 *
 * Errors: a tool's failure (its error answer, a 4xx of the API) is a tool result with `isError`; an unknown tool or
 * resource is a JSON-RPC error; nothing a client sends makes a 5xx (`http.ts`).
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  type CallToolResult,
  ErrorCode,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { CfWorkerJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/cfworker';
import type { DefinitionSummary } from '#shared/core/api/activity-routes.ts';
import type { Caller, HttpRequest, HttpResult } from '#shared/core/api/http.ts';
import {
  AGENT_ERROR_SCHEMA,
  AGENT_REQUEST_SCHEMA,
  AGENT_RESPONSE_SCHEMA,
  requestTag,
  TOOL_REQUEST_SCHEMA,
  TOOL_RESPONSE_SCHEMA,
} from '#shared/domain/protocol.ts';
import { type CatalogDefinition, type CatalogTool, catalogOf } from './catalog.ts';

export const SERVER_INFO = { name: 'crumbs', version: '0.1.0' };
/** API Gateway's integration limit is 30 s and not adjustable; this leaves room to answer. */
export const ANSWER_WITHIN_MS = 25_000;
/** Time kept for answering after the wait, out of the function's remaining time. */
const ANSWER_MARGIN_MS = 2_500;
const DEFINITION_PAGES = 5;

export interface McpDeps {
  /** The crumbs API, called in process with the MCP caller's identity. */
  readonly api: (request: HttpRequest) => Promise<HttpResult>;
  readonly answerWithinMs?: number;
  /** First and longest pause between looks for an answer (they grow from the first to the longest). */
  readonly pollMs?: { first: number; max: number };
  readonly sleep?: (ms: number) => Promise<void>;
}

export interface McpCall {
  readonly workspace: string;
  readonly caller: Caller;
  readonly remainingMs?: () => number;
}

interface ApiAnswer {
  status: number;
  body: unknown;
}

/** The workspace's MCP server for this caller; connect it to a fresh transport per HTTP request. */
export function mcpServer(deps: McpDeps, call: McpCall): Server {
  const server = new Server(SERVER_INFO, {
    capabilities: {
      tools: { listChanged: false },
      resources: { subscribe: false, listChanged: false },
    },
    instructions:
      `crumbs workspace ${call.workspace}: its tools and agents (ask_<agent>) as defined there, and breadcrumbs ` +
      '(crumbs_get, crumbs_list, crumbs_create; resources crumbs://<workspace>/breadcrumbs/<id>).',
    jsonSchemaValidator: new CfWorkerJsonSchemaValidator(),
  });
  const api = apiClient(deps, call);
  let catalog: Promise<CatalogTool[]> | undefined;
  const tools = () => {
    catalog ??= readCatalog(api);
    return catalog;
  };

  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: (await tools()).map(({ target: _target, ...tool }) => tool),
  }));

  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const tool = (await tools()).find((t) => t.name === request.params.name);
    if (tool === undefined) {
      throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${request.params.name.slice(0, 128)}`);
    }
    const args = request.params.arguments ?? {};
    switch (tool.target.kind) {
      case 'tool':
        return callTool(deps, call, api, tool.target.tool, args);
      case 'agent':
        return askAgent(deps, call, api, tool.target.agent, args);
      case 'builtin':
        return builtin(api, tool.target.op, args);
    }
  });

  server.setRequestHandler(ListResourcesRequestSchema, async () => {
    const defs = await api('GET', 'definitions');
    const items = ok(defs) ? ((defs.body as { items: DefinitionSummary[] }).items ?? []) : [];
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
        uriTemplate: `crumbs://${call.workspace}/requests/{id}/answer`,
        name: "a request's answer",
        description: 'The answer to a tool or agent request (a call that outlasted its wait names this).',
        mimeType: 'application/json',
      },
    ],
  }));

  server.setRequestHandler(ReadResourceRequestSchema, async (request) => {
    const uri = request.params.uri;
    const body = await readResource(api, call.workspace, uri);
    return { contents: [{ uri, mimeType: 'application/json', text: JSON.stringify(body) }] };
  });

  return server;
}

type Api = (
  method: string,
  path: string,
  options?: { query?: Record<string, string>; body?: unknown },
) => Promise<ApiAnswer>;

/** The API in process, as the caller, under `/v1/workspaces/{ws}/…`. */
function apiClient(deps: McpDeps, call: McpCall): Api {
  return async (method, path, options = {}) => {
    const result = await deps.api({
      method,
      path: `/v1/workspaces/${encodeURIComponent(call.workspace)}/${path}`,
      headers: options.body !== undefined ? { 'content-type': 'application/json' } : {},
      query: options.query ?? {},
      body: options.body !== undefined ? JSON.stringify(options.body) : undefined,
      caller: call.caller,
      ...(call.remainingMs ? { remainingMs: call.remainingMs } : {}),
    });
    let body: unknown;
    try {
      body = result.body ? JSON.parse(String(result.body)) : undefined;
    } catch {
      body = result.body;
    }
    return { status: result.statusCode, body };
  };
}

function ok(answer: ApiAnswer): boolean {
  return answer.status >= 200 && answer.status < 300;
}

/** The active definitions with their own fields: the definitions listing (states) joined with the full records. */
async function readCatalog(api: Api): Promise<CatalogTool[]> {
  const [summaries, ...full] = await Promise.all([
    api('GET', 'definitions'),
    listFull(api, 'tool.def.v1'),
    listFull(api, 'agent.def.v1'),
  ]);
  if (!ok(summaries)) throw new McpError(ErrorCode.InternalError, 'could not read the definitions');
  const byId = new Map(full.flat().map((b) => [b.id, b] as const));
  const definitions: CatalogDefinition[] = [];
  for (const summary of (summaries.body as { items: DefinitionSummary[] }).items) {
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

async function listFull(api: Api, schema: string): Promise<FullRecord[]> {
  const out: FullRecord[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < DEFINITION_PAGES; page++) {
    const answer = await api('GET', 'breadcrumbs', {
      query: { schema_name: schema, view: 'full', limit: '100', ...(cursor ? { cursor } : {}) },
    });
    if (!ok(answer)) break;
    const body = answer.body as { items: FullRecord[]; next_cursor: string | null };
    out.push(...body.items);
    if (!body.next_cursor) break;
    cursor = body.next_cursor;
  }
  return out;
}

async function callTool(
  deps: McpDeps,
  call: McpCall,
  api: Api,
  tool: string,
  args: Record<string, unknown>,
): Promise<CallToolResult> {
  const written = await api('POST', 'breadcrumbs', {
    body: {
      schema_name: TOOL_REQUEST_SCHEMA,
      title: `MCP call: ${tool}`,
      tags: [],
      context: { tool, input: args, requestedBy: call.caller.principal },
    },
  });
  if (!ok(written)) return refused(written);
  const id = (written.body as { id: string }).id;
  const answer = await waitForAnswer(deps, call, api, id, [TOOL_RESPONSE_SCHEMA]);
  if (answer === undefined) return stillRunning(call.workspace, id);
  const c = answer.context;
  if (c.status !== 'success') return failed(String(c.error ?? 'the tool failed'), id);
  const output = c.output;
  return {
    content: [{ type: 'text', text: typeof output === 'string' ? output : JSON.stringify(output ?? null) }],
    ...(isPlainObject(output) ? { structuredContent: output } : {}),
    _meta: { 'crumbs/request_id': id, 'crumbs/response_id': answer.id },
  };
}

async function askAgent(
  deps: McpDeps,
  call: McpCall,
  api: Api,
  agent: string,
  args: Record<string, unknown>,
): Promise<CallToolResult> {
  const context: Record<string, unknown> = { agent };
  for (const field of ['message', 'input', 'mode', 'conversation_id']) {
    if (args[field] !== undefined) context[field] = args[field];
  }
  const written = await api('POST', 'breadcrumbs', {
    body: {
      schema_name: AGENT_REQUEST_SCHEMA,
      title: `MCP call: ask ${agent}`,
      tags: ['agent:request', `agent:${agent}`],
      context,
    },
  });
  if (!ok(written)) return refused(written);
  const id = (written.body as { id: string }).id;
  const answer = await waitForAnswer(deps, call, api, id, [AGENT_RESPONSE_SCHEMA, AGENT_ERROR_SCHEMA]);
  if (answer === undefined) return stillRunning(call.workspace, id);
  const c = answer.context;
  if (c.status === 'error' || answer.schema_name === AGENT_ERROR_SCHEMA) {
    return failed(String(c.error ?? 'the agent failed'), id);
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
      request_id: id,
      response_id: answer.id,
    },
    _meta: { 'crumbs/request_id': id, 'crumbs/response_id': answer.id },
  };
}

async function builtin(
  api: Api,
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
  if (!ok(answer)) return refused(answer);
  return {
    content: [{ type: 'text', text: JSON.stringify(answer.body) }],
    ...(isPlainObject(answer.body) ? { structuredContent: answer.body } : {}),
  };
}

interface Answer {
  id: string;
  schema_name: string;
  context: Record<string, unknown>;
}

/** The answer to request `id` (a breadcrumb of one of `schemas` tagged `request:<id>`), or undefined in time. */
async function waitForAnswer(
  deps: McpDeps,
  call: McpCall,
  api: Api,
  id: string,
  schemas: readonly string[],
): Promise<Answer | undefined> {
  const sleep = deps.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  // Short at first (a tool answers in about 100 ms locally), longer for agents that think.
  const poll = deps.pollMs ?? { first: 25, max: 1000 };
  const remaining = call.remainingMs?.() ?? Number.POSITIVE_INFINITY;
  const deadline =
    Date.now() + Math.min(deps.answerWithinMs ?? ANSWER_WITHIN_MS, remaining - ANSWER_MARGIN_MS);
  let pause = poll.first;
  for (;;) {
    const found = await findAnswer(api, id, schemas);
    if (found !== undefined) return found;
    if (Date.now() + pause > deadline) return undefined;
    await sleep(pause);
    pause = Math.min(poll.max, Math.ceil(pause * 1.5));
  }
}

async function findAnswer(api: Api, id: string, schemas: readonly string[]): Promise<Answer | undefined> {
  for (const schema of schemas) {
    const page = await api('GET', 'breadcrumbs', {
      query: { schema_name: schema, tag: requestTag(id), limit: '1', view: 'full' },
    });
    if (!ok(page)) continue;
    const item = (page.body as { items: Answer[] }).items[0];
    if (item !== undefined) return item;
  }
  return undefined;
}

async function readResource(api: Api, workspace: string, uri: string): Promise<unknown> {
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
    if (!ok(request)) throw notFound();
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
  if (!ok(answer)) throw new McpError(ErrorCode.InvalidParams, problemText(answer));
  return answer.body;
}

function breadcrumbUri(workspace: string, id: string): string {
  return `crumbs://${workspace}/breadcrumbs/${encodeURIComponent(id)}`;
}

function stillRunning(workspace: string, id: string): CallToolResult {
  const uri = `crumbs://${workspace}/requests/${id}/answer`;
  return {
    isError: true,
    content: [
      {
        type: 'text',
        text:
          `Not answered within the wait (about ${ANSWER_WITHIN_MS / 1000} s); request ${id} is still running. ` +
          `Read ${uri} for its answer.`,
      },
      { type: 'resource_link', uri, name: `answer to ${id}`, mimeType: 'application/json' },
    ],
    _meta: { 'crumbs/request_id': id, 'crumbs/status': 'working' },
  };
}

function failed(message: string, requestId?: string): CallToolResult {
  return {
    isError: true,
    content: [{ type: 'text', text: message }],
    ...(requestId !== undefined ? { _meta: { 'crumbs/request_id': requestId } } : {}),
  };
}

/** An API refusal (4xx) as the tool result a model can read: the problem's title, detail and field errors. */
function refused(answer: ApiAnswer): CallToolResult {
  return failed(problemText(answer));
}

function problemText(answer: ApiAnswer): string {
  const p = (isPlainObject(answer.body) ? answer.body : {}) as {
    title?: string;
    detail?: string;
    errors?: { path?: string; message?: string }[];
  };
  const fields = Array.isArray(p.errors)
    ? p.errors.map((e) => `${e.path ?? ''}: ${e.message ?? ''}`).join('; ')
    : '';
  return [`${answer.status} ${p.title ?? 'error'}`, p.detail, fields].filter(Boolean).join(': ');
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
