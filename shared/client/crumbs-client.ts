/**
 * The typed client of the crumbs HTTP API — the package's `crumbs/client` export, on the global `fetch`, safe in a
 * browser and in Node. The CLI uses it, as can any app built on crumbs (`docs/examples/client/`): one place that
 * knows the routes, the headers and the problem+json error shape. Its request and answer types are the contract's
 * (`shared/core/api/contract/schemas.ts`, from which `docs/openapi.json` is generated), through `api-types.ts`.
 *
 *   const client = new CrumbsClient({ endpoint: 'http://127.0.0.1:4710', token, workspace: 'default' });
 *   const crumb = await client.create({ schema_name: 'user.message.v1', context: { text: 'hi' } });
 *   await client.update(crumb.id, { title: 'greeting' }, { ifMatch: crumb.version });
 *   for await (const note of client.items({ schema_name: 'note.v1' })) console.log(note.title);
 *
 * Responses are trusted as the API's contract (the server validates what it stores, and the contract test checks
 * the answers against the document); the client only checks that a body is JSON where JSON is due. Retries:
 * - 429 (the workspace's request rate, or API Gateway's throttle) is refused before anything is read or written,
 *   so any request is sent again after its `Retry-After`;
 * - 500/502/503/504 may come after part of the work, so only a request that is idempotent (GET, HEAD, PUT, DELETE)
 *   or carries an `Idempotency-Key` is sent again, after `Retry-After` when given, else 0.5 s, 1 s, 2 s;
 * - a few times each (`MAX_RETRIES`), waiting at most `MAX_RETRY_WAIT_MS` at once, within the request's timeout.
 * Failures are classified, never swallowed:
 * - the API answered 4xx/5xx → `ApiProblemError` with the problem+json fields (`type`, `title`, `status`,
 *   `detail`, `errors[]`); a non-problem error body is folded into the same shape;
 * - the API could not be reached (refused, DNS, reset, timeout) → `ApiConnectionError` naming the endpoint.
 */

import type {
  ApprovalAnswer,
  ApprovalItem,
  ApprovalList,
  Breadcrumb,
  BreadcrumbVersion,
  ChangeChannelInfo,
  ChangeEvent,
  ContextView,
  CreateBreadcrumbInput,
  DefinitionSummary,
  Explanation,
  FailureSummary,
  RequestCancel,
  RequestUsageReport,
  StreamInfo,
  ThreadNode,
  ThreadView,
  UpdateBreadcrumbInput,
  UsageReport,
  UsageReportAmounts,
} from '#shared/client/api-types.ts';
import {
  type ChangeChannel,
  ChangeFeed,
  type ChangeFeedOptions,
  type ChangesAnswer,
} from '#shared/client/change-feed.ts';
import { parseEventStream } from '#shared/client/sse.ts';
import type {
  RunStarted as ContractRunStarted,
  GuardrailTestResult,
} from '#shared/core/api/contract/schemas.ts';
import type { ChangeFilters } from '#shared/core/stream/changes.ts';
import {
  type DeltaSubscription,
  type SubscribeOptions,
  subscribeToRequest,
} from '#shared/core/streaming/subscriber.ts';
import type { AttachmentRef } from '#shared/rooms/attachments/reference.ts';

export type {
  ApprovalAnswer,
  ApprovalItem,
  ApprovalList,
  Breadcrumb,
  BreadcrumbVersion,
  ChangeEvent,
  ContextView,
  CreateBreadcrumbInput,
  DefinitionSummary,
  FailureSummary,
  RequestCancel,
  RequestUsageReport,
  StreamInfo,
  ThreadNode,
  ThreadView,
  UpdateBreadcrumbInput,
  UsageReport,
  UsageReportAmounts,
};

/** What `POST …/runs` answers. */
export type RunStarted = Readonly<ContractRunStarted>;

/** What a wait_for step waits for (the run's `waiting_for`). */
export interface WaitingFor {
  selector: unknown;
  correlation?: { field: string; value: string | number | boolean };
  until: string;
}

/** A run as `GET …/runs/{id}` shows it (the `workflow.run.v1` context with its id and version). */
export interface RunView {
  readonly run_id: string;
  readonly workflow: string;
  readonly status: string;
  readonly steps?: Record<
    string,
    {
      status: string;
      attempts: number;
      output?: unknown;
      error?: string;
      attempt_id?: string;
      decision?: string;
      /** Agent and tool steps: the definition and version the step ran. */
      definition?: { id: string; version: number };
      /** wait_for steps: the selector, the correlation it waits for and the deadline. */
      waiting_for?: WaitingFor;
    }
  >;
  readonly output?: unknown;
  /** Human responses and controls the run refused because of who wrote them. */
  readonly refused?: readonly { id: string; by: string; what: string; reason: string; at: string }[];
  readonly error?: string;
  /** Model calls, tokens and cost (nano-dollars) counted against the run's budget. */
  readonly counters?: { steps: number; llm_calls: number; tokens?: number; cost_nusd?: number };
  /** The budget that paused the run (resume it raising that limit). */
  readonly stopped_by?: {
    budget: string;
    limit: number;
    used: number;
    unit: 'tokens' | 'usd' | 'calls';
    step?: string;
  };
  readonly raised_limits?: { max_tokens?: number; max_cost_usd?: number; max_llm_calls?: number; by: string };
  readonly [field: string]: unknown;
}

