/**
 * The k-way merge of a tag listing: every source (`sources.ts`) is read a page at a time, newest first, and the
 * merge hands out the newest entry among the sources' heads, one at a time. A source is read again only when the
 * merge needs its next entry, so a listing whose answer sits in one source reads little of the others.
 *
 * Reads are counted: once `bound` index entries have been read the merge stops, and says so (`stoppedAtBound`),
 * rather than hand out an entry that an unread page of another source might precede. A source's pages grow
 * (doubling up to MAX_SOURCE_PAGE) while the merge keeps draining it, so a run of entries the listing skips —
 * expired heads, another schema's tag items — costs a few queries, not one a skipped entry.
 */

import type { TableReads } from '../table-reads.ts';
import { type SourcePosition, startKey } from './cursor.ts';
import { type ListEntry, readSource, type TagSource } from './sources.ts';

/** The largest page a source is read in once the merge has drained it a few times. */
const MAX_SOURCE_PAGE = 100;

interface SourceState {
  source: TagSource;
  position: SourcePosition;
  buffer: ListEntry[];
  /** Where the next read of this source starts; undefined once nothing follows the buffer. */
  next: Record<string, unknown> | undefined;
  exhausted: boolean;
  /** Entries asked for in this source's next read. */
  size: number;
}

export class TagMerge {
  private readonly states: SourceState[];
  private read = 0;
  private bounded = false;

  constructor(
    private readonly reads: TableReads,
    private readonly workspace: string,
    private readonly tag: string,
    sources: readonly TagSource[],
    positions: ReadonlyMap<string, SourcePosition>,
    private readonly pageSize: number,
    private readonly bound: number,
  ) {
    this.states = sources.map((source) => {
      const position = positions.get(source.name) ?? 'start';
      return {
        source,
        position,
        buffer: [],
        next: Array.isArray(position) ? startKey(workspace, source, position) : undefined,
        exhausted: position === 'done',
        size: pageSize,
      };
    });
  }

  /** Index entries read so far. */
  get entriesRead(): number {
    return this.read;
  }

  /** Every source has been read to its end and every entry handed out. */
  get done(): boolean {
    return this.states.every((state) => state.position === 'done');
  }

  /** The merge stopped because it had read `bound` entries, with more to read. */
  get stoppedAtBound(): boolean {
    return this.bounded && !this.done;
  }

  /** Each source's position: where a cursor resumes. */
  positions(): Map<string, SourcePosition> {
    return new Map(this.states.map((state) => [state.source.name, state.position]));
  }

  /** The newest entry not handed out yet; undefined at the end of every source, or at the read bound. */
  async next(): Promise<ListEntry | undefined> {
    await Promise.all(this.states.map((state) => this.refill(state)));
    // A source the bound left unread may hold newer entries than the others: stop here.
    if (this.states.some((state) => !state.exhausted && state.buffer.length === 0)) {
      this.bounded = true;
      return undefined;
    }
    let best: SourceState | undefined;
    for (const state of this.states) {
      const head = state.buffer[0];
      if (head && (!best || compareEntries(head, best.buffer[0]!) > 0)) best = state;
    }
    if (!best) return undefined;
    const entry = best.buffer.shift()!;
    best.position = best.exhausted && best.buffer.length === 0 ? 'done' : [entry.key, entry.sk];
    return entry;
  }

  private async refill(state: SourceState): Promise<void> {
    while (!state.exhausted && state.buffer.length === 0 && this.read < this.bound) {
      const limit = Math.max(1, Math.min(state.size, this.bound - this.read));
      const page = await readSource(this.reads, this.workspace, this.tag, state.source, state.next, limit);
      this.read += page.scanned;
      state.size = Math.min(Math.max(this.pageSize, MAX_SOURCE_PAGE), state.size * 2);
      state.buffer = page.entries;
      state.next = page.next;
      if (page.next === undefined) state.exhausted = true;
      // Entries without the tag were skipped: the position moves past them.
      if (page.entries.length === 0 && page.next !== undefined && page.lastPosition !== undefined)
        state.position = page.lastPosition;
    }
    if (state.exhausted && state.buffer.length === 0) state.position = 'done';
  }
}

/** Newer first: by sort key (`<updated_at>#<id>`), then by breadcrumb id. */
function compareEntries(a: ListEntry, b: ListEntry): number {
  if (a.sk !== b.sk) return a.sk > b.sk ? 1 : -1;
  return a.ref === b.ref ? 0 : a.ref > b.ref ? 1 : -1;
}
