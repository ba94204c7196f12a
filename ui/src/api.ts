/**
 * The dashboard's API client: the crumbs API on the same origin, under the page's base path (`apiBaseOf`), with the
 * bearer token the user gave once.
 * Every data call needs the token (the page itself is public; the data is not).
 */

import { apiBaseOf } from '#shared/client/api-base.ts';
import type {
  ApprovalAnswer,
  ApprovalList,
  Breadcrumb,
  ChangeChannelInfo,
  ChangeEvent,
  ContextView,
  DefinitionSummary,
  Explanation,
  FailureSummary,
  StreamInfo,
  ThreadView,
  UsageReport,
} from '#shared/client/api-types.ts';
import { ChangeFeed, type ChangesAnswer, type FeedStatus } from '#shared/client/change-feed.ts';
import { parseEventStream } from '#shared/client/sse.ts';
import type { ChangeFilters } from '#shared/core/stream/changes.ts';
import type { DeltaEvent } from '#shared/core/streaming/events.ts';
import { type DeltaSubscription, subscribeToRequest } from '#shared/core/streaming/subscriber.ts';
import { currentToken } from './sign-in.ts';

/** `GET …/attachments/{id}?data=true` (the attachments room's routes). */
export interface AttachmentView {
  id: string;
  media_type: string;
  bytes: number;
  sha256: string;
  name?: string;
  download_url: string;
  data_base64?: string;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/** A listing page (`GET …/breadcrumbs`); `read_bound` when it stopped at its read bound before it was full. */
interface ListPage {
  items: Breadcrumb[];
  next_cursor: string | null;
  read_bound?: { entries_read: number; bound: number };
}

export interface Session {
  /** A pasted token (or `crumbs dev`'s), sent as it is; unused when `signedIn`. */
  token: string;
  workspace: string;
  /** Signed in with the stack's issuer: each call sends the session's current token (`sign-in.ts`). */
  signedIn?: boolean;
}

export class Api {
  /** The workspace's change feed: one subscription for every view of this session; undefined without a channel. */
  private feed: Promise<ChangeFeed | undefined> | undefined;

  constructor(private readonly session: Session) {}

  get workspace(): string {
    return this.session.workspace;
  }

  private path(...segments: string[]): string {
    return `${apiBaseOf(location.pathname)}/v1/workspaces/${encodeURIComponent(this.session.workspace)}/${segments.map(encodeURIComponent).join('/')}`;
  }

  /** The token to send: the signed-in session's (refreshed when about to expire), or the pasted one. */
  private bearer(): Promise<string> {
    return this.session.signedIn ? currentToken() : Promise.resolve(this.session.token);
  }

  private async request(path: string, init: RequestInit = {}): Promise<Response> {
    const response = await fetch(path, {
      ...init,
      headers: {
        authorization: `Bearer ${await this.bearer()}`,
        ...(init.headers as Record<string, string>),
      },
    });
    if (!response.ok) {
      let detail = response.statusText;
      try {
        const problem = (await response.json()) as { title?: string; detail?: string };
        detail = problem.detail ?? problem.title ?? detail;
      } catch {
        // not problem+json: keep the status text
      }
      throw new ApiError(response.status, `${response.status}: ${detail}`);
    }
    return response;
  }

  private async json<T>(path: string, init?: RequestInit): Promise<T> {
    return (await (await this.request(path, init)).json()) as T;
  }