export interface RunListQuery {
  readonly workflow?: string;
  readonly status?: string;
  readonly limit?: number;
  readonly cursor?: string;
}

export type RunAction = 'approve' | 'reject' | 'pause' | 'resume' | 'cancel' | 'retry';

export interface ProblemFieldError {
  readonly path: string;
  readonly message: string;
}

/** RFC 9457 problem details as the crumbs API answers them. */
export interface Problem {
  readonly type: string;
  readonly title: string;
  readonly status: number;
  readonly detail?: string;
  readonly errors?: readonly ProblemFieldError[];
  readonly [extension: string]: unknown;
}

export interface Page<T> {
  readonly items: T[];
  readonly next_cursor: string | null;
  /**
   * Listings: the listing stopped at its read bound (index entries read in one call) before it filled the page;
   * the page is short and `next_cursor` goes on.
   */
  readonly read_bound?: { readonly entries_read: number; readonly bound: number };
}

/** Calls `listFirst` makes at most: each reads at most the listing's read bound. */
export const LIST_FIRST_MAX_CALLS = 4;

export interface ListQuery {
  readonly schema_name?: string;
  readonly tag?: string;
  readonly limit?: number;
  readonly cursor?: string;
  /** `full` lists stored records; context views (llm_hints applied) otherwise, as the API does by default. */
  readonly view?: 'context' | 'full';
}

/** A listing of stored records (`view: 'full'`). */
export type FullListQuery = ListQuery & { readonly view: 'full' };

/** Filters of the change stream, and where to continue (`lastEventId`). */
export interface ChangesQuery {
  readonly lastEventId?: string | undefined;
  readonly schema_name?: string;
  readonly tag?: string;
  readonly thread?: string;
  readonly writer?: string;
  /** Seconds to wait for a change (default: the server's, 20). */
  readonly wait?: number;
  /** Without lastEventId: the newest N changes first. */
  readonly backlog?: number;
  readonly view?: 'summary' | 'full';
}

export interface HistoryQuery {
  readonly limit?: number;
  readonly cursor?: string;
}

/** `?view=full`: the stored records; every read of breadcrumbs answers context views without it. */
const FULL_VIEW = '?view=full';

export interface Health {
  readonly status: string;
  readonly local?: Record<string, string>;
  readonly [key: string]: unknown;
}

export interface RequestOptions {
  /** Aborts the request (combined with the client's timeout). */
  readonly signal?: AbortSignal;
}

export interface CreateOptions extends RequestOptions {
  /** A repeated create with the same key answers the original breadcrumb instead of making a second one. */
  readonly idempotencyKey?: string;
}

export interface UpdateOptions extends RequestOptions {
  /** Expected current version: the update applies only if the stored version is this one (else 412). */
  readonly ifMatch?: number;
}

export type FetchLike = (input: string, init: RequestInit) => Promise<Response>;

/** Gives the bearer token for the next request (or none). */
export type TokenProvider = () => Promise<string | undefined>;

export interface CrumbsClientOptions {
  /** Base URL of the API, e.g. `http://127.0.0.1:4710` or an API Gateway stage URL. */
  readonly endpoint: string;
  /**
   * Bearer token, or a function giving one for each request (a signed-in session, refreshed as it expires);
   * without one only `/health` answers.
   */
  readonly token?: string | TokenProvider | undefined;
  /** @default 'default' */
  readonly workspace?: string | undefined;
  /** @default globalThis.fetch */
  readonly fetch?: FetchLike | undefined;
  /** Per-request timeout. @default 30000 */
  readonly timeoutMs?: number | undefined;
}

/** Base of the client's errors. */
export abstract class CrumbsClientError extends Error {
  /** Whether trying the same request again may succeed. */
  abstract readonly retriable: boolean;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** The API answered with an error status. Carries the problem+json body. */
/** A memory record as `GET …/memory` answers it (`shared/rooms/memory/routes.ts`). */
export interface MemoryItem {
  id: string;
  version: number;
  updated_at: string;
  memory_id: string;
  strategy: string;
  actor: string;
  key: string;
  text: string;
  source_turns: string[];
  session: string;
}

export interface MemoryList {
  actor: string;
  items: MemoryItem[];
}

export class ApiProblemError extends CrumbsClientError {
  readonly problem: Problem;
  readonly method: string;
  readonly url: string;

  constructor(problem: Problem, request: { method: string; url: string }) {
    super(problem.detail ? `${problem.title}: ${problem.detail}` : problem.title);
    this.problem = problem;
    this.method = request.method;
    this.url = request.url;
  }

  get status(): number {
    return this.problem.status;
  }
  get type(): string {
    return this.problem.type;
  }
  get title(): string {
    return this.problem.title;
  }
  get detail(): string | undefined {
    return this.problem.detail;
  }
  get errors(): readonly ProblemFieldError[] {
    return this.problem.errors ?? [];
  }
  get retriable(): boolean {
    return this.problem.status === 429 || this.problem.status >= 500;
  }
}

/** The API could not be reached at all: nothing listens, DNS failed, the connection broke or timed out. */
export class ApiConnectionError extends CrumbsClientError {
  readonly retriable = true;
  readonly endpoint: string;
  /** The system error code when there is one (`ECONNREFUSED`, `ENOTFOUND`, `TIMEOUT`, …). */
  readonly code: string | undefined;

