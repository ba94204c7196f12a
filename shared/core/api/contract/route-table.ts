/**
 * The route table: every route of crumbs' HTTP surface with its request and response schemas, in one place. The
 * OpenAPI document (`openapi.ts`, served at `/v1/openapi.json`, written to `docs/openapi.json`) is generated from
 * it, the contract test sends each entry a valid and an invalid request, and `route-table.test.ts` fails when a
 * route the API (or a function's topology declaration) serves has no entry here, or an entry names no route.
 *
 * Adding a route: write its handler in its room as before, then add one entry here (`shared/core/api/README.md`).
 */

import * as zod from '#shared/domain/zod.ts';
import * as AttachmentContract from '#shared/rooms/attachments/contract.ts';
import * as MemoryContract from '#shared/rooms/memory/contract.ts';
import { SignInConfigSchema } from '../sign-in.ts';
import * as S from './schemas.ts';

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface Parameter {
  /** A scalar zod schema (strings and numbers as a query string carries them). */
  readonly schema?: zod.ZodMiniType;
  readonly description: string;
  readonly required?: true;
}

export interface ResponseContract {
  readonly description: string;
  /** The JSON body's schema; absent for an empty body. */
  readonly schema?: zod.ZodMiniType;
  /** `application/json` unless named: `text/event-stream` for server-sent events. */
  readonly contentType?: string;
}

export interface RouteContract {
  readonly method: Method;
  /** The path with `{param}` placeholders, as the route's handler writes its template. */
  readonly path: string;
  readonly operationId: string;
  readonly summary: string;
  readonly tag:
    | 'breadcrumbs'
    | 'activity'
    | 'runs'
    | 'approvals'
    | 'streams'
    | 'usage'
    | 'workspaces'
    | 'meta'
    | 'mcp'
    | 'a2a'
    | 'attachments'
    | 'memory'
    | 'guardrails'
    | 'evals';
  /** No bearer token needed. */
  readonly public?: true;
  /** The function serving it (the api function unless named): the others are described, not routed, by the api. */
  readonly servedBy?: 'api' | 'mcp' | 'a2a' | 'ui';
  readonly query?: Readonly<Record<string, Parameter>>;
  readonly headers?: Readonly<Record<string, Parameter>>;
  readonly body?: {
    readonly schema: zod.ZodMiniType;
    readonly required: boolean;
    readonly contentType?: string;
  };
  readonly responses: Readonly<Record<number, ResponseContract>>;
  /** The 4xx a caller can cause besides the ones every route has (401, 403, 429): each a problem+json body. */
  readonly errors: readonly number[];
  /** Of `errors`, those answered with a JSON-RPC error object (`application/json`) instead of a problem. */
  readonly jsonRpcErrors?: readonly number[];
  /** A page with `next_cursor`, read on with `?cursor=`. */
  readonly paginated?: true;
}

const limit = (max: number): Parameter => ({
  description: `Page size, 1-${max}.`,
  schema: zod.number().check(zod.int(), zod.minimum(1), zod.maximum(max)),
});
const cursor: Parameter = { description: 'The `next_cursor` of the previous page.' };
const view: Parameter = {
  schema: zod.enum(['context', 'full']),
  description: '`context` (default: context views, `llm_hints` applied) or `full` (the stored records).',
};
const page = { limit: limit(100), cursor };
const ifMatch: Parameter = {
  description: 'Only if the current version is this one (`"3"` or `3`); else 412.',
};
const ok = (schema: zod.ZodMiniType, description = 'OK'): ResponseContract => ({ description, schema });
const sse = (description: string): ResponseContract => ({ description, contentType: 'text/event-stream' });
const WS = '/v1/workspaces/{ws}';
const CRUMBS = `${WS}/breadcrumbs`;

const RUN_CONTROL_BODIES = {
  pause: undefined,
  resume: S.RunResumeBodySchema,
  cancel: undefined,
  retry: S.RunRetryBodySchema,
} as const;

