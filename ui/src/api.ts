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
  ChangeEvent,
  ContextView,
  DefinitionSummary,
  Explanation,
  FailureSummary,
  StreamInfo,
  ThreadView,
  UsageReport,
} from '#shared/client/api-types.ts';
import { parseEventStream } from '#shared/client/sse.ts';
import type { DeltaEvent } from '#shared/core/streaming/events.ts';
import { type DeltaSubscription, subscribeToRequest } from '#shared/core/streaming/subscriber.ts';

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
  token: string;
  workspace: string;
}

export class Api {
  constructor(private readonly session: Session) {}

  get workspace(): string {
    return this.session.workspace;
  }

  private path(...segments: string[]): string {
    return `${apiBaseOf(location.pathname)}/v1/workspaces/${encodeURIComponent(this.session.workspace)}/${segments.map(encodeURIComponent).join('/')}`;
  }

  private async request(path: string, init: RequestInit = {}): Promise<Response> {
    const response = await fetch(path, {
      ...init,
      headers: { authorization: `Bearer ${this.session.token}`, ...(init.headers as Record<string, string>) },
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
  /** The newest breadcrumbs of a schema (up to 100), as the listing route returns them. */
  async listBySchema(schema: string): Promise<Breadcrumb[]> {
    const page = await this.json<{ items: Breadcrumb[] }>(
      `${this.path('breadcrumbs')}?schema_name=${encodeURIComponent(schema)}&limit=100`,
    );
    return page.items;
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
  subscribe(info: StreamInfo, onEvent: (event: DeltaEvent) => void): Promise<DeltaSubscription> {
    return subscribeToRequest({
      realtimeUrl: info.realtime_url,
      httpHost: info.http_host,
      token: this.session.token,
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

  /**
   * Follows the change stream until `signal` aborts: each long poll answers the changes after the last event id
   * (EventSource cannot send the Authorization header, so this reads the same SSE answers with fetch).
   */
  async follow(
    query: Record<string, string>,
    onEvents: (events: ChangeEvent[]) => void,
    signal: AbortSignal,
    onError: (error: Error) => void = () => {},
  ): Promise<void> {
    let lastEventId: string | undefined;
    let failures = 0;
    while (!signal.aborted) {
      const params = new URLSearchParams(lastEventId ? { ...query, backlog: '0' } : query);
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
