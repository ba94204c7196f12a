/**
 * The dashboard's view of the crumbs API: the package's typed client (`crumbs/client`,
 * `shared/client/crumbs-client.ts`) on the same origin, under the page's base path (`apiBaseOf`), with the bearer
 * token the user gave once (or the signed-in session's). Every data call needs the token (the page itself is public;
 * the data is not). The client's refusals become `ApiError`s with the status, as the views expect.
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
import type { ChangeFeed, FeedStatus } from '#shared/client/change-feed.ts';
import {
  ApiProblemError,
  CrumbsClient,
  type ListQuery,
  type Page,
  type RunAction,
} from '#shared/client/crumbs-client.ts';
import type { ChangeFilters } from '#shared/core/stream/changes.ts';
import type { DeltaEvent } from '#shared/core/streaming/events.ts';
import type { DeltaSubscription } from '#shared/core/streaming/subscriber.ts';
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

export interface Session {
  /** A pasted token (or `crumbs dev`'s), sent as it is; unused when `signedIn`. */
  token: string;
  workspace: string;
  /** Signed in with the stack's issuer: each call sends the session's current token (`sign-in.ts`). */
  signedIn?: boolean;
}

/** The long poll's wait, and the time a request may take on top of it. */
const LONG_POLL_SECONDS = 20;

export class Api {
  /** The workspace's change feed: one subscription for every view of this session; undefined without a channel. */
  private feed: Promise<ChangeFeed | undefined> | undefined;
  private readonly client: CrumbsClient;

  constructor(private readonly session: Session) {
    this.client = new CrumbsClient({
      endpoint: `${location.origin}${apiBaseOf(location.pathname)}`,
      token: () => this.bearer(),
      workspace: session.workspace,
    });
  }

  get workspace(): string {
    return this.session.workspace;
  }

  /** The token to send: the signed-in session's (refreshed when about to expire), or the pasted one. */
  private bearer(): Promise<string> {
    return this.session.signedIn ? currentToken() : Promise.resolve(this.session.token);
  }

  /** A client call whose refusal is an `ApiError` carrying the status and the problem's detail. */
  private async call<T>(request: (client: CrumbsClient) => Promise<T>): Promise<T> {
    try {
      return await request(this.client);
    } catch (error) {
      if (error instanceof ApiProblemError) {
        throw new ApiError(error.status, `${error.status}: ${error.detail ?? error.title}`);
      }
      throw error;
    }
  }