/** The core's routes; the rooms' own entries follow them in `ROUTE_TABLE`. */
const CORE_ROUTES: readonly RouteContract[] = [
  {
    method: 'GET',
    path: '/health',
    operationId: 'getHealth',
    summary: 'Liveness of the API.',
    tag: 'meta',
    public: true,
    responses: { 200: ok(S.HealthSchema) },
    errors: [],
  },
  {
    method: 'GET',
    path: '/v1/openapi.json',
    operationId: 'getOpenApiDocument',
    summary: 'This document.',
    tag: 'meta',
    public: true,
    responses: { 200: ok(S.OpenApiDocumentSchema, 'The OpenAPI 3.1 document of this API.') },
    errors: [],
  },
  {
    method: 'GET',
    path: '/ui/sign-in.json',
    operationId: 'getSignInConfig',
    summary:
      'How people sign in (OAuth 2.0 code + PKCE against the stack issuer), for the dashboard and `crumbs login`.',
    tag: 'meta',
    public: true,
    servedBy: 'ui',
    responses: { 200: ok(SignInConfigSchema) },
    errors: [],
  },
  {
    method: 'POST',
    path: CRUMBS,
    operationId: 'createBreadcrumb',
    summary: 'Write a new breadcrumb.',
    tag: 'breadcrumbs',
    headers: {
      'Idempotency-Key': {
        description:
          '1-255 visible ASCII characters: a retry with the same key and body answers the first write.',
      },
    },
    body: { schema: S.CreateBreadcrumbBodySchema, required: true },
    responses: { 201: ok(S.BreadcrumbSchema, 'Created (or, with `Idempotent-Replayed: true`, replayed).') },
    errors: [400, 409, 410, 413, 415, 422],
  },
  {
    method: 'GET',
    path: CRUMBS,
    operationId: 'listBreadcrumbs',
    summary: 'List breadcrumbs, newest first, by schema and/or tag.',
    tag: 'breadcrumbs',
    query: {
      schema_name: { description: 'Only this schema.' },
      tag: { description: 'Only this tag.' },
      view,
      ...page,
    },
    responses: { 200: ok(S.BreadcrumbPageSchema) },
    errors: [400],
    paginated: true,
  },
  {
    method: 'GET',
    path: `${CRUMBS}/search`,
    operationId: 'searchBreadcrumbs',
    summary: 'The breadcrumbs nearest in meaning to `q` (404 on a stack without embeddings).',
    tag: 'breadcrumbs',
    query: {
      q: { description: 'The text to search for.', required: true },
      nn: { description: 'How many neighbours (default 10).' },
      schema_name: { description: 'Only this schema.' },
    },
    responses: { 200: ok(S.SearchResultSchema) },
    errors: [400, 404],
  },
  {
    method: 'GET',
    path: `${CRUMBS}/{id}`,
    operationId: 'getBreadcrumb',
    summary: 'Read a breadcrumb (its context view unless `view=full`).',
    tag: 'breadcrumbs',
    query: { view },
    responses: { 200: ok(S.BreadcrumbOrViewSchema) },
    errors: [400, 404],
  },
  {
    method: 'PUT',
    path: `${CRUMBS}/{id}`,
    operationId: 'putBreadcrumb',
    summary: 'Create or replace a breadcrumb with a chosen id (a PUT of what is stored writes nothing).',
    tag: 'breadcrumbs',
    headers: { 'If-Match': ifMatch, 'If-None-Match': { description: '`*`: only create; 412 if it exists.' } },
    body: { schema: S.CreateBreadcrumbBodySchema, required: true },
    responses: {
      200: ok(S.BreadcrumbSchema, 'Replaced (or unchanged).'),
      201: ok(S.BreadcrumbSchema, 'Created.'),
    },
    errors: [400, 410, 412, 413, 415, 422],
  },
  {
    method: 'PATCH',
    path: `${CRUMBS}/{id}`,
    operationId: 'updateBreadcrumb',
    summary: 'Change some fields of a breadcrumb (a new version).',
    tag: 'breadcrumbs',
    headers: { 'If-Match': ifMatch },
    body: { schema: S.UpdateBreadcrumbBodySchema, required: true },
    responses: { 200: ok(S.BreadcrumbSchema) },
    errors: [400, 404, 410, 412, 413, 415, 422],
  },
  {
    method: 'DELETE',
    path: `${CRUMBS}/{id}`,
    operationId: 'deleteBreadcrumb',
    summary: 'Delete a breadcrumb (its history stays until it expires).',
    tag: 'breadcrumbs',
    headers: { 'If-Match': ifMatch },
    responses: { 204: { description: 'Deleted.' } },
    errors: [400, 404, 410, 412],
  },
  {
    method: 'GET',
    path: `${CRUMBS}/{id}/full`,
    operationId: 'getBreadcrumbFull',
    summary: 'Read the stored record (the same as `?view=full`).',
    tag: 'breadcrumbs',
    responses: { 200: ok(S.BreadcrumbSchema) },
    errors: [404],
  },
  {
    method: 'GET',
    path: `${CRUMBS}/{id}/history`,
    operationId: 'listBreadcrumbHistory',
    summary: "A breadcrumb's versions, newest first.",
    tag: 'breadcrumbs',
    query: { view, ...page },
    responses: { 200: ok(S.BreadcrumbPageSchema) },
    errors: [400, 404],
    paginated: true,
  },
  {
    method: 'GET',
    path: `${CRUMBS}/{id}/versions/{n}`,
    operationId: 'getBreadcrumbVersion',
    summary: 'One version of a breadcrumb.',
    tag: 'breadcrumbs',
    query: { view },
    responses: { 200: ok(S.BreadcrumbOrViewSchema) },
    errors: [400, 404],
  },
  {
    method: 'GET',
    path: `${WS}/threads/{id}`,
    operationId: 'getThread',
    summary: 'A thread (or the thread of a breadcrumb) in causal order.',
    tag: 'activity',
    responses: { 200: ok(S.ThreadSchema) },
    errors: [404],
  },
  {
    method: 'GET',
    path: `${WS}/changes`,
    operationId: 'followChanges',
    summary:
      "The workspace's changes as server-sent events, long-polled: reconnect with the last event's id.",
    tag: 'activity',
    headers: { 'Last-Event-ID': { description: 'Resume after this event.' } },
    query: {
      last_event_id: { description: 'Resume after this event (for clients that cannot set the header).' },
      backlog: { description: 'Changes from before now to send first (0-100).' },
      wait: { description: 'Seconds to wait for a change (0-25).' },
      view: { description: '`summary` (default) or `full`.' },
      schema_name: { description: 'Only these schemas (comma-separated).' },
      tag: { description: 'Only this tag.' },
      thread: { description: 'Only this thread.' },
      writer: { description: 'Only this writer.' },
    },
    responses: { 200: sse('`change` events, each with an `id` to resume from.') },
    errors: [400],
  },
  {
    method: 'GET',
    path: `${WS}/changes/channel`,
    operationId: 'getChangesChannel',
    summary: "Where the workspace's changes are pushed (404 when the stack pushes none).",
    tag: 'activity',
    responses: { 200: ok(S.ChannelInfoSchema) },
    errors: [404],
  },
  {
    method: 'GET',
    path: `${WS}/definitions`,
    operationId: 'listDefinitions',
    summary: 'Every definition with its rule state and errors.',
    tag: 'activity',
    responses: { 200: ok(S.DefinitionListSchema) },
    errors: [],
  },
  {
    method: 'GET',
    path: `${WS}/definitions/{id}/explain`,
    operationId: 'explainDefinition',
    summary: "Whether a definition's selectors match a breadcrumb, selector by selector.",
    tag: 'activity',
    query: { breadcrumb: { description: 'The breadcrumb to explain.', required: true } },
    responses: { 200: ok(S.ExplanationSchema) },
    errors: [400, 404],
  },
  {
    method: 'GET',
    path: `${WS}/errors`,
    operationId: 'listErrors',
    summary: 'Recent failed answers and dead letters.',
    tag: 'activity',
    query: { limit: limit(100) },
    responses: { 200: ok(S.FailureListSchema) },
    errors: [400],
  },
  {
    method: 'GET',
    path: `${WS}/usage`,
    operationId: 'getUsage',
    summary: 'Model usage and cost by day, agent, run or thread.',
    tag: 'usage',
    query: {
      by: { description: '`day` (default), `agent`, `run` or `thread`.' },
      from: { description: 'First day, YYYY-MM-DD.' },
      to: { description: 'Last day, YYYY-MM-DD.' },
      limit: limit(1000),
    },
    responses: { 200: ok(S.UsageReportSchema) },
    errors: [400, 404],
  },
  {
    method: 'GET',
    path: `${WS}/usage/requests/{id}`,
    operationId: 'getRequestUsage',
    summary: "One request's model usage, per write that recorded it.",
    tag: 'usage',
    responses: { 200: ok(S.RequestUsageReportSchema) },
    errors: [404],
  },
  {
    method: 'POST',
    path: `${WS}/runs`,
    operationId: 'startRun',
    summary: 'Start a workflow run.',
    tag: 'runs',
    body: { schema: S.StartRunBodySchema, required: true },
    responses: { 201: ok(S.RunStartedSchema) },
    errors: [400, 404, 410, 413, 415, 422],
  },
  {
    method: 'GET',
    path: `${WS}/runs`,
    operationId: 'listRuns',
    summary: 'Runs, newest first.',
    tag: 'runs',
    query: {
      status: { description: 'Only runs in this status.' },
      workflow: { description: 'Only this workflow.' },
      ...page,
    },
    responses: { 200: ok(S.RunPageSchema) },
    errors: [400],
    paginated: true,
  },
  {
    method: 'GET',
    path: `${WS}/runs/{run_id}`,
    operationId: 'getRun',
    summary: 'A run with its steps (`requested` until its executor starts it).',
    tag: 'runs',
    responses: { 200: ok(S.RunSchema) },
    errors: [404],
  },
  ...(['approve', 'reject'] as const).map(
    (action): RouteContract => ({
      method: 'POST',
      path: `${WS}/runs/{run_id}/${action}`,
      operationId: `${action}RunStep`,
      summary: `${action === 'approve' ? 'Approve' : 'Reject'} the human step a run waits on.`,
      tag: 'runs',
      body: { schema: S.RunDecisionBodySchema, required: false },
      responses: { 202: ok(S.RunDecisionSchema) },
      errors: [400, 404, 409, 410, 415, 422],
    }),
  ),
  ...(Object.keys(RUN_CONTROL_BODIES) as (keyof typeof RUN_CONTROL_BODIES)[]).map((action): RouteContract => {
    const schema = RUN_CONTROL_BODIES[action];
    return {
      method: 'POST',
      path: `${WS}/runs/{run_id}/${action}`,
      operationId: `${action}Run`,
      summary: `${action[0]?.toUpperCase()}${action.slice(1)} a run.`,
      tag: 'runs',
      ...(schema ? { body: { schema, required: action === 'retry' } } : {}),
      responses: { 202: ok(S.RunControlSchema) },
      errors: [400, 404, 409, 410, 415, 422],
    };
  }),
  {
    method: 'GET',
    path: `${WS}/approvals`,
    operationId: 'listApprovals',
    summary: 'Tool calls waiting for a person (and, with `status=all`, decided ones).',
    tag: 'approvals',
    query: {
      status: { description: '`pending` (default) or `all`.' },
      limit: limit(200),
      run: { description: 'Only this run.' },
      agent: { description: 'Only this agent.' },
    },
    responses: { 200: ok(S.ApprovalListSchema) },
    errors: [400],
  },
  {
    method: 'GET',
    path: `${WS}/approvals/{id}`,
    operationId: 'getApproval',
    summary: 'One approval.',
    tag: 'approvals',
    responses: { 200: ok(S.ApprovalItemSchema) },
    errors: [404],
  },
  {
    method: 'POST',
    path: `${WS}/approvals/{id}`,
    operationId: 'answerApproval',
    summary: 'Approve or reject a tool call (optionally with edited arguments).',
    tag: 'approvals',
    body: { schema: S.ApprovalDecisionBodySchema, required: true },
    responses: { 202: ok(S.ApprovalAnswerSchema) },
    errors: [400, 404, 409, 410, 413, 415, 422],
  },
  {
    method: 'GET',
    path: `${WS}/streams/{stream_id}`,
    operationId: 'getStream',
    summary: "Where a streamed answer's deltas are published (404 on a stack without a delta channel).",
    tag: 'streams',
    responses: { 200: ok(S.StreamInfoSchema) },
    errors: [400, 404],
  },
  {
    method: 'GET',
    path: `${WS}/streams/{stream_id}/events`,
    operationId: 'streamEvents',
    summary: "A streamed answer's deltas as server-sent events.",
    tag: 'streams',
    responses: { 200: sse('`delta` events, then `final`.') },
    errors: [400, 404],
  },
  {
    method: 'POST',
    path: `${WS}/requests/{id}/cancel`,
    operationId: 'cancelRequest',
    summary: 'Ask a streaming request to stop.',
    tag: 'streams',
    body: { schema: S.CancelRequestBodySchema, required: false },
    responses: { 202: ok(S.RequestCancelSchema) },
    errors: [400, 404, 409, 410, 415],
  },
  {
    method: 'GET',
    path: `${WS}/export`,
    operationId: 'exportWorkspace',
    summary: 'Every breadcrumb version and deletion of the workspace, in the order written, page by page.',
    tag: 'workspaces',
    query: page,
    responses: { 200: ok(S.ExportPageSchema) },
    errors: [400, 404],
    paginated: true,
  },
  {
    method: 'DELETE',
    path: WS,
    operationId: 'deleteWorkspace',
    summary: 'Delete the workspace, one step a call: 202 while it goes on (call again), 200 once done.',
    tag: 'workspaces',
    responses: {
      200: ok(S.DeletionResultSchema, 'Deleted.'),
      202: ok(S.DeletionResultSchema, 'Under way: call again.'),
    },
    errors: [404, 409],
  },
  {
    method: 'POST',
    path: `${WS}/mcp`,
    operationId: 'mcpMessage',
    summary: "The workspace's MCP server (Streamable HTTP): a JSON-RPC 2.0 message, answered as JSON or SSE.",
    tag: 'mcp',
    servedBy: 'mcp',
    headers: {
      'Mcp-Session-Id': { description: 'The session `initialize` answered with.' },
      'MCP-Protocol-Version': { description: 'The protocol version agreed at `initialize`.' },
    },
    body: { schema: S.JsonRpcRequestSchema, required: true },
    responses: {
      200: {
        description: 'The JSON-RPC response (JSON, or SSE when the client accepts it).',
        schema: S.JsonRpcResponseSchema,
      },
      202: { description: 'A notification or response, accepted.' },
    },
    errors: [400, 404, 406, 415, 422],
    jsonRpcErrors: [400],
  },
  {
    method: 'GET',
    path: `${WS}/mcp`,
    operationId: 'mcpListen',
    summary: "The MCP server's stream of server-to-client messages (405 when it offers none).",
    tag: 'mcp',
    servedBy: 'mcp',
    responses: { 200: sse('JSON-RPC messages from the server.') },
    errors: [400, 404, 405, 406],
  },
  {
    method: 'DELETE',
    path: `${WS}/mcp`,
    operationId: 'mcpEndSession',
    summary: 'End an MCP session.',
    tag: 'mcp',
    servedBy: 'mcp',
    responses: { 200: { description: 'Ended.' } },
    errors: [400, 404, 405],
  },
  {
    method: 'GET',
    path: '/.well-known/oauth-protected-resource/v1/workspaces/{ws}/mcp',
    operationId: 'mcpProtectedResourceMetadata',
    summary: "RFC 9728 metadata of the workspace's MCP server: which authorization server issues its tokens.",
    tag: 'mcp',
    servedBy: 'mcp',
    public: true,
    responses: { 200: ok(S.ProtectedResourceMetadataSchema) },
    errors: [400, 404],
  },
  {
    method: 'POST',
    path: '/a2a/workspaces/{ws}/agents/{agent}',
    operationId: 'a2aMessage',
    summary:
      'An agent over A2A (JSON-RPC 2.0): message/send, message/stream (SSE), tasks/get, tasks/cancel, …',
    tag: 'a2a',
    servedBy: 'a2a',
    body: { schema: S.JsonRpcRequestSchema, required: true },
    responses: {
      200: {
        description: 'The JSON-RPC response (SSE for message/stream).',
        schema: S.JsonRpcResponseSchema,
      },
    },
    errors: [400, 404, 413, 415, 422],
  },
  {
    method: 'GET',
    path: '/a2a/workspaces/{ws}/agents/{agent}/.well-known/agent-card.json',
    operationId: 'getAgentCard',
    summary: "An agent's A2A card.",
    tag: 'a2a',
    servedBy: 'a2a',
    responses: { 200: ok(S.AgentCardSchema) },
    errors: [404],
  },
  {
    method: 'GET',
    path: '/a2a/public/workspaces/{ws}/agents/{agent}/.well-known/agent-card.json',
    operationId: 'getPublicAgentCard',
    summary: 'The card of an agent its definition publishes (404 for any other).',
    tag: 'a2a',
    servedBy: 'a2a',
    public: true,
    responses: { 200: ok(S.AgentCardSchema) },
    errors: [404],
  },
  {
    method: 'GET',
    path: `${WS}/guardrails`,
    operationId: 'listGuardrails',
    summary: "The workspace's guardrail policies (guardrail.def.v1) with their state and problems.",
    tag: 'guardrails',
    responses: { 200: ok(S.GuardrailListSchema) },
    errors: [],
  },
  {
    method: 'POST',
    path: `${WS}/guardrails/{id}/test`,
    operationId: 'testGuardrail',
    summary:
      'A dry run of a policy on a text: the text as it would go on, or the block, and what each check found.',
    tag: 'guardrails',
    body: { schema: S.GuardrailTestBodySchema, required: true },
    responses: { 200: ok(S.GuardrailTestResultSchema) },
    errors: [400, 404, 413, 415, 422],
  },
  {
    method: 'GET',
    path: `${WS}/threads/{thread}/guardrail-events`,
    operationId: 'listGuardrailEvents',
    summary: "A thread's guardrail interventions (guardrail.event.v1): types and positions, never text.",
    tag: 'guardrails',
    responses: { 200: ok(S.GuardrailEventListSchema) },
    errors: [],
  },
];