  constructor(endpoint: string, code: string | undefined, options?: { cause?: unknown }) {
    super(describeConnectionFailure(endpoint, code), options);
    this.endpoint = endpoint;
    this.code = code;
  }
}

/** The API answered 2xx with a body that is not what the route promises (not JSON, or not an object). */
export class ApiResponseError extends CrumbsClientError {
  readonly retriable = false;
}

const DEFAULT_TIMEOUT_MS = 30_000;
/** A stream of events is held open longer than a request: the front door caps streams at 10 minutes. */
const STREAM_TIMEOUT_MS = 11 * 60_000;
/** Files up to this size travel inside the API request (base64 in JSON under Lambda's 6 MB request limit). */
const INLINE_ATTACHMENT_BYTES = 4 * 1024 * 1024;

export class CrumbsClient {
  readonly endpoint: string;
  readonly workspace: string;
  readonly #token: string | TokenProvider | undefined;
  readonly #fetch: FetchLike;
  readonly #timeoutMs: number;

  constructor(options: CrumbsClientOptions) {
    let url: URL;
    try {
      url = new URL(options.endpoint);
    } catch (cause) {
      throw new TypeError(`invalid endpoint ${JSON.stringify(options.endpoint)}: expected an http(s) URL`, {
        cause,
      });
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new TypeError(`invalid endpoint ${JSON.stringify(options.endpoint)}: expected an http(s) URL`);
    }
    this.endpoint = options.endpoint.replace(/\/+$/, '');
    this.workspace = options.workspace ?? 'default';
    this.#token = options.token || undefined;
    this.#fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  }

  /** The same client for another workspace. */
  withWorkspace(workspace: string): CrumbsClient {
    return new CrumbsClient({
      endpoint: this.endpoint,
      token: this.#token,
      workspace,
      fetch: this.#fetch,
      timeoutMs: this.#timeoutMs,
    });
  }

  health(options: RequestOptions = {}): Promise<Health> {
    return this.#json<Health>('GET', '/health', { ...options, auth: false });
  }

  create(input: CreateBreadcrumbInput, options: CreateOptions = {}): Promise<Breadcrumb> {
    const headers: Record<string, string> = {};
    if (options.idempotencyKey !== undefined) headers['idempotency-key'] = options.idempotencyKey;
    return this.#json<Breadcrumb>('POST', this.#crumbs(), { ...options, body: input, headers });
  }

  /** The context view (`llm_hints` applied). */
  get(id: string, options: RequestOptions = {}): Promise<ContextView> {
    return this.#json<ContextView>('GET', this.#crumbs(id), options);
  }

  /** The full view: the stored record. */
  getFull(id: string, options: RequestOptions = {}): Promise<Breadcrumb> {
    return this.#json<Breadcrumb>('GET', this.#crumbs(id) + FULL_VIEW, options);
  }

  /** The full record as it was at `version`. */
  getVersion(id: string, version: number, options: RequestOptions = {}): Promise<BreadcrumbVersion> {
    return this.#json<BreadcrumbVersion>(
      'GET',
      this.#crumbs(id, 'versions', String(version)) + FULL_VIEW,
      options,
    );
  }

  update(id: string, patch: UpdateBreadcrumbInput, options: UpdateOptions = {}): Promise<Breadcrumb> {
    const headers: Record<string, string> = {};
    if (options.ifMatch !== undefined) headers['if-match'] = String(options.ifMatch);
    return this.#json<Breadcrumb>('PATCH', this.#crumbs(id), { ...options, body: patch, headers });
  }

  /** Create with a chosen id (201) or replace (200); an identical PUT changes nothing. */
  put(id: string, input: CreateBreadcrumbInput, options: UpdateOptions = {}): Promise<Breadcrumb> {
    const headers: Record<string, string> = {};
    if (options.ifMatch !== undefined) headers['if-match'] = String(options.ifMatch);
    return this.#json<Breadcrumb>('PUT', this.#crumbs(id), { ...options, body: input, headers });
  }

  async delete(id: string, options: RequestOptions = {}): Promise<void> {
    await this.#request('DELETE', this.#crumbs(id), options);
  }

