/**
 * Ports for following activity: the thread index (every breadcrumb written in a thread) and the change log (every
 * write of a workspace, in order). The DynamoDB adapters serve both from one sparse index (gsi3, table-design.md).
 */
import type { Breadcrumb } from '#shared/domain/breadcrumb.ts';
import type { Causation } from '#shared/domain/change-event.ts';

/** What the index keeps of a write: enough to show and route it, not the context. */
export interface ActivityEntry {
  id: string;
  workspace: string;
  /** `breadcrumb`: a head (thread index); `version`: a write; `deletion`: a delete (change log). */
  kind: 'breadcrumb' | 'version' | 'deletion';
  schema_name: string;
  title: string;
  tags: string[];
  version: number;
  created_at: string;
  created_by: string;
  updated_at: string;
  /** Who wrote this version (or deleted it). */
  updated_by: string;
  causation?: Causation;
  /** `context.status` when it is a short string (responses, runs). */
  status?: string;
}

export interface ThreadIndex {
  /** Heads whose causation names `thread`, oldest write first; at most `limit` (then `truncated`). */
  threadHeads(
    workspace: string,
    thread: string,
    limit: number,
  ): Promise<{ entries: ActivityEntry[]; truncated: boolean }>;
  /** The current head of a breadcrumb (the thread's root is read this way: it has no causation). */
  head(workspace: string, id: string): Promise<Breadcrumb | undefined>;
  /** Breadcrumbs as they were at the given versions; missing ones are left out. */
  versions(workspace: string, refs: readonly { id: string; version: number }[]): Promise<Breadcrumb[]>;
}

/** A position in the change log: every change at or before it has been read. Opaque outside the adapter. */
export type ChangeCursor = string;

export interface ChangeEntry extends ActivityEntry {
  /** The position of this change; reading after it continues with the next one. */
  cursor: ChangeCursor;
}

export interface ChangeLog {
  /** The cursor that stands just after every change written at or before `time`. */
  cursorAt(time: Date): ChangeCursor;
  /** Changes after `after` and at or before `until`, oldest first, at most `limit`. */
  read(workspace: string, after: ChangeCursor, until: ChangeCursor, limit: number): Promise<ChangeEntry[]>;
  /** The newest `limit` changes at or before `until`, oldest first. */
  latest(workspace: string, until: ChangeCursor, limit: number): Promise<ChangeEntry[]>;
  /** Throws BadRequestError unless `cursor` is one this log handed out. */
  checkCursor(cursor: string): ChangeCursor;
}
