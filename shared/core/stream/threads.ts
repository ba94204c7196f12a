/**
 * A thread as a causal tree: the root (the breadcrumb that started it; its id is the thread id) and everything
 * written in answer to it, each node under the breadcrumb that caused it, in causal order (pre-order: a cause
 * before its effects, siblings oldest first), with who wrote it, which definition, and how long each hop took.
 *
 * Cost: one Query of the thread index per 500 nodes, one GetItem for the root, and BatchGets only for versions
 * the index cannot show — a cause whose head has moved on since (a run updated by later steps, a context
 * upserted by a later message) and the error text of error answers. All O(thread size).
 *
 * Nodes are heads: a breadcrumb updated several times within the thread appears once, placed under what its first
 * version answered (a run stays under its request although its last write answers its last step) and showing its
 * latest version; hops are timed against the version that caused them (`caused_by` names it).
 */
import { activityFields } from '#shared/adapters/dynamodb/items.ts';
import type { Breadcrumb } from '#shared/domain/breadcrumb.ts';
import type { Causation } from '#shared/domain/change-event.ts';
import { NotFoundError } from '#shared/domain/errors.ts';
import { definitionOf, errorText, type Outcome, outcomeOf } from '#shared/domain/outcome.ts';
import type { ActivityEntry, ThreadIndex } from '#shared/ports/activity.ts';

export const MAX_THREAD_NODES = 1000;
/** Rounds of following causes whose heads left the thread (each round is one BatchGet per 100). */
const MAX_REPAIR_ROUNDS = 4;

export interface ThreadNode {
  id: string;
  version: number;
  schema_name: string;
  title: string;
  tags: string[];
  /** The principal that wrote this version. */
  writer: string;
  /** The definition behind the writer, when an executor wrote it. */
  definition: { kind: string; name: string } | null;
  causation: Causation | null;
  /** The node it answers (by id), null for the root and for a cause that is not in the thread. */
  parent: string | null;
  depth: number;
  /** When it entered the thread (its first version in it). */
  at: string;
  /** Its latest write (`version`); later than `at` for a breadcrumb updated along the thread, like a run. */
  last_written_at: string;
  since_root_ms: number;
  /** Time from the version that caused it to this write. */
  hop_ms: number | null;
  status: string | null;
  outcome: Outcome;
  error?: string;
}

export interface ThreadView {
  workspace: string;
  thread: string;
  /** Nodes in causal order. */
  nodes: ThreadNode[];
  truncated: boolean;
}

/** The thread `id` names, or the thread of the breadcrumb `id` (so a trace can start anywhere in it). */
export async function resolveThread(index: ThreadIndex, workspace: string, id: string): Promise<string> {
  const head = await index.head(workspace, id);
  return head?.causation?.thread ?? id;
}

export async function loadThread(index: ThreadIndex, workspace: string, thread: string): Promise<ThreadView> {
  const [{ entries, truncated }, root] = await Promise.all([
    index.threadHeads(workspace, thread, MAX_THREAD_NODES),
    index.head(workspace, thread),
  ]);
  const nodes = new Map<string, Placed>();
  if (root) nodes.set(root.id, { ...entryOf(root), causation: undefined } as ActivityEntry);
  for (const e of entries) if (e.id !== thread) nodes.set(e.id, e);
  if (nodes.size === 0) throw new NotFoundError(`no thread ${thread} in workspace ${workspace}`);

  // Where each breadcrumb entered the thread: a head updated later (a run advanced by its steps' answers) carries
  // the causation of its last write, which can point below it; its first version says what it answered.
  const updated = [...nodes.values()].filter((n) => n.version > 1 && n.id !== thread);
  for (const first of await index.versions(
    workspace,
    updated.map((n) => ({ id: n.id, version: 1 })),
  )) {
    const node = nodes.get(first.id);
    if (node && first.causation?.thread === thread) {
      nodes.set(first.id, { ...node, causation: first.causation, entered_at: first.updated_at } as Placed);
    }
  }

  // Times of causing versions, and causes whose heads have since moved on (shown as they were).
  const causeTimes = new Map<string, string>();
  for (const n of nodes.values()) causeTimes.set(`${n.id}@${n.version}`, n.updated_at);
  for (let round = 0; round < MAX_REPAIR_ROUNDS; round++) {
    const missing = [...nodes.values()]
      .map((n) => n.causation?.caused_by)
      .filter((ref): ref is string => ref !== undefined && !causeTimes.has(ref))
      .map(parseRef)
      .filter((r): r is { id: string; version: number } => r !== undefined);
    if (missing.length === 0) break;
    const found = await index.versions(workspace, missing);
    for (const f of found) {
      causeTimes.set(`${f.id}@${f.version}`, f.updated_at);
      if (!nodes.has(f.id) && (f.causation?.thread === thread || f.id === thread))
        nodes.set(f.id, entryOf(f));
    }
    // Refs that do not exist at all stop the loop instead of being asked for again.
    for (const m of missing)
      if (!causeTimes.has(`${m.id}@${m.version}`)) causeTimes.set(`${m.id}@${m.version}`, '');
  }

  // Error answers: their error text, from the version the node shows.
  const erroneous = [...nodes.values()].filter((n) => outcomeOf(n) !== 'ok');
  const errors = new Map<string, string>();
  for (const record of await index.versions(workspace, erroneous.slice(0, 100))) {
    const text = errorText(record.context);
    if (text) errors.set(record.id, text);
  }

  return { workspace, thread, nodes: order(thread, nodes, causeTimes, errors), truncated };
}