  /**
   * Stores a file as an attachment of the workspace and answers its reference: in the request up to 4 MB, larger
   * through a presigned POST (the storage holds it to its declared size) that is then finalized.
   */
  async attach(
    bytes: Uint8Array,
    mediaType: string,
    name: string | undefined,
    options: RequestOptions = {},
  ): Promise<AttachmentRef> {
    const named = name !== undefined ? { name } : {};
    if (bytes.byteLength <= INLINE_ATTACHMENT_BYTES) {
      return this.#json<AttachmentRef>('POST', this.#workspacePath('attachments'), {
        ...options,
        body: { media_type: mediaType, ...named, data_base64: Buffer.from(bytes).toString('base64') },
      });
    }
    const staged = await this.#json<{ upload_id: string; url: string; fields: Record<string, string> }>(
      'POST',
      this.#workspacePath('attachments', 'uploads'),
      { ...options, body: { media_type: mediaType, bytes: bytes.byteLength } },
    );
    const form = new FormData();
    for (const [k, v] of Object.entries(staged.fields)) form.append(k, v);
    form.append('file', new Blob([Uint8Array.from(bytes)]));
    const posted = await this.#fetch(staged.url, { method: 'POST', body: form });
    if (!posted.ok) {
      throw new ApiResponseError(`the storage refused the upload (${posted.status}): ${await posted.text()}`);
    }
    return this.#json<AttachmentRef>(
      'POST',
      this.#workspacePath('attachments', 'uploads', staged.upload_id),
      {
        ...options,
        body: named,
      },
    );
  }

  /**
   * An attachment's reference and a presigned `download_url`; `withData`: its bytes too (`data_base64`), when
   * within what an API answer carries (else `data_omitted` says why).
   */
  attachment(
    id: string,
    options: RequestOptions = {},
    withData = false,
  ): Promise<
    AttachmentRef & { download_url: string; expires_at?: string; data_base64?: string; data_omitted?: string }
  > {
    return this.#json(
      'GET',
      this.#workspacePath('attachments', id) + (withData ? '?data=true' : ''),
      options,
    );
  }

  /** One page of the workspace's blobs, each with a presigned download URL (export). */
  attachmentsPage(
    cursor?: string,
    options: RequestOptions = {},
  ): Promise<{ items: { id: string; bytes: number; download_url: string }[]; next_cursor: string | null }> {
    return this.#json('GET', this.#workspacePath('attachments') + queryString({ cursor }), options);
  }

  /** The bytes behind a presigned download URL (no token: the URL is its own credential). */
  async download(url: string): Promise<Uint8Array> {
    const response = await this.#fetch(url, { method: 'GET' });
    if (!response.ok) throw new ApiResponseError(`the storage answered ${response.status} for a download`);
    return new Uint8Array(await response.arrayBuffer());
  }

  /** One page of the workspace's export: stored versions (and deletion lines), oldest first. */
  exportPage(
    cursor?: string,
    options: RequestOptions & { limit?: number } = {},
  ): Promise<{ items: Record<string, unknown>[]; next_cursor: string | null }> {
    return this.#json(
      'GET',
      this.#workspacePath('export') + queryString({ cursor, limit: options.limit }),
      options,
    );
  }

  /** One bounded step of the workspace's deletion (`done: false` while more remains: call again). */
  deleteWorkspaceStep(
    query: { force?: boolean; steps?: number } = {},
    options: RequestOptions = {},
  ): Promise<WorkspaceDeletionStep> {
    // A step works for up to 10 s (CALL_BUDGET_MS) before it answers.
    return this.#json(
      'DELETE',
      this.#workspacePath() + queryString({ force: query.force ? 'true' : undefined, steps: query.steps }),
      { ...options, timeoutMs: 40_000 },
    );
  }

  /** One page, newest first: context views, or stored records with `view: 'full'`. */
  list(query: FullListQuery, options?: RequestOptions): Promise<Page<Breadcrumb>>;
  list(query?: ListQuery, options?: RequestOptions): Promise<Page<ContextView>>;
  list(query: ListQuery = {}, options: RequestOptions = {}): Promise<Page<ContextView | Breadcrumb>> {
    return this.#json<Page<ContextView | Breadcrumb>>('GET', this.#crumbs() + queryString(query), options);
  }

  /**
   * The first `wanted` breadcrumbs of a listing (`query.limit` defaults to `wanted`): a page that stopped at its
   * read bound is followed by the next, up to LIST_FIRST_MAX_CALLS calls; the answer keeps the last cursor and, when
   * the calls ran out short of `wanted`, the last `read_bound`.
   */
  async listFirst(query: FullListQuery, wanted: number, options?: RequestOptions): Promise<Page<Breadcrumb>>;
  async listFirst(query: ListQuery, wanted: number, options?: RequestOptions): Promise<Page<ContextView>>;
  async listFirst(
    query: ListQuery,
    wanted: number,
    options: RequestOptions = {},
  ): Promise<Page<ContextView | Breadcrumb>> {
    const items: (ContextView | Breadcrumb)[] = [];
    let page: Page<ContextView | Breadcrumb> | undefined;
    for (let call = 0; call < LIST_FIRST_MAX_CALLS; call++) {
      const cursor: string | undefined = page ? (page.next_cursor ?? undefined) : query.cursor;
      page = await this.list({ limit: wanted, ...query, ...(cursor ? { cursor } : {}) }, options);
      items.push(...page.items);
      if (items.length >= wanted || !page.next_cursor) break;
    }
    return {
      items: items.slice(0, wanted),
      next_cursor: page?.next_cursor ?? null,
      ...(page?.read_bound !== undefined && items.length < wanted ? { read_bound: page.read_bound } : {}),
    };
  }

  /** Every page, following `next_cursor`; `query.limit` is the page size. */
  listAll(query: FullListQuery, options?: RequestOptions): AsyncGenerator<Breadcrumb[], void, undefined>;
  listAll(query?: ListQuery, options?: RequestOptions): AsyncGenerator<ContextView[], void, undefined>;
  listAll(
    query: ListQuery = {},
    options: RequestOptions = {},
  ): AsyncGenerator<(ContextView | Breadcrumb)[], void, undefined> {
    return paginate(
      (cursor) => this.list({ ...query, ...(cursor ? { cursor } : {}) }, options),
      query.cursor,
    );
  }

  /**
   * Every breadcrumb of a listing, one at a time: `next_cursor` is followed page after page (a short page that
   * stopped at its read bound too) until the last, so `for await` reads the whole listing.
   */
  items(query: FullListQuery, options?: RequestOptions): AsyncGenerator<Breadcrumb, void, undefined>;
  items(query?: ListQuery, options?: RequestOptions): AsyncGenerator<ContextView, void, undefined>;
  async *items(
    query: ListQuery = {},
    options: RequestOptions = {},
  ): AsyncGenerator<ContextView | Breadcrumb, void, undefined> {
    for await (const page of this.listAll(query, options)) yield* page;
  }

  /** Versions of one breadcrumb, newest first, as stored (who wrote each, its checksum). */
  history(
    id: string,
    query: HistoryQuery = {},
    options: RequestOptions = {},
  ): Promise<Page<BreadcrumbVersion>> {
    return this.#json<Page<BreadcrumbVersion>>(
      'GET',
      this.#crumbs(id, 'history') + queryString({ ...query, view: 'full' }),
      options,
    );
  }

  historyAll(
    id: string,
    query: HistoryQuery = {},
    options: RequestOptions = {},
  ): AsyncGenerator<BreadcrumbVersion[], void, undefined> {
    return paginate(
      (cursor) => this.history(id, { ...query, ...(cursor ? { cursor } : {}) }, options),
      query.cursor,
    );
  }

  /** A thread's causal tree; `id` is the thread id or any breadcrumb in it. */
  thread(id: string, options: RequestOptions = {}): Promise<ThreadView> {
    return this.#json<ThreadView>('GET', this.#workspacePath('threads', id), options);
  }

  /**
   * One long poll of the change stream: the changes after `lastEventId` (waiting up to `wait` seconds for one),
   * and the id to continue from.
   */
  async changes(
    query: ChangesQuery = {},
    options: RequestOptions = {},
  ): Promise<{ events: ChangeEvent[]; lastEventId: string | undefined }> {
    const { lastEventId, ...filters } = query;
    const response = await this.#request('GET', this.#workspacePath('changes') + queryString(filters), {
      ...options,
      headers: { accept: 'text/event-stream', ...(lastEventId ? { 'last-event-id': lastEventId } : {}) },
      timeoutMs: ((query.wait ?? 20) + 15) * 1000,
    });
    const parsed = parseEventStream(await response.text());
    const events: ChangeEvent[] = [];
    for (const m of parsed.messages) {
      try {
        events.push(JSON.parse(m.data) as ChangeEvent);
      } catch (cause) {
        throw new ApiResponseError('the change stream sent an event that is not JSON', { cause });
      }
    }
    return { events, lastEventId: parsed.lastEventId ?? lastEventId };
  }

  /** Where the workspace's changes are pushed (`GET …/changes/channel`); undefined when the stack pushes none. */
  async changeChannel(options: RequestOptions = {}): Promise<ChangeChannelInfo | undefined> {
    try {
      return await this.#json<ChangeChannelInfo>('GET', this.#workspacePath('changes', 'channel'), options);
    } catch (error) {
      if (error instanceof ApiProblemError && error.status === 404) return undefined;
      throw error;
    }
  }

  /**
   * One answer of `GET …/changes?wait=0` (answered at once): the changes after `after` (or the newest `backlog`),
   * each with its position, and the position read up to. What a change feed catches up with.
   */
  async readChanges(
    query: { after?: string; backlog?: number; filters?: ChangeFilters },
    options: RequestOptions = {},
  ): Promise<ChangesAnswer> {
    const f = query.filters ?? {};
    const params = {
      wait: 0,
      ...(f.schema_name ? { schema_name: f.schema_name.join(',') } : {}),
      ...(f.tag ? { tag: f.tag } : {}),
      ...(f.thread ? { thread: f.thread } : {}),
      ...(f.writer ? { writer: f.writer } : {}),
      ...(query.backlog ? { backlog: query.backlog } : {}),
    };
    const response = await this.#request('GET', this.#workspacePath('changes') + queryString(params), {
      ...options,
      headers: { accept: 'text/event-stream', ...(query.after ? { 'last-event-id': query.after } : {}) },
    });
    const parsed = parseEventStream(await response.text());
    const changes: ChangesAnswer['changes'] = [];
    for (const m of parsed.messages) {
      try {
        changes.push({ cursor: m.id ?? '', event: JSON.parse(m.data) as ChangeEvent });
      } catch (cause) {
        throw new ApiResponseError('the change stream sent an event that is not JSON', { cause });
      }
    }
    return { changes, cursor: parsed.lastEventId };
  }

  /**
   * A feed of the workspace's pushed changes with this client's token (`shared/client/change-feed.ts`), catching
   * up through `readChanges`; `webSocket`: the `ws` package's class on Node.
   */
  changeFeed(
    channel: ChangeChannel,
    options: Pick<ChangeFeedOptions, 'webSocket' | 'reconcileMs' | 'timers'> = {},
  ): ChangeFeed {
    return new ChangeFeed({
      ...options,
      channel,
      token: () => this.token(),
      read: (query) => this.readChanges(query),
    });
  }

  /** Whether a definition's selectors match a breadcrumb, selector by selector (`GET …/definitions/{id}/explain`). */
  explain(definition: string, breadcrumb: string, options: RequestOptions = {}): Promise<Explanation> {
    return this.#json(
      'GET',
      this.#workspacePath('definitions', definition, 'explain') + queryString({ breadcrumb }),
      options,
    );
  }

  /** Every definition with its rule state. */
  definitions(options: RequestOptions = {}): Promise<{ items: DefinitionSummary[] }> {
    return this.#json('GET', this.#workspacePath('definitions'), options);
  }

  /** Error answers, loop stops and dead-letter answers, newest first. */
  errors(query: { limit?: number } = {}, options: RequestOptions = {}): Promise<{ items: FailureSummary[] }> {
    return this.#json('GET', this.#workspacePath('errors') + queryString(query), options);
  }

  /** Starts a run of a workflow (writes its `workflow.request.v1`). */
  startRun(workflow: string, input: unknown, options: RequestOptions = {}): Promise<RunStarted> {
    return this.#json('POST', this.#workspacePath('runs'), { ...options, body: { workflow, input } });
  }

  /** A run (`status: "requested"` until its executor has started it). */
  getRun(runId: string, options: RequestOptions = {}): Promise<RunView> {
    return this.#json('GET', this.#workspacePath('runs', runId), options);
  }

  /** One page of runs, newest first. */
  listRuns(query: RunListQuery = {}, options: RequestOptions = {}): Promise<Page<RunView>> {
    return this.#json('GET', this.#workspacePath('runs') + queryString(query), options);
  }

  /** Every run of a listing, newest first, one at a time (pages followed by their cursors). */
  async *runs(
    query: RunListQuery = {},
    options: RequestOptions = {},
  ): AsyncGenerator<RunView, void, undefined> {
    for await (const page of paginate(
      (cursor) => this.listRuns({ ...query, ...(cursor ? { cursor } : {}) }, options),
      query.cursor,
    )) {
      yield* page;
    }
  }

  /** approve / reject / pause / resume / cancel / retry a run; the answer says what was written. */
  runAction(
    runId: string,
    action: RunAction,
    body: Record<string, unknown> = {},
    options: RequestOptions = {},
  ): Promise<Record<string, unknown>> {
    return this.#json('POST', this.#workspacePath('runs', runId, action), { ...options, body });
  }

  /**
   * Where a request's answer streams (`GET …/streams/{stream_id}`): the channel's endpoints, or undefined when this
   * stack has no delta channel (404).
   */
  async streamInfo(streamId: string, options: RequestOptions = {}): Promise<StreamInfo | undefined> {
    try {
      return await this.#json<StreamInfo>('GET', this.#workspacePath('streams', streamId), options);
    } catch (error) {
      if (error instanceof ApiProblemError && error.status === 404) return undefined;
      throw error;
    }
  }

  /**
   * Subscribes to a request's stream with this client's token, before the request is written (so nothing is
   * missed); events arrive in order. `webSocket`: the `ws` package's class on Node.
   */
  async subscribeToStream(
    info: StreamInfo,
    options: Omit<SubscribeOptions, 'realtimeUrl' | 'httpHost' | 'token' | 'workspace' | 'requestId'>,
  ): Promise<DeltaSubscription> {
    return subscribeToRequest({
      ...options,
      realtimeUrl: info.realtime_url,
      httpHost: info.http_host,
      token: (await this.token()) ?? '',
      workspace: this.workspace,
      requestId: info.stream_id,
    });
  }

  /**
   * A request's stream as server-sent events (`GET …/streams/{stream_id}/events`), event by event as they arrive,
   * until the server ends the stream (after its `final`) or `signal` aborts. The alternative to a channel
   * subscription (`subscribeToStream`) where a WebSocket is not at hand.
   */
  async *streamEvents(
    streamId: string,
    options: RequestOptions = {},
  ): AsyncGenerator<{ event: string; data: unknown; id: string | undefined }, void, undefined> {
    const response = await this.#request('GET', this.#workspacePath('streams', streamId, 'events'), {
      ...options,
      headers: { accept: 'text/event-stream' },
      timeoutMs: STREAM_TIMEOUT_MS,
    });
    const reader = response.body?.getReader();
    if (reader === undefined) return;
    const decoder = new TextDecoder();
    let buffered = '';
    try {
      for (;;) {
        const { done, value } = await reader.read();
        buffered += done ? decoder.decode() : decoder.decode(value, { stream: true });
        // Whole events only: an event ends at a blank line.
        const end = buffered.replace(/\r\n?/g, '\n').lastIndexOf('\n\n');
        if (end >= 0 || done) {
          const text = buffered.replace(/\r\n?/g, '\n');
          const complete = done ? text : text.slice(0, end + 2);
          buffered = done ? '' : text.slice(end + 2);
          for (const m of parseEventStream(complete).messages) {
            let data: unknown = m.data;
            try {
              data = JSON.parse(m.data);
            } catch {}
            yield { event: m.event, data, id: m.id };
          }
        }
        if (done) return;
      }
    } finally {
      await reader.cancel().catch(() => undefined);
    }
  }

  /** Asks a streaming request to stop (`POST …/requests/{id}/cancel`). */
  cancelRequest(requestId: string, reason?: string, options: RequestOptions = {}): Promise<RequestCancel> {
    return this.#json('POST', this.#workspacePath('requests', requestId, 'cancel'), {
      ...options,
      body: reason !== undefined ? { reason } : {},
    });
  }

  /** Model calls, tokens and cost per day, agent, run, thread or request (`GET …/usage`). */
  usage(query: UsageQuery = {}, options: RequestOptions = {}): Promise<UsageReport> {
    return this.#json('GET', this.#workspacePath('usage') + queryString(query), options);
  }

  /** A person's memory records (`GET …/memory`): the caller's own unless `actor` names another (an operator). */
  memory(
    query: { actor?: string; memory_id?: string } = {},
    options: RequestOptions = {},
  ): Promise<MemoryList> {
    return this.#json('GET', this.#workspacePath('memory') + queryString(query), options);
  }

  /** One memory record (`GET …/memory/{id}`). */
  memoryRecord(
    id: string,
    query: { actor?: string } = {},
    options: RequestOptions = {},
  ): Promise<MemoryItem> {
    return this.#json('GET', this.#workspacePath('memory', id) + queryString(query), options);
  }

  /** Forgets a person's memory (`DELETE …/memory`): records, versions, vectors and the turns they came from. */
  forgetMemory(
    query: { actor?: string; memory_id?: string } = {},
    options: RequestOptions = {},
  ): Promise<{ actor: string; forgotten: number; turns_removed: number }> {
    return this.#json('DELETE', this.#workspacePath('memory') + queryString(query), options);
  }

  /** One request's model calls, per write that recorded them (`GET …/usage/requests/{id}`). */
  requestUsage(id: string, options: RequestOptions = {}): Promise<RequestUsageReport> {
    return this.#json('GET', this.#workspacePath('usage', 'requests', id), options);
  }

  /** Approvals of agents' tool calls (`GET …/approvals`), the pending ones unless `status: "all"`. */
  approvals(
    query: { status?: 'pending' | 'all'; run?: string; agent?: string; limit?: number } = {},
    options: RequestOptions = {},
  ): Promise<ApprovalList> {
    return this.#json('GET', this.#workspacePath('approvals') + queryString(query), options);
  }

  /** Approve (optionally with edited arguments) or reject an approval (`POST …/approvals/{id}`). */
  decideApproval(
    id: string,
    body: { decision: 'approve' | 'reject'; arguments?: Record<string, unknown>; reason?: string },
    options: RequestOptions = {},
  ): Promise<ApprovalAnswer> {
    return this.#json('POST', this.#workspacePath('approvals', id), { ...options, body });
  }

  /** A dry run of a guardrail policy on a text (`POST …/guardrails/{id}/test`): masked text, block, findings. */
  testGuardrail(
    id: string,
    body: { text: string; point?: string },
    options: RequestOptions = {},
  ): Promise<GuardrailTestResult> {
    return this.#json('POST', this.#workspacePath('guardrails', id, 'test'), { ...options, body });
  }

  /** The bearer token the next request sends (a provider's current one). */
  async token(): Promise<string | undefined> {
    return typeof this.#token === 'function' ? await this.#token() : this.#token;
  }

  #workspacePath(...segments: string[]): string {
    const parts = ['v1', 'workspaces', this.workspace, ...segments];
    return `/${parts.map(encodeURIComponent).join('/')}`;
  }

  #crumbs(...segments: string[]): string {
    const parts = ['v1', 'workspaces', this.workspace, 'breadcrumbs', ...segments];
    return `/${parts.map(encodeURIComponent).join('/')}`;
  }

  async #json<T>(method: string, path: string, options: InternalOptions): Promise<T> {
    const response = await this.#request(method, path, options);
    const text = await response.text();
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch (cause) {
      throw new ApiResponseError(
        `${method} ${path} answered ${response.status} with a body that is not JSON`,
        {
          cause,
        },
      );
    }
    if (body === null || typeof body !== 'object') {
      throw new ApiResponseError(
        `${method} ${path} answered ${response.status} with JSON that is not an object`,
      );
    }
    // The shape is the API's contract (see the header comment); the server validated what it stored.
    return body as T;
  }

  async #request(method: string, path: string, options: InternalOptions): Promise<Response> {
    const url = this.endpoint + path;
    const headers: Record<string, string> = { accept: 'application/json', ...options.headers };
    if (options.auth !== false) {
      const token = await this.token();
      if (token) headers.authorization = `Bearer ${token}`;
    }
    // A caller who cancelled while the token was read (a signed-in session may refresh it) gets the abort as is.
    options.signal?.throwIfAborted();
    let body: string | undefined;
    if (options.body !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(options.body);
    }
    const timeout = AbortSignal.timeout(Math.max(this.#timeoutMs, options.timeoutMs ?? 0));
    const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;

    for (let attempt = 0; ; attempt++) {
      let response: Response;
      try {
        response = await this.#fetch(url, {
          method,
          headers,
          ...(body !== undefined ? { body } : {}),
          signal,
        });
      } catch (error) {
        if (options.signal?.aborted) throw error; // the caller cancelled: not a connection problem
        throw new ApiConnectionError(this.endpoint, timeout.aborted ? 'TIMEOUT' : systemErrorCode(error), {
          cause: error,
        });
      }
      // The retry rules of the header comment: 429 for any request, a 5xx for a request that may be repeated.
      const wait = retryWait(response, attempt, method, headers);
      if (wait !== undefined && attempt < MAX_RETRIES && wait <= MAX_RETRY_WAIT_MS) {
        await response.body?.cancel();
        await new Promise((resolve) => setTimeout(resolve, wait));
        if (signal.aborted) throw new ApiConnectionError(this.endpoint, 'TIMEOUT');
        continue;
      }
      if (!response.ok) throw new ApiProblemError(await readProblem(response), { method, url });
      return response;
    }
  }
}