  /** An attachment: its reference, a presigned download URL, and its bytes when small enough. */
  attachment(id: string): Promise<AttachmentView> {
    return this.json(`${this.path('attachments', id)}?data=true`);
  }
  contextView(id: string): Promise<ContextView> {
    return this.json(this.path('breadcrumbs', id));
  }
  full(id: string): Promise<Breadcrumb> {
    return this.json(`${this.path('breadcrumbs', id)}?view=full`);
  }
  history(id: string): Promise<{ items: Breadcrumb[]; next_cursor: string | null }> {
    // The stored versions: the history panel shows who wrote each and diffs what changed.
    return this.json(`${this.path('breadcrumbs', id, 'history')}?limit=50&view=full`);
  }
  create(body: { schema_name: string; title?: string; tags?: string[]; context: Record<string, unknown> }) {
    return this.json<Breadcrumb>(this.path('breadcrumbs'), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  }
  /**
   * The newest breadcrumbs of a schema (up to 100), as the listing route returns them. A page that stopped at the
   * listing's read bound (expired breadcrumbs read past) is followed by the next, up to 4 calls; `stoppedAfter`
   * says how many index entries the last one read when the calls ran out before 100 were found.
   */
  async listBySchema(schema: string): Promise<{ items: Breadcrumb[]; stoppedAfter?: number }> {
    const items: Breadcrumb[] = [];
    let cursor: string | null = null;
    let stoppedAfter: number | undefined;
    for (let call = 0; call < 4 && items.length < 100; call++) {
      const page: ListPage = await this.json<ListPage>(
        `${this.path('breadcrumbs')}?schema_name=${encodeURIComponent(schema)}&limit=${100 - items.length}${
          cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''
        }`,
      );
      items.push(...page.items);
      cursor = page.next_cursor;
      if (cursor === null) return { items };
      stoppedAfter =
        page.read_bound !== undefined && items.length < 100 ? page.read_bound.entries_read : undefined;
    }
    return { items, ...(stoppedAfter !== undefined ? { stoppedAfter } : {}) };
  }
  /** The run as the run API shows it (with `retry_steps`, the top-level steps retry accepts). */
  run(runId: string): Promise<{ retry_steps?: string[] }> {
    return this.json(this.path('runs', runId));
  }
  /** A run action: approve, reject, pause, resume, cancel, retry (the orchestration's run routes). */
  runAction(runId: string, action: string, body: Record<string, unknown>): Promise<unknown> {
    return this.json(this.path('runs', runId, action), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  }
  thread(id: string): Promise<ThreadView> {
    return this.json(this.path('threads', id));
  }
  definitions(): Promise<{ items: DefinitionSummary[] }> {
    return this.json(this.path('definitions'));
  }
  explain(definition: string, breadcrumb: string): Promise<Explanation> {
    return this.json(
      `${this.path('definitions', definition, 'explain')}?breadcrumb=${encodeURIComponent(breadcrumb)}`,
    );
  }
  /** Model calls, tokens and cost per day, agent, run or thread over the last 30 days (`GET …/usage`). */
  usage(by: 'day' | 'agent' | 'run' | 'thread', limit = 10): Promise<UsageReport> {
    return this.json(`${this.path('usage')}?by=${by}${by === 'day' ? '' : `&limit=${limit}`}`);
  }

  /** Where a request's answer streams (`GET …/streams/{id}`); undefined when the stack streams nothing. */
  async streamInfo(streamId: string): Promise<StreamInfo | undefined> {
    try {
      return await this.json<StreamInfo>(this.path('streams', streamId));
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) return undefined;
      throw error;
    }
  }
  /** Subscribes to a stream with the session's token, before the request is written (nothing is missed). */
  async subscribe(info: StreamInfo, onEvent: (event: DeltaEvent) => void): Promise<DeltaSubscription> {
    return subscribeToRequest({
      realtimeUrl: info.realtime_url,
      httpHost: info.http_host,
      token: await this.bearer(),
      workspace: this.session.workspace,
      requestId: info.stream_id,
      onEvent,
    });
  }
  /** Asks a streaming request to stop (`POST …/requests/{id}/cancel`). */
  cancelRequest(requestId: string): Promise<unknown> {
    return this.json(this.path('requests', requestId, 'cancel'), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ reason: 'stopped in the dashboard' }),
    });
  }

  /** Pending approvals of agents' tool calls (`GET …/approvals`), of one run when `run` is given. */
  approvals(query: { run?: string } = {}): Promise<ApprovalList> {
    return this.json(`${this.path('approvals')}${query.run ? `?run=${encodeURIComponent(query.run)}` : ''}`);
  }
  /** Approve (with edited arguments) or reject an approval (`POST …/approvals/{id}`). */
  decideApproval(
    id: string,
    body: { decision: 'approve' | 'reject'; arguments?: Record<string, unknown>; reason?: string },
  ): Promise<ApprovalAnswer> {
    return this.json(this.path('approvals', id), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  }
  errors(): Promise<{ items: FailureSummary[] }> {
    return this.json(`${this.path('errors')}?limit=100`);
  }

  /** Where the workspace's changes are pushed (`GET …/changes/channel`); undefined when the stack pushes none. */
  async changeChannel(): Promise<ChangeChannelInfo | undefined> {
    try {
      return await this.json<ChangeChannelInfo>(this.path('changes', 'channel'));
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) return undefined;
      throw error;
    }
  }

  /** The session's change feed (created once), or undefined when changes are not pushed here. */
  changeFeed(): Promise<ChangeFeed | undefined> {
    this.feed ??= this.changeChannel().then(
      (channel) =>
        channel &&
        new ChangeFeed({
          channel,
          // Asked at each (re)connect: a signed-in session's token (refreshed when about to expire), or the pasted one.
          token: () => this.bearer(),
          read: (query) => this.readChanges(query),
          reconcileMs: 15_000,
        }),
      (error: unknown) => {
        // Asked again next time: a failed look-up must not leave the session on long polls for good.
        this.feed = undefined;
        throw error;
      },
    );
    return this.feed;
  }

  /** One answer of `GET …/changes?wait=0`: the changes with their positions, and the position read up to. */
  private async readChanges(query: {
    after?: string;
    backlog?: number;
    filters?: ChangeFilters;
  }): Promise<ChangesAnswer> {
    const params = new URLSearchParams({ wait: '0', ...filterParams(query.filters ?? {}) });
    if (query.backlog) params.set('backlog', String(query.backlog));
    const response = await this.request(`${this.path('changes')}?${params}`, {
      headers: query.after ? { 'last-event-id': query.after } : {},
    });
    const parsed = parseEventStream(await response.text());
    return {
      changes: parsed.messages.map((m) => ({ cursor: m.id ?? '', event: JSON.parse(m.data) as ChangeEvent })),
      cursor: parsed.lastEventId,
    };
  }

  /**
   * Follows the workspace's changes until `signal` aborts: pushed over the change channel where the stack has one
   * (`query.backlog` read once first; `exact` also reads `/changes` now and then to find a push that was lost),
   * else long-polled. `onError` hears of trouble (undefined once it is over).
   */
  async follow(
    query: Record<string, string>,
    onEvents: (events: ChangeEvent[]) => void,
    signal: AbortSignal,
    onError: (error: Error | undefined) => void = () => {},
    options: { exact?: boolean } = {},
  ): Promise<void> {
    let feed: ChangeFeed | undefined;
    try {
      feed = await this.changeFeed();
    } catch {
      feed = undefined;
    }
    if (signal.aborted) return;
    if (feed !== undefined) {
      const stop = feed.listen(filtersOf(query), (changes) => onEvents(changes.map((c) => c.event)), {
        ...(query.backlog ? { backlog: Number(query.backlog) } : {}),
        ...(options.exact ? { exact: true } : {}),
        onStatus: (status: FeedStatus) =>
          onError(status.state === 'retrying' || status.state === 'stopped' ? status.error : undefined),
      });
      await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
      stop();
      return;
    }
    await this.longPoll(query, onEvents, signal, onError);
  }

  /**
   * Follows the change stream by long polls until `signal` aborts: each answers the changes after the last event
   * id (EventSource cannot send the Authorization header, so this reads the same SSE answers with fetch).
   */
  private async longPoll(
    query: Record<string, string>,
    onEvents: (events: ChangeEvent[]) => void,
    signal: AbortSignal,
    onError: (error: Error | undefined) => void,
  ): Promise<void> {
    let lastEventId: string | undefined;
    let failures = 0;
    while (!signal.aborted) {
      const params = new URLSearchParams({
        wait: '20',
        ...(lastEventId ? { ...query, backlog: '0' } : query),
      });
      try {
        const response = await this.request(`${this.path('changes')}?${params}`, {
          signal,
          headers: lastEventId ? { 'last-event-id': lastEventId } : {},
        });
        const parsed = parseEventStream(await response.text());
        lastEventId = parsed.lastEventId ?? lastEventId;
        const events = parsed.messages.map((m) => JSON.parse(m.data) as ChangeEvent);
        if (events.length > 0) onEvents(events);
        failures = 0;
      } catch (error) {
        if (signal.aborted) return;
        onError(error as Error);
        if (error instanceof ApiError && (error.status === 401 || error.status === 403)) return;
        failures++;
        await new Promise((r) => setTimeout(r, Math.min(10_000, 500 * 2 ** failures)));
      }
    }
  }
}

/** The `/changes` filters of a follow's query (`schema_name` comma-separated, `tag`, `thread`, `writer`). */
function filtersOf(query: Record<string, string>): ChangeFilters {
  return {
    ...(query.schema_name ? { schema_name: query.schema_name.split(',') } : {}),
    ...(query.tag ? { tag: query.tag } : {}),
    ...(query.thread ? { thread: query.thread } : {}),
    ...(query.writer ? { writer: query.writer } : {}),
  };
}

function filterParams(filters: ChangeFilters): Record<string, string> {
  return {
    ...(filters.schema_name ? { schema_name: filters.schema_name.join(',') } : {}),
    ...(filters.tag ? { tag: filters.tag } : {}),
    ...(filters.thread ? { thread: filters.thread } : {}),
    ...(filters.writer ? { writer: filters.writer } : {}),
  };
}
