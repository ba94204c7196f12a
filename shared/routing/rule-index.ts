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
  type ValueMatcher,
} from './event-pattern.ts';

interface Entry<T> {
  readonly id: string;
  readonly seq: number;
  readonly compiled: CompiledPattern;
  readonly value: T;
  /** The bucket keys this rule was filed under, so it can be removed. */
  readonly keys: readonly (readonly [string, string])[];
  /** The (path, value) pairs of every exact-valued field of the rule, counted in `seen`. */
  readonly seen: readonly (readonly [string, string])[];
  readonly inFallback: boolean;
}

interface ExactField {
  readonly path: string;
  readonly keys: readonly string[];
}

/** The bucket key of an event value, or undefined for values no exact matcher can index. */
function leafKey(leaf: Leaf): string {
  const value = leaf.value;
  if (typeof value === 'string') return `s:${value}`;
  if (typeof value === 'number') return `n:${String(value)}`;
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
      return `n:${String(m.value)}`;
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
  /** path → value key → number of rules with an exact-valued field using it; estimates how selective a path is. */
  private readonly seen = new Map<string, Map<string, number>>();
  private seq = 0;

  get size(): number {
    return this.rules.size;
  }

  add(id: string, pattern: unknown, value: T): void {
    const compiled = compileEventPattern(pattern);
    this.remove(id);
    const exactByBranch = compiled.branches.map(exactFields);
    const seen = new Map<string, [string, string]>();
    for (const fields of exactByBranch) {
      for (const f of fields) for (const k of f.keys) seen.set(`${f.path}\u0000${k}`, [f.path, k]);
    }
    for (const [path, k] of seen.values()) this.count(path, k, 1);
    const keys: [string, string][] = [];
    let inFallback = false;
    for (const fields of exactByBranch) {
      const chosen = this.chooseField(fields);
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
    this.rules.set(id, { id, seq: this.seq++, compiled, value, keys, seen: [...seen.values()], inFallback });
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
    for (const [path, k] of entry.seen) this.count(path, k, -1);
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
        const ids = byValue.get(leafKey(leaf));
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

  private count(path: string, key: string, delta: number): void {
    let byValue = this.seen.get(path);
    if (!byValue) {
      byValue = new Map();
      this.seen.set(path, byValue);
    }
    const n = (byValue.get(key) ?? 0) + delta;
    if (n > 0) byValue.set(key, n);
    else byValue.delete(key);
    if (byValue.size === 0) this.seen.delete(path);
  }

  /**
   * The exact-valued field expected to produce the fewest candidates: the rules already in its buckets (plus
   * this one) times the chance an event carries one of its values, estimated as 1 / (distinct values rules use
   * at that path). A path every rule gives the same value, like `source`, therefore costs the most.
   */
  private chooseField(fields: readonly ExactField[]): ExactField | undefined {
    let best: ExactField | undefined;
    let bestCost = Number.POSITIVE_INFINITY;
    for (const field of fields) {
      const byValue = this.buckets.get(field.path);
      const distinct = Math.max(1, this.seen.get(field.path)?.size ?? 1);
      let cost = 0;
      for (const k of field.keys) cost += (byValue?.get(k)?.size ?? 0) + 1;
      cost /= distinct;
      if (cost < bestCost) {
        best = field;
        bestCost = cost;
      }
    }
    return best;
  }
}

/** The fields of a branch that only accept exact values (and so can key an index bucket). */
function exactFields(branch: CompiledBranch): ExactField[] {
  const out: ExactField[] = [];
  for (const field of branch.fields) {
    if (field.allowsAbsent) continue;
    const keys: string[] = [];
    for (const m of field.matchers) {
      const k = matcherKey(m);
      if (k === undefined) break;
      keys.push(k);
    }
    if (keys.length === field.matchers.length && keys.length > 0) out.push({ path: field.path, keys });
  }
  return out;
}