/** How often, and how long at most each time, a refused request is sent again. */
export const MAX_RETRIES = 3;
export const MAX_RETRY_WAIT_MS = 10_000;
const IDEMPOTENT_METHODS = new Set(['GET', 'HEAD', 'PUT', 'DELETE', 'OPTIONS']);
const RETRIED_5XX = new Set([500, 502, 503, 504]);

/** How long to wait before sending the request again, or undefined when it must not be sent again. */
function retryWait(
  response: Response,
  attempt: number,
  method: string,
  headers: Record<string, string>,
): number | undefined {
  if (response.status === 429) return retryAfterMs(response.headers.get('retry-after'), 1000);
  if (!RETRIED_5XX.has(response.status)) return undefined;
  if (!IDEMPOTENT_METHODS.has(method) && headers['idempotency-key'] === undefined) return undefined;
  return retryAfterMs(response.headers.get('retry-after'), 500 * 2 ** attempt);
}

/** `Retry-After` in whole seconds (what crumbs and API Gateway send) as ms; a date or nothing: `otherwise`. */
function retryAfterMs(header: string | null, otherwise: number): number {
  if (header === null || !/^\d{1,6}$/.test(header.trim())) return otherwise;
  return Math.max(1, Number(header.trim())) * 1000;
}

interface InternalOptions extends RequestOptions {
  readonly body?: unknown;
  /** A longer timeout than the client's for this request (long polls). */
  readonly timeoutMs?: number;
  readonly headers?: Record<string, string>;
  readonly auth?: boolean;
}

