/**
 * Consolidation: the model proposes, this deterministic check commits. No IO: given the actor's current records,
 * the turns of the batch (whose they are) and the model's proposals, it returns the writes to make — each one
 * justified by the rules below — and the proposals it refused, with why.
 *
 * Rules:
 * 1. A proposal must name at least one turn of this batch **said by the person** (`source_turns`): a claim found
 *    only in an assistant's turn is refused ("assistant-only"). Turns not in the batch are dropped from the list.
 * 2. `add` of a key the actor already has: the same text is a duplicate (merged: the record gains the turns), a
 *    different text supersedes it (a new version of the same record). A new key is added while the actor is under
 *    the cap, refused at it.
 * 3. `supersede` and `merge` name an existing record (`target`); a target that is not one of the actor's records of
 *    this memory is refused (a model cannot reach another person's record by naming its id).
 * 4. `retract` (the person took it back) deletes the record of the target or key.
 * 5. `reject` writes nothing (the model judged it not worth keeping).
 * Texts are capped, keys normalized (lowercase words joined by `_`), and a batch never writes one key twice: the
 * last proposal about a key wins, as the latest thing said does.
 */
import { MAX_RECORD_CHARS } from './protocol.ts';

export const PROPOSAL_OPS = ['add', 'supersede', 'merge', 'retract', 'reject'] as const;

export interface Proposal {
  op: (typeof PROPOSAL_OPS)[number];
  key?: string | undefined;
  text?: string | undefined;
  target?: string | undefined;
  source_turns?: readonly string[] | undefined;
}

export interface CurrentRecord {
  id: string;
  key: string;
  text: string;
  source_turns: readonly string[];
}

export interface Turn {
  id: string;
  /** Whether the person said it (a `user.message.v1` of the actor), not an assistant. */
  byPerson: boolean;
}

export type Write =
  | { kind: 'create'; key: string; text: string; source_turns: string[] }
  | {
      kind: 'update';
      id: string;
      key: string;
      text: string;
      source_turns: string[];
      reason: 'supersede' | 'merge';
    }
  | { kind: 'delete'; id: string; key: string };

export interface Refusal {
  proposal: Proposal;
  reason: string;
}

export interface Consolidation {
  writes: Write[];
  refused: Refusal[];
}

export function normalizeKey(key: string): string {
  return key
    .toLowerCase()
    .normalize('NFKC')
    .replace(/[^\p{L}\p{N}]+/gu, '_')
    .replace(/^_+|_+$/g, '')
    .slice(0, 80);
}

function sameText(a: string, b: string): boolean {
  const n = (s: string) =>
    s
      .toLowerCase()
      .replace(/\s+/g, ' ')
      .replace(/[.!]+$/, '')
      .trim();
  return n(a) === n(b);
}

export function consolidate(input: {
  current: readonly CurrentRecord[];
  turns: readonly Turn[];
  proposals: readonly Proposal[];
  maxRecords: number;
}): Consolidation {
  const turns = new Map(input.turns.map((t) => [t.id, t]));
  // The actor's records as the batch leaves them, by key; `id` absent for one this batch creates.
  const byKey = new Map<
    string,
    { id?: string; text: string; source_turns: string[]; changed: boolean; deleted: boolean }
  >();
  const byId = new Map<string, string>();
  for (const r of input.current) {
    byKey.set(r.key, {
      id: r.id,
      text: r.text,
      source_turns: [...r.source_turns],
      changed: false,
      deleted: false,
    });
    byId.set(r.id, r.key);
  }
  const reasons = new Map<string, 'supersede' | 'merge'>();
  const refused: Refusal[] = [];
  const live = () => [...byKey.values()].filter((r) => !r.deleted).length;

  for (const proposal of input.proposals) {
    if (proposal.op === 'reject') {
      refused.push({ proposal, reason: 'rejected by the model' });
      continue;
    }
    const cited = (proposal.source_turns ?? []).filter((id) => turns.has(id));
    if (!cited.some((id) => turns.get(id)?.byPerson)) {
      refused.push({ proposal, reason: 'assistant-only: no turn of the person says it' });
      continue;
    }
    const targetKey = proposal.target !== undefined ? byId.get(proposal.target) : undefined;
    if ((proposal.op === 'supersede' || proposal.op === 'merge') && targetKey === undefined) {
      refused.push({
        proposal,
        reason: `target ${proposal.target ?? '(none)'} is not one of this person's records`,
      });
      continue;
    }
    const key = targetKey ?? (proposal.key !== undefined ? normalizeKey(proposal.key) : '');
    if (key === '') {
      refused.push({ proposal, reason: 'no key and no target' });
      continue;
    }
    const existing = byKey.get(key);
    if (proposal.op === 'retract') {
      if (existing === undefined || existing.deleted) {
        refused.push({ proposal, reason: 'nothing to retract' });
        continue;
      }
      existing.deleted = true;
      existing.changed = true;
      continue;
    }
    const text = (proposal.text ?? '').trim().slice(0, MAX_RECORD_CHARS);
    if (text === '') {
      refused.push({ proposal, reason: 'no text' });
      continue;
    }
    if (existing === undefined || existing.deleted) {
      if (live() >= input.maxRecords) {
        refused.push({
          proposal,
          reason: `this person has ${input.maxRecords} records of this memory, its cap`,
        });
        continue;
      }
      byKey.set(key, {
        ...(existing?.id !== undefined ? { id: existing.id } : {}),
        text,
        source_turns: cited,
        changed: true,
        deleted: false,
      });
      if (existing?.id !== undefined) reasons.set(key, 'supersede');
      continue;
    }
    const merged = [...new Set([...existing.source_turns, ...cited])];
    if (proposal.op === 'merge' || sameText(existing.text, text)) {
      if (merged.length !== existing.source_turns.length) {
        existing.source_turns = merged;
        existing.changed = true;
        if (reasons.get(key) !== 'supersede') reasons.set(key, 'merge');
      }
      continue;
    }
    existing.text = text;
    existing.source_turns = merged;
    existing.changed = true;
    reasons.set(key, 'supersede');
  }

  const writes: Write[] = [];
  for (const [key, r] of byKey) {
    if (!r.changed) continue;
    if (r.deleted) {
      if (r.id !== undefined) writes.push({ kind: 'delete', id: r.id, key });
    } else if (r.id === undefined) {
      writes.push({ kind: 'create', key, text: r.text, source_turns: r.source_turns });
    } else {
      writes.push({
        kind: 'update',
        id: r.id,
        key,
        text: r.text,
        source_turns: r.source_turns,
        reason: reasons.get(key) ?? 'supersede',
      });
    }
  }
  return { writes, refused };
}
