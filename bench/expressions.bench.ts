// Benchmark: the expressions of the tenant-safety review, on V8's backtracking RegExp (small sizes only: the real
// ones ran for minutes) and through crumbs' bounded evaluators, plus the cost of the bounds on a benign validation.
// Run with `node bin/run-ts.js bench/expressions.bench.ts`. Prints one row per case: median milliseconds of 5.
import { compileJsonSchema } from '../shared/domain/lang/json-schema.ts';
import { evaluateJsonata } from '../shared/domain/lang/jsonata.ts';
import { LinearRegExp } from '../shared/domain/lang/linear-regex.ts';

async function median(run: () => unknown, times = 5): Promise<number> {
  const samples: number[] = [];
  for (let i = 0; i < times; i++) {
    const start = performance.now();
    try {
      await run();
    } catch {
      // A refusal is an outcome too: its time is what is measured.
    }
    samples.push(performance.now() - start);
  }
  samples.sort((a, b) => a - b);
  return samples[Math.floor(samples.length / 2)] as number;
}

const rows: [string, number][] = [];
const row = async (name: string, run: () => unknown, times?: number) => {
  rows.push([name, await median(run, times)]);
};

for (const n of [20, 24, 26]) {
  const text = `${'a'.repeat(n)}!`;
  await row(`V8 RegExp /(a+)+$/ on ${n} a's`, () => /(a+)+$/.test(text), 1);
  await row(`LinearRegExp /(a+)+$/ on ${n} a's`, () => new LinearRegExp('(a+)+$').test(text));
}
const long = `${'a'.repeat(100_000)}!`;
await row("LinearRegExp /(a+)+$/ on 100,000 a's", () => new LinearRegExp('(a+)+$').test(long));
await row("JSONata $match of the review (30 a's)", () =>
  evaluateJsonata('$match("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!", /(a+)+$/)', {}),
);
await row(
  "JSONata $match /a*b|a/ over 100,000 a's (stops at the deadline)",
  () => evaluateJsonata('$count($match($join([1..100000].("a")), /a*b|a/))', {}),
  1,
);

const defs: Record<string, unknown> = {};
for (let i = 0; i < 24; i++)
  defs[`d${i}`] = { anyOf: [{ $ref: `#/$defs/d${i + 1}` }, { $ref: `#/$defs/d${i + 1}` }] };
defs.d24 = { type: 'string' };
let key = 0;
await row('JSON Schema: compile 24 nested anyOf $refs (refused)', () =>
  compileJsonSchema(`bench:${key++}`, { $defs: defs, $ref: '#/$defs/d0' }, 'bench'),
);
const branch = { type: 'object', properties: { a: { $ref: '#/$defs/t' } } };
const recursive = compileJsonSchema(
  'bench:recursive',
  { $defs: { t: { anyOf: [branch, branch, branch] } }, $ref: '#/$defs/t' },
  'bench',
);
let deep: unknown = {};
for (let i = 0; i < 40; i++) deep = { a: deep };
await row(
  'JSON Schema: recursive 3-way anyOf on 40 levels (stops at the budget)',
  () => recursive.validate(deep),
  3,
);
const benign = compileJsonSchema(
  'bench:benign',
  {
    type: 'array',
    items: { type: 'object', properties: { a: { type: 'integer' }, b: { type: 'string', pattern: '^x+$' } } },
  },
  'bench',
);
const items = Array.from({ length: 10_000 }, (_, i) => ({ a: i, b: 'xx' }));
await row('JSON Schema: benign 10,000 objects with a pattern', () => benign.validate(items));

const width = Math.max(...rows.map(([name]) => name.length));
for (const [name, ms] of rows) console.log(`${name.padEnd(width)}  ${ms.toFixed(1).padStart(9)} ms`);