async function* paginate<T>(
  fetchPage: (cursor: string | undefined) => Promise<Page<T>>,
  firstCursor: string | undefined,
): AsyncGenerator<T[], void, undefined> {
  const seen = new Set<string>();
  let cursor = firstCursor;
  for (;;) {
    const page = await fetchPage(cursor);
    yield page.items;
    if (!page.next_cursor) return;
    // A server that hands out the same cursor twice would loop forever; stop loudly instead.
    if (seen.has(page.next_cursor)) {
      throw new ApiResponseError(`the API returned the cursor ${JSON.stringify(page.next_cursor)} twice`);
    }
    seen.add(page.next_cursor);
    cursor = page.next_cursor;
  }
}

function queryString(query: object): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value !== undefined && value !== '') params.set(key, String(value));
  }
  const text = params.toString();
  return text ? `?${text}` : '';
}

/** Reads an error response as problem+json; anything else (a proxy's HTML page, plain text) is folded in. */
async function readProblem(response: Response): Promise<Problem> {
  const text = await response.text().catch(() => '');
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) {
    const p = parsed as Record<string, unknown>;
    const errors = Array.isArray(p.errors)
      ? p.errors.flatMap((e): ProblemFieldError[] =>
          e !== null && typeof e === 'object'
            ? [
                {
                  path: String((e as Record<string, unknown>).path ?? ''),
                  message: String((e as Record<string, unknown>).message ?? ''),
                },
              ]
            : [],
        )
      : undefined;
    const detail =
      typeof p.detail === 'string' ? p.detail : typeof p.message === 'string' ? p.message : undefined;
    return {
      ...p,
      type: typeof p.type === 'string' ? p.type : 'about:blank',
      title: typeof p.title === 'string' ? p.title : response.statusText || `HTTP ${response.status}`,
      status: typeof p.status === 'number' ? p.status : response.status,
      ...(detail !== undefined ? { detail } : {}),
      ...(errors ? { errors } : {}),
    };
  }
  const excerpt = text.trim().slice(0, 200);
  return {
    type: 'about:blank',
    title: response.statusText || `HTTP ${response.status}`,
    status: response.status,
    ...(excerpt ? { detail: excerpt } : {}),
  };
}