  /** An attachment: its reference, a presigned download URL, and its bytes when small enough. */
  attachment(id: string): Promise<AttachmentView> {
    return this.json(`${this.path('attachments', id)}?data=true`);
  }
  contextView(id: string): Promise<ContextView> {
    return this.call((c) => c.get(id));
  }
  full(id: string): Promise<Breadcrumb> {
    return this.call((c) => c.getFull(id));
  }
  history(id: string): Promise<{ items: Breadcrumb[]; next_cursor: string | null }> {
    // The stored versions: the history panel shows who wrote each and diffs what changed.
    return this.call((c) => c.history(id, { limit: 50 }));
  }
  create(body: { schema_name: string; title?: string; tags?: string[]; context: Record<string, unknown> }) {
    return this.call((c) => c.create(body));
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
      const query: ListQuery = {
        schema_name: schema,
        limit: 100 - items.length,
        ...(cursor ? { cursor } : {}),
      };
      // The context views the listing answers by default, shown as the records' summaries.
      const page: Page<ContextView> = await this.call((c) => c.list(query));
      items.push(...(page.items as unknown as Breadcrumb[]));
      cursor = page.next_cursor;
      if (cursor === null) return { items };
      stoppedAfter =
        page.read_bound !== undefined && items.length < 100 ? page.read_bound.entries_read : undefined;
    }
    return { items, ...(stoppedAfter !== undefined ? { stoppedAfter } : {}) };
  }
  /** The run as the run API shows it (with `retry_steps`, the top-level steps retry accepts). */
  run(runId: string): Promise<{ retry_steps?: string[] }> {
    return this.call((c) => c.getRun(runId)) as Promise<{ retry_steps?: string[] }>;
  }
  /** A run action: approve, reject, pause, resume, cancel, retry (the orchestration's run routes). */
  runAction(runId: string, action: string, body: Record<string, unknown>): Promise<unknown> {
    return this.call((c) => c.runAction(runId, action as RunAction, body));
  }
  thread(id: string): Promise<ThreadView> {
    return this.call((c) => c.thread(id));
  }
  definitions(): Promise<{ items: DefinitionSummary[] }> {
    return this.call((c) => c.definitions());
  }
  explain(definition: string, breadcrumb: string): Promise<Explanation> {
    return this.call((c) => c.explain(definition, breadcrumb));
  }
  /** Model calls, tokens and cost per day, agent, run or thread over the last 30 days (`GET …/usage`). */
  usage(by: 'day' | 'agent' | 'run' | 'thread', limit = 10): Promise<UsageReport> {
    return this.call((c) => c.usage(by === 'day' ? { by } : { by, limit }));
  }

  /** Where a request's answer streams (`GET …/streams/{id}`); undefined when the stack streams nothing. */
  streamInfo(streamId: string): Promise<StreamInfo | undefined> {
    return this.call((c) => c.streamInfo(streamId));
  }
  /** Subscribes to a stream with the session's token, before the request is written (nothing is missed). */
  subscribe(info: StreamInfo, onEvent: (event: DeltaEvent) => void): Promise<DeltaSubscription> {
    return this.client.subscribeToStream(info, { onEvent });
  }
  /** Asks a streaming request to stop (`POST …/requests/{id}/cancel`). */
  cancelRequest(requestId: string): Promise<unknown> {
    return this.call((c) => c.cancelRequest(requestId, 'stopped in the dashboard'));
  }

  /** Pending approvals of agents' tool calls (`GET …/approvals`), of one run when `run` is given. */
  approvals(query: { run?: string } = {}): Promise<ApprovalList> {
    return this.call((c) => c.approvals(query.run ? { run: query.run } : {}));
  }
  /** Approve (with edited arguments) or reject an approval (`POST …/approvals/{id}`). */
  decideApproval(
    id: string,
    body: { decision: 'approve' | 'reject'; arguments?: Record<string, unknown>; reason?: string },
  ): Promise<ApprovalAnswer> {
    return this.call((c) => c.decideApproval(id, body));
  }
  errors(): Promise<{ items: FailureSummary[] }> {
    return this.call((c) => c.errors({ limit: 100 }));
  }

  /** Where the workspace's changes are pushed (`GET …/changes/channel`); undefined when the stack pushes none. */
  changeChannel(): Promise<ChangeChannelInfo | undefined> {
    return this.call((c) => c.changeChannel());
  }

  /** The session's change feed (created once), or undefined when changes are not pushed here. */
  changeFeed(): Promise<ChangeFeed | undefined> {
    this.feed ??= this.changeChannel().then(
      (channel) =>
        channel &&
        // Asked at each (re)connect: a signed-in session's token (refreshed when about to expire), or the pasted one.
        this.client.changeFeed(channel, { reconcileMs: 15_000 }),
      (error: unknown) => {
        // Asked again next time: a failed look-up must not leave the session on long polls for good.
        this.feed = undefined;
        throw error;
      },
    );
    return this.feed;
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
    const filters = filtersOf(query);
    while (!signal.aborted) {
      try {
        const answer = await this.call((c) =>
          c.changes(
            {
              lastEventId,
              wait: LONG_POLL_SECONDS,
              ...(filters.schema_name ? { schema_name: filters.schema_name.join(',') } : {}),
              ...(filters.tag ? { tag: filters.tag } : {}),
              ...(filters.thread ? { thread: filters.thread } : {}),
              ...(filters.writer ? { writer: filters.writer } : {}),
              ...(query.view === 'full' || query.view === 'summary' ? { view: query.view } : {}),
              ...(!lastEventId && query.backlog ? { backlog: Number(query.backlog) } : {}),
            },
            { signal },
          ),
        );
        lastEventId = answer.lastEventId ?? lastEventId;
        if (answer.events.length > 0) onEvents(answer.events);
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
