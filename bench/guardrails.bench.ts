// Benchmark: what guardrails add. Run with `npm run bench:guardrails`.
//  1. The added latency per check on a 2,000-token prompt (about 8,000 characters of prose with a few values
//     sprinkled in): median and p95 of one check, per built-in detector, all of them, a custom pattern and a
//     100-term word list, and what masking adds.
//  2. The added time to first token of a `buffer` stream: the stream holds back the longest match any enabled
//     detector can make, so the first characters leave once that many more have arrived. Measured on a simulated
//     stream of one word every 25 ms (the offline model's pace), in stream time, for each policy.
//  3. Recall and precision per type on the generated PII corpus (the same as the unit test's).
import { GuardrailDefinitionSchema, type GuardrailInput } from '../shared/rooms/guardrails/definition.ts';
import { PII_TYPES } from '../shared/rooms/guardrails/detectors.ts';
import { Guard } from '../shared/rooms/guardrails/guard.ts';
import { compilePolicy, patternFindings } from '../shared/rooms/guardrails/scan.ts';
import { guardedSink } from '../shared/rooms/guardrails/stream-guard.ts';
import { Placeholders } from '../shared/rooms/guardrails/vault.ts';
import { piiCorpus, scoreCorpus } from '../test/support/pii-corpus.ts';

const WORDS =
  'the order shipped on time and the customer asked about the invoice for last month please'.split(' ');
function prompt(chars: number): string {
  let s = '';
  let i = 0;
  while (s.length < chars) {
    s += `${WORDS[i % WORDS.length]} `;
    if (i % 300 === 150) s += 'write to ann.smith@example.com or call +44 20 7946 0958. ';
    if (i % 500 === 250) s += 'card 4111 1111 1111 1111 on file. ';
    i++;
  }
  return s;
}

// A 2,000-token prompt: about 4 characters per token in English prose.
const TEXT = prompt(8_000);

function policyOf(input: GuardrailInput) {
  return compilePolicy(input.guardrail_id, 1, GuardrailDefinitionSchema.parse(input));
}

function timeIt(fn: () => unknown, runs = 200): { p50: number; p95: number } {
  for (let i = 0; i < 10; i++) fn();
  const samples: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = process.hrtime.bigint();
    fn();
    samples.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  samples.sort((a, b) => a - b);
  return { p50: samples[Math.floor(runs / 2)] as number, p95: samples[Math.floor(runs * 0.95)] as number };
}

const rows: [string, GuardrailInput][] = [
  ...PII_TYPES.map((type): [string, GuardrailInput] => [
    `pii:${type}`,
    { guardrail_id: type, pii: [{ type, action: 'mask' }] },
  ]),
  ['pii:all', { guardrail_id: 'all', pii: PII_TYPES.map((type) => ({ type, action: 'mask' as const })) }],
  [
    'custom pattern',
    { guardrail_id: 'c', patterns: [{ name: 'ticket', pattern: 'TCK-[0-9]{6}', action: 'mask' }] },
  ],
  [
    'word list (100 terms)',
    {
      guardrail_id: 'w',
      words: { terms: Array.from({ length: 100 }, (_, i) => `forbidden${i}`), action: 'block' },
    },
  ],
];

process.stdout.write(`1. Added latency per check on a 2,000-token prompt (${TEXT.length} characters)\n`);
process.stdout.write(`${'check'.padEnd(24)} ${'p50 ms'.padStart(8)} ${'p95 ms'.padStart(8)}\n`);
for (const [name, input] of rows) {
  const policy = policyOf(input);
  const { p50, p95 } = timeIt(() => patternFindings(policy, TEXT), name === 'pii:all' ? 100 : 200);
  process.stdout.write(`${name.padEnd(24)} ${p50.toFixed(3).padStart(8)} ${p95.toFixed(3).padStart(8)}\n`);
}
{
  // The whole check point: every detector, then the values replaced by their placeholders.
  const policy = policyOf({
    guardrail_id: 'all',
    pii: PII_TYPES.map((type) => ({ type, action: 'mask' as const })),
  });
  const samples: number[] = [];
  for (let i = 0; i < 100; i++) {
    const guard = new Guard([policy], new Placeholders());
    const t0 = process.hrtime.bigint();
    const r = await guard.check('input', [{ part: 'user', text: TEXT }]);
    samples.push(Number(process.hrtime.bigint() - t0) / 1e6);
    if (!r.texts[0]?.includes('[CARD_1]')) throw new Error('the check did not mask');
  }
  samples.sort((a, b) => a - b);
  const [p50, p95] = [samples[50] as number, samples[95] as number];
  process.stdout.write(
    `${'pii:all, masked (Guard)'.padEnd(24)} ${p50.toFixed(3).padStart(8)} ${p95.toFixed(3).padStart(8)}\n`,
  );
}

process.stdout.write('\n2. Added time to first token under buffer (one word every 25 ms)\n');
const WORD_MS = 25;
const answer = prompt(2_000).split(/(?<= )/);
for (const [name, input] of [
  ['email', { guardrail_id: 'e', pii: [{ type: 'email', action: 'mask' }] }],
  ['card', { guardrail_id: 'c', pii: [{ type: 'card', action: 'mask' }] }],
  ['iban', { guardrail_id: 'i', pii: [{ type: 'iban', action: 'mask' }] }],
  ['pii:all', { guardrail_id: 'all', pii: PII_TYPES.map((type) => ({ type, action: 'mask' as const })) }],
] as [string, GuardrailInput][]) {
  const guard = new Guard([policyOf(input)], new Placeholders());
  let firstAt: number | undefined;
  let now = 0;
  const sink = guardedSink(
    {
      write: () => {
        firstAt ??= now;
      },
      reset: () => undefined,
      final: async () => undefined,
      close: async () => undefined,
    },
    guard,
  );
  for (const [i, word] of answer.entries()) {
    now = i * WORD_MS;
    sink.write(word);
    if (firstAt !== undefined) break;
  }
  process.stdout.write(
    `${name.padEnd(10)} holds back ${String(guard.holdBack).padStart(4)} characters: first token after ${String(firstAt ?? Number.NaN).padStart(5)} ms of stream time (unguarded: 0 ms)\n`,
  );
}

process.stdout.write('\n3. Recall and precision per type on the generated corpus\n');
const { positive, negative } = piiCorpus(20);
const all = policyOf({
  guardrail_id: 'all',
  pii: PII_TYPES.map((type) => ({ type, action: 'mask' as const })),
});
process.stdout.write(`(${positive.length} positive, ${negative.length} negative texts)\n`);
for (const s of scoreCorpus([...positive, ...negative], (text) => patternFindings(all, text))) {
  process.stdout.write(
    `${s.type.padEnd(16)} recall ${s.recall.toFixed(3)}  precision ${s.precision.toFixed(3)}\n`,
  );
}
