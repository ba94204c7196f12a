import { describe, expect, it } from 'vitest';
import { InvalidEventPatternError, matchesEventPattern } from '../../../shared/routing/event-pattern.ts';
import { RuleIndex } from '../../../shared/routing/rule-index.ts';

/** Small deterministic PRNG (mulberry32) so failures are reproducible. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const SOURCES = ['crumbs', 'aws.ec2', 'other'];
const TYPES = ['Breadcrumb Created', 'Breadcrumb Updated', 'Tool Called'];
const WORKSPACES = ['ws-1', 'ws-2', 'ws-3', '10.0.0.1'];
const SCHEMAS = ['a.b.v1', 'x.y.v1', 'x.y.v2'];
const TAGS = ['t-1', 't-2', 't-3'];
const NUMBERS = [0, 1, 2.5, 300, -7];

function generators(r: () => number) {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const some = <T>(xs: readonly T[]): T[] => {
    const out = xs.filter(() => r() < 0.4);
    return out.length > 0 ? out : [pick(xs)];
  };
  const stringMatcher = (xs: readonly string[]): unknown => {
    const s = pick(xs);
    switch (Math.floor(r() * 9)) {
      case 0:
        return { prefix: s.slice(0, 2) };
      case 1:
        return { suffix: s.slice(-2) };
      case 2:
        return { 'anything-but': s };
      case 3:
        return { 'anything-but': { prefix: s.slice(0, 3) } };
      case 4:
        return { 'equals-ignore-case': s.toUpperCase() };
      case 5:
        return { wildcard: `${s.slice(0, 1)}*` };
      case 6:
        return { exists: r() < 0.5 };
      default:
        return s;
    }
  };
  const values = (xs: readonly string[]): unknown[] => {
    const n = 1 + Math.floor(r() * 2);
    return Array.from({ length: n }, () => stringMatcher(xs));
  };
  const numberMatcher = (): unknown => {
    switch (Math.floor(r() * 4)) {
      case 0:
        return { numeric: ['>', pick(NUMBERS)] };
      case 1:
        return { numeric: ['>=', -10, '<', pick([1, 5, 500])] };
      case 2:
        return { 'anything-but': [pick(NUMBERS)] };
      default:
        return pick(NUMBERS);
    }
  };
  const detail = (): Record<string, unknown> => {
    const d: Record<string, unknown> = {};
    if (r() < 0.6) d.workspace = values(WORKSPACES);
    if (r() < 0.5) d.schema_name = some(SCHEMAS);
    if (r() < 0.3) d.tags = values(TAGS);
    if (r() < 0.3) d.n = [numberMatcher()];
    if (r() < 0.2) d.items = { k: some(TAGS), v: [numberMatcher()] };
    if (Object.keys(d).length === 0) d.workspace = [pick(WORKSPACES)];
    return d;
  };
  const pattern = (): Record<string, unknown> => {
    const p: Record<string, unknown> = {};
    if (r() < 0.7) p.source = some(SOURCES);
    if (r() < 0.5) p['detail-type'] = values(TYPES);
    if (r() < 0.15) {
      p.$or = [{ detail: detail() }, { 'detail-type': some(TYPES) }];
    } else if (r() < 0.1) {
      p['detail.workspace'] = some(WORKSPACES);
    } else {
      p.detail = detail();
    }
    return p;
  };
  const event = (): Record<string, unknown> => {
    const d: Record<string, unknown> = {};
    if (r() < 0.9) d.workspace = pick(WORKSPACES);
    if (r() < 0.8) d.schema_name = pick(SCHEMAS);
    if (r() < 0.7) d.tags = some(TAGS);
    if (r() < 0.6) d.n = pick([...NUMBERS, null, '1']);
    if (r() < 0.5) {
      d.items = Array.from({ length: 1 + Math.floor(r() * 3) }, () => ({ k: pick(TAGS), v: pick(NUMBERS) }));
    }
    return { source: pick(SOURCES), 'detail-type': pick(TYPES), detail: d };
  };
  return { pattern, event };
}

describe('RuleIndex', () => {
  it('returns exactly what evaluating every pattern returns (randomised)', () => {
    for (const seed of [1, 2]) {
      const r = rng(seed);
      const { pattern, event } = generators(r);
      const index = new RuleIndex<string>();
      const rules: [string, unknown][] = [];
      for (let i = 0; i < 300; i++) {
        const p = pattern();
        rules.push([`r${i}`, p]);
        index.add(`r${i}`, p, `r${i}`);
      }
      // Replace and remove some rules so the index has churned.
      for (let i = 0; i < 60; i++) {
        const k = Math.floor(r() * rules.length);
        const [id] = rules[k]!;
        if (r() < 0.5) {
          const p = pattern();
          index.add(id, p, id);
          rules.splice(k, 1);
          rules.push([id, p]);
        } else {
          expect(index.remove(id)).toBe(true);
          rules.splice(k, 1);
        }
      }
      expect(index.size).toBe(rules.length);
      let total = 0;
      for (let e = 0; e < 300; e++) {
        const ev = event();
        const naive = rules.filter(([, p]) => matchesEventPattern(p, ev)).map(([id]) => id);
        const indexed = index.match(ev);
        expect(indexed).toEqual(naive);
        total += naive.length;
      }
      expect(total).toBeGreaterThan(100); // the generator must produce real matches, not only misses
    }
  }, 60_000);

  it('adds, matches and removes rules', () => {
    const index = new RuleIndex<number>();
    index.add('a', { source: ['crumbs'] }, 1);
    index.add('b', { detail: { workspace: ['ws-1'] } }, 2);
    index.add('c', { detail: { n: [{ numeric: ['>', 5] }] } }, 3);
    expect(index.size).toBe(3);
    expect(index.match({ source: 'crumbs', detail: { workspace: 'ws-1', n: 6 } })).toEqual([1, 2, 3]);
    expect(index.match({ source: 'x', detail: { workspace: 'ws-2', n: 6 } })).toEqual([3]);
    expect(index.remove('c')).toBe(true);
    expect(index.remove('c')).toBe(false);
    expect(index.size).toBe(2);
    expect(index.match({ source: 'x', detail: { workspace: 'ws-2', n: 6 } })).toEqual([]);
  });

  it('replaces a rule added again under the same id', () => {
    const index = new RuleIndex();
    index.add('a', { source: ['one'] }, 'first');
    index.add('a', { source: ['two'] }, 'second');
    expect(index.size).toBe(1);
    expect(index.match({ source: 'one' })).toEqual([]);
    expect(index.match({ source: 'two' })).toEqual(['second']);
  });

  it('returns each rule once even when several branches match', () => {
    const index = new RuleIndex();
    index.add('a', { $or: [{ source: ['s'] }, { 'detail-type': ['t'] }] }, 'a');
    expect(index.match({ source: 's', 'detail-type': 't' })).toEqual(['a']);
  });

  it('keeps a rule when its pattern is invalid and does not add the invalid one', () => {
    const index = new RuleIndex();
    index.add('a', { source: ['s'] }, 'a');
    expect(() => index.add('a', { source: 's' }, 'b')).toThrow(InvalidEventPatternError);
    expect(index.match({ source: 's' })).toEqual(['a']);
  });

  it('matches numerically equal values through the index', () => {
    const index = new RuleIndex();
    index.add('a', '{"detail":{"n":[300.0]}}', 'a');
    expect(index.match('{"detail":{"n":3e2}}')).toEqual(['a']);
  });

  it('matches rules without exact fields through the fallback list', () => {
    const index = new RuleIndex();
    index.add('p', { source: [{ prefix: 'cru' }] }, 'p');
    index.add('x', { detail: { gone: [{ exists: false }] } }, 'x');
    expect(index.match({ source: 'crumbs', detail: {} })).toEqual(['p', 'x']);
  });

  it('returns nothing for an empty index', () => {
    expect(new RuleIndex().match({ source: 'x' })).toEqual([]);
  });
});