/** Node's fetch wraps the socket error: `TypeError('fetch failed', { cause: { code } })`, sometimes aggregated. */
function systemErrorCode(error: unknown): string | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current !== null && typeof current === 'object'; depth++) {
    const record = current as { code?: unknown; cause?: unknown; errors?: unknown };
    if (typeof record.code === 'string' && record.code !== 'UND_ERR_SOCKET') return record.code;
    if (Array.isArray(record.errors) && record.errors.length > 0) current = record.errors[0];
    else current = record.cause;
  }
  return undefined;
}

function describeConnectionFailure(endpoint: string, code: string | undefined): string {
  switch (code) {
    case 'ECONNREFUSED':
      return `cannot reach the crumbs API at ${endpoint}: connection refused`;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `cannot reach the crumbs API at ${endpoint}: host not found`;
    case 'TIMEOUT':
      return `the crumbs API at ${endpoint} did not answer in time`;
    default:
      return `cannot reach the crumbs API at ${endpoint}${code ? ` (${code})` : ''}`;
  }
}

/** The answer of one deletion step (`DELETE /v1/workspaces/{ws}`). */
export interface WorkspaceDeletionStep {
  workspace: string;
  done: boolean;
  phase: string;
  deleted: number;
  resumed: boolean;
  /** Timers and schedules of the workspace cancelled so far. */
  timers_cancelled?: number;
  /** Once done: until when the workspace refuses every write (410); its name is free after. */
  tombstone_until?: string;
  waiting?: string;
  warnings?: string[];
}

export interface UsageQuery {
  by?: string;
  from?: string;
  to?: string;
  limit?: number;
}
