/**
 * Matching one event against many EventBridge rules without evaluating every rule.
 *
 * Each `$or` branch of a compiled pattern is indexed under one of its fields whose matchers are all exact values
 * (strings, numbers, true/false/null): the branch can only match an event holding one of those (path, value)
 * pairs. Among the candidate fields we pick the one whose buckets are currently smallest, so a field every rule
 * shares (like `source`) is passed over in favour of a selective one (`detail.workspace`). Branches without such a
 * field go to a fallback list. For an event we flatten it once, look up the buckets of the (path, value) pairs it
 * contains, add the fallback rules, and confirm each candidate with the full compiled matcher; the result is
 * therefore exactly what evaluating every pattern would give.
 */
import {
  type CompiledBranch,
  type CompiledPattern,
  compileEventPattern,
  type FlatEvent,
  flattenEvent,
  type Leaf,
  toScaled,
  type ValueMatcher,
} from './event-pattern.ts';

interface Entry<T> {
  readonly id: string;
  readonly seq: number;
  readonly compiled: CompiledPattern;
  readonly value: T;
  /** The bucket keys this rule was filed under, so it can be removed. */
  readonly keys: readonly (readonly [string, string])[];
  readonly inFallback: boolean;
}

/** The bucket key of an event value, or undefined for values no exact matcher can index. */
function leafKey(value: Leaf['value']): string {
  if (typeof value === 'string') return `s:${value}`;
  if (typeof value === 'number') return `n:${toScaled(value) ?? String(value)}`;
  if (value === null) return 'z';
  return `b:${value}`;
}

/** The bucket key an exact matcher would need, or undefined when the matcher cannot be indexed exactly. */
function matcherKey(m: ValueMatcher): string | undefined {
  switch (m.kind) {
    case 'exact-string':
      // IP literals match other spellings of the same address, so they cannot be keyed by their text.
      return m.ip === undefined ? `s:${m.value}` : undefined;
    case 'exact-number':
      return `n:${m.scaled ?? String(m.value)}`;
    case 'exact-literal':
      return m.value === null ? 'z' : `b:${m.value}`;
    default:
      return undefined;
  }
}

export class RuleIndex<T = string> {
  private readonly rules = new Map<string, Entry<T>>();
  /** path → value key → ids of rules with a branch filed there. */
  private readonly buckets = new Map<string, Map<string, Set<string>>>();
  private readonly fallback = new Set<string>();
  private seq = 0;

  get size(): number {
    return this.rules.size;
  }

  add(id: string, pattern: unknown, value: T): void {
    const compiled = compileEventPattern(pattern);
    this.remove(id);
    const keys: [string, string][] = [];
    let inFallback = false;
    for (const branch of compiled.branches) {
      const chosen = this.chooseField(branch);
      if (chosen === undefined) {
        inFallback = true;
        continue;
      }
      for (const k of chosen.keys) {
        this.bucket(chosen.path, k).add(id);
        keys.push([chosen.path, k]);
      }
    }
    if (inFallback) this.fallback.add(id);
    this.rules.set(id, { id, seq: this.seq++, compiled, value, keys, inFallback });
  }

  remove(id: string): boolean {
    const entry = this.rules.get(id);
    if (!entry) return false;
    for (const [path, key] of entry.keys) {
      const byValue = this.buckets.get(path);
      const set = byValue?.get(key);
      if (!byValue || !set) continue;
      set.delete(id);
      if (set.size === 0) byValue.delete(key);
      if (byValue.size === 0) this.buckets.delete(path);
    }
    if (entry.inFallback) this.fallback.delete(id);
    this.rules.delete(id);
    return true;
  }

  match(event: unknown): T[] {
    if (this.rules.size === 0) return [];
    const flat = flattenEvent(event);
    const candidates = new Set<string>(this.fallback);
    for (const [path, leaves] of flat) {
      const byValue = this.buckets.get(path);
      if (!byValue) continue;
      for (const leaf of leaves) {
        const ids = byValue.get(leafKey(leaf.value));
        if (ids) for (const id of ids) candidates.add(id);
      }
    }
    return this.confirm(candidates, flat);
  }

  private confirm(candidates: Iterable<string>, flat: FlatEvent): T[] {
    const matched: Entry<T>[] = [];
    for (const id of candidates) {
      const entry = this.rules.get(id);
      if (entry?.compiled.matchesFlat(flat)) matched.push(entry);
    }
    matched.sort((a, b) => a.seq - b.seq);
    return matched.map((e) => e.value);
  }

  private bucket(path: string, key: string): Set<string> {
    let byValue = this.buckets.get(path);
    if (!byValue) {
      byValue = new Map();
      this.buckets.set(path, byValue);
    }
    let set = byValue.get(key);
    if (!set) {
      set = new Set();
      byValue.set(key, set);
    }
    return set;
  }

  /** The exact-valued field of a branch whose largest bucket is smallest now, or undefined if none qualifies. */
  private chooseField(branch: CompiledBranch): { path: string; keys: string[] } | undefined {
    let best: { path: string; keys: string[]; cost: number } | undefined;
    for (const field of branch.fields) {
      if (field.allowsAbsent) continue;
      const keys: string[] = [];
      let ok = true;
      for (const m of field.matchers) {
        const k = matcherKey(m);
        if (k === undefined) {
          ok = false;
          break;
        }
        keys.push(k);
      }
      if (!ok || keys.length === 0) continue;
      const byValue = this.buckets.get(field.path);
      let cost = 0;
      for (const k of keys) cost += byValue?.get(k)?.size ?? 0;
      // Prefer fewer values when the buckets are equally full (fewer lookups, fewer false candidates).
      const weighted = cost * 4 + keys.length;
      if (!best || weighted < best.cost) best = { path: field.path, keys, cost: weighted };
    }
    return best && { path: best.path, keys: best.keys };
  }
}
