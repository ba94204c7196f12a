/**
 * The change channels' feed: the summaries of a stream batch's changes (`shared/core/stream/feed-events.ts`) go to
 * their workspaces' channels (`changesChannelFor`), packed into 5 KB events, up to 5 events per publish request,
 * one workspace's requests in order and workspaces side by side. It never rejects (`ChangeFeed`). Every change is
 * published, with or without a subscriber: AppSync Events cannot say who listens, and the price of that is in
 * `bench:live-views`.
 */
import { type DeltaChannel, MAX_EVENTS_PER_PUBLISH } from '#shared/ports/delta-channel.ts';
import type { Log } from '#shared/ports/log.ts';
import type { ChangeFeed, FeedOutcome, WorkspaceChange } from '../stream/change-feed.ts';
import { type FeedChange, feedEvents } from '../stream/feed-events.ts';
import { changesChannelFor } from './channel.ts';

/** Publish requests in flight at once (one Lambda's sockets; workspaces of one batch are usually few). */
const PARALLEL_REQUESTS = 8;

export class ChannelChangeFeed implements ChangeFeed {
  constructor(
    private readonly channel: DeltaChannel,
    private readonly log?: Log,
  ) {}

  async publish(changes: readonly WorkspaceChange[]): Promise<FeedOutcome> {
    const byWorkspace = new Map<string, FeedChange[]>();
    for (const { workspace, change } of changes) {
      const list = byWorkspace.get(workspace) ?? [];
      list.push(change);
      byWorkspace.set(workspace, list);
    }
    let published = 0;
    let failed = 0;
    let events = 0;
    let requests = 0;
    const errors: string[] = [];
    // One queue of requests per workspace (in order); workspaces share PARALLEL_REQUESTS lanes.
    const queues = [...byWorkspace].map(([workspace, list]) => ({
      channel: changesChannelFor(workspace),
      requests: chunk(feedEvents(list), MAX_EVENTS_PER_PUBLISH),
    }));
    const lane = async () => {
      for (let queue = queues.shift(); queue !== undefined; queue = queues.shift()) {
        for (const request of queue.requests) {
          const count = request.reduce((sum, e) => sum + e.changes, 0);
          requests += 1;
          try {
            await this.channel.publish(
              queue.channel,
              request.map((e) => e.text),
            );
            published += count;
            events += request.length;
          } catch (error) {
            failed += count;
            if (errors.length < 3) errors.push((error as Error).message);
          }
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(PARALLEL_REQUESTS, queues.length) }, lane));
    if (failed > 0) {
      this.log?.warn('could not publish changes to their channels; live views read them on catch-up', {
        failed,
        published,
        errors,
      });
    }
    return { published, failed, events, requests };
  }
}

function chunk<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}
