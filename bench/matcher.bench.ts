// Benchmark: RuleIndex.match versus evaluating every compiled pattern, for realistic crumbs subscription rules.
// Run with `node bin/run-ts.js bench/matcher.bench.ts`. Prints one row per rule count.
import { type CompiledPattern, compileEventPattern, flattenEvent } from '../shared/routing/event-pattern.ts';
import { RuleIndex } from '../shared/routing/rule-index.ts';

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

const r = rng(42);
const int = (n: number): number => Math.floor(r() * n);
const WORKSPACES = 200;
const AGENTS = 50;
const SCHEMAS = ['note.text.v1', 'task.todo.v1', 'task.done.v1', 'tool.call.v1', 'tool.result.v1', 'x.y.v1'];
const TYPES = ['Breadcrumb Created', 'Breadcrumb Updated', 'Breadcrumb Deleted'];

function rule(i: number): unknown {
  const ws = `ws-${int(WORKSPACES)}`;
  const detail: Record<string, unknown> = {
    workspace: [ws],
    schema_name: [SCHEMAS[int(SCHEMAS.length)]],
    created_by: [{ 'anything-but': `agent:a-${int(AGENTS)}` }],
  };
  const kind = i % 10;
  if (kind < 4) detail.tags = [`t-${int(10)}`];
  if (kind === 4) detail.priority = [{ numeric: ['>=', int(5)] }];
  if (kind === 5) detail.schema_name = [{ prefix: 'task.' }];
  if (kind === 6) detail.parent_id = [{ exists: false }];
  const pattern: Record<string, unknown> = {
    source: ['crumbs'],
    'detail-type': ['Breadcrumb Created', 'Breadcrumb Updated'],
    detail,
  };
  if (kind === 7) {
    delete detail.schema_name;
    pattern.detail = {
      ...detail,
      $or: [{ schema_name: [SCHEMAS[int(SCHEMAS.length)]] }, { tags: [`t-${int(10)}`] }],
    };
  }
  return pattern;
}

function event(): unknown {
  return {
    version: '0',
    id: `id-${int(1e9)}`,
    'detail-type': TYPES[int(TYPES.length)],
    source: 'crumbs',
    account: '123456789012',
    time: '2026-01-01T00:00:00Z',
    region: 'eu-west-1',
    resources: [],
    detail: {
      workspace: `ws-${int(WORKSPACES)}`,
      schema_name: SCHEMAS[int(SCHEMAS.length)],
      created_by: `agent:a-${int(AGENTS)}`,
      tags: [`t-${int(10)}`, `t-${int(10)}`],
      priority: int(10),
      ...(r() < 0.5 ? { parent_id: `bc-${int(1000)}` } : {}),
      body: { text: 'hello', items: [{ k: 'a' }, { k: 'b' }] },
    },
  };
}

/** Run `fn` over the events repeatedly for about `ms` milliseconds; returns events per second. */
function throughput(events: readonly unknown[], ms: number, fn: (e: unknown) => number): number {
  let n = 0;
  let sink = 0;
  const start = performance.now();
  let elapsed = 0;
  while (elapsed < ms) {
    for (const e of events) sink += fn(e);
    n += events.length;
    elapsed = performance.now() - start;
  }
  if (sink < 0) throw new Error('unreachable');
  return (n / elapsed) * 1000;
}

const events = Array.from({ length: 2000 }, event);
const rows: string[][] = [['rules', 'indexed ev/s', 'naive ev/s', 'speed-up', 'avg matches/event']];

for (const count of [100, 1_000, 10_000]) {
  const index = new RuleIndex<string>();
  const compiled: CompiledPattern[] = [];
  for (let i = 0; i < count; i++) {
    const p = rule(i);
    index.add(`rule-${i}`, p, `rule-${i}`);
    compiled.push(compileEventPattern(p));
  }
  // Sanity check: both strategies agree on a sample.
  let matches = 0;
  for (const e of events.slice(0, 200)) {
    const flat = flattenEvent(e);
    const naive = compiled.filter((c) => c.matchesFlat(flat)).length;
    const indexed = index.match(e).length;
    if (naive !== indexed) throw new Error(`mismatch at ${count} rules: naive ${naive}, indexed ${indexed}`);
    matches += naive;
  }
  const budget = count >= 10_000 ? 4000 : 2000;
  const indexed = throughput(events, budget, (e) => index.match(e).length);
  const naive = throughput(events.slice(0, count >= 10_000 ? 100 : 500), budget, (e) => {
    // Same work a naive router does: flatten once, evaluate every compiled pattern.
    const flat = flattenEvent(e);
    let n = 0;
    for (const c of compiled) if (c.matchesFlat(flat)) n++;
    return n;
  });
  rows.push([
    count.toLocaleString('en-US'),
    Math.round(indexed).toLocaleString('en-US'),
    Math.round(naive).toLocaleString('en-US'),
    `${(indexed / naive).toFixed(1)}x`,
    (matches / 200).toFixed(2),
  ]);
}

const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
for (const row of rows) console.log(row.map((cell, i) => cell.padStart(widths[i]!)).join('  '));
