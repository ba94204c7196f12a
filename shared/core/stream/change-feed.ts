/**
 * What the stream publisher needs of the change channels (`publisher.ts`): a feed taking a batch's changes, each
 * with its workspace. The feed that publishes them to AppSync Events is `ChannelChangeFeed`
 * (`shared/core/streaming/change-channels.ts`).
 *
 * Off the critical path: the publisher starts `publish` before it routes the batch and awaits it only at the end,
 * and it never rejects: a publish that fails (or outlasts the channel adapter's timeout) is logged and counted,
 * and the changes it carried reach live views on their next catch-up read of `/changes`
 * (`shared/client/change-feed.ts`). Routing never waits on it and never fails because of it.
 */
import type { FeedChange } from './feed-events.ts';

/** A change and the workspace whose channel it goes to. */
export interface WorkspaceChange {
  readonly workspace: string;
  readonly change: FeedChange;
}

export interface FeedOutcome {
  /** Changes whose publish was taken. */
  readonly published: number;
  /** Changes whose publish failed (logged). */
  readonly failed: number;
  /** Channel events sent (each metered per 5 KB). */
  readonly events: number;
  /** Publish requests made. */
  readonly requests: number;
}

export interface ChangeFeed {
  /** Publishes every change to its workspace's channel; never rejects. */
  publish(changes: readonly WorkspaceChange[]): Promise<FeedOutcome>;
}