/** An entry placed where its breadcrumb entered the thread (`entered_at`: when, if not at its current version). */
type Placed = ActivityEntry & { entered_at?: string };

function order(
  thread: string,
  nodes: Map<string, Placed>,
  causeTimes: Map<string, string>,
  errors: Map<string, string>,
): ThreadNode[] {
  const parentOf = (n: Placed): string | null => {
    const ref = n.causation ? parseRef(n.causation.caused_by) : undefined;
    return ref && ref.id !== n.id && nodes.has(ref.id) ? ref.id : null;
  };
  const children = new Map<string | null, Placed[]>();
  for (const n of nodes.values()) {
    const p = n.id === thread ? null : parentOf(n);
    const list = children.get(p) ?? [];
    list.push(n);
    children.set(p, list);
  }
  for (const list of children.values()) list.sort(byTime);
  const rootTime = Date.parse(
    nodes.get(thread)?.updated_at ?? [...nodes.values()].sort(byTime)[0]!.updated_at,
  );

  const out: ThreadNode[] = [];
  const visited = new Set<string>();
  const visit = (n: Placed, depth: number, parent: string | null) => {
    if (visited.has(n.id)) return;
    visited.add(n.id);
    const causeAt = n.causation ? causeTimes.get(n.causation.caused_by) : undefined;
    const at = Date.parse(enteredAt(n));
    out.push({
      id: n.id,
      version: n.version,
      schema_name: n.schema_name,
      title: n.title,
      tags: n.tags,
      writer: n.updated_by,
      definition: definitionOf(n.updated_by),
      causation: n.causation ?? null,
      parent,
      depth,
      at: enteredAt(n),
      last_written_at: n.updated_at,
      since_root_ms: at - rootTime,
      hop_ms: causeAt ? at - Date.parse(causeAt) : null,
      status: n.status ?? null,
      outcome: outcomeOf(n),
      ...(errors.has(n.id) ? { error: errors.get(n.id) } : {}),
    });
    for (const c of children.get(n.id) ?? []) visit(c, depth + 1, n.id);
  };
  // The root first; then what hangs from a cause outside the thread (its root was not found, or a cycle).
  for (const n of children.get(null) ?? []) visit(n, n.id === thread ? 0 : 1, null);
  for (const n of [...nodes.values()].sort(byTime)) visit(n, 1, null);
  return out;
}

function enteredAt(n: Placed): string {
  return n.entered_at ?? n.updated_at;
}

function byTime(a: Placed, b: Placed): number {
  const x = enteredAt(a);
  const y = enteredAt(b);
  return x < y ? -1 : x > y ? 1 : a.id < b.id ? -1 : 1;
}

function parseRef(ref: string): { id: string; version: number } | undefined {
  const at = ref.lastIndexOf('@');
  const version = Number(ref.slice(at + 1));
  return at > 0 && Number.isInteger(version) && version > 0 ? { id: ref.slice(0, at), version } : undefined;
}

function entryOf(record: Breadcrumb): ActivityEntry {
  const status = record.context.status;
  return { ...activityFields(record), kind: 'version', ...(typeof status === 'string' ? { status } : {}) };
}