/**
 * The rooms' contract modules (each room's `contract.ts`, next to its routes): their `…Schema` exports are named in
 * the document like `schemas.ts`'s, and their route entries follow the core's.
 */
export const ROOM_CONTRACTS = [AttachmentContract, MemoryContract] as const;

/** Every route: the core's, then each room's. */
export const ROUTE_TABLE: readonly RouteContract[] = [
  ...CORE_ROUTES,
  ...AttachmentContract.ATTACHMENT_ROUTE_CONTRACTS,
  ...MemoryContract.MEMORY_ROUTE_CONTRACTS,
];

/** Path parameters' descriptions (the workspace parameter's pattern comes from its schema). */
export const PATH_PARAMETERS: Readonly<Record<string, Parameter>> = {
  ws: {
    schema: S.PARAMETERS.ws,
    description: 'The workspace: every data route is scoped to one.',
    required: true,
  },
  id: { description: 'A breadcrumb (or approval, request, thread) id.', required: true },
  n: { description: 'A version number, from 1.', required: true },
  run_id: { description: 'A run id (`run-<request id>`).', required: true },
  stream_id: { description: 'A stream id (8-64 letters, digits or "-").', required: true },
  agent: { description: 'An agent definition id.', required: true },
  thread: { description: 'A thread id (the breadcrumb that started it).', required: true },
};
