import { describe, expect, it } from 'vitest';
import { GuardrailDefinitionSchema } from '#shared/rooms/guardrails/definition.ts';
import { PII_TYPES } from '#shared/rooms/guardrails/detectors.ts';
import { compilePolicy, patternFindings } from '#shared/rooms/guardrails/scan.ts';
import { CORPUS_TYPES, piiCorpus, scoreCorpus } from '../../../support/pii-corpus.ts';

const policy = compilePolicy(
  'all-pii',
  1,
  GuardrailDefinitionSchema.parse({
    guardrail_id: 'all-pii',
    pii: PII_TYPES.map((type) => ({ type, action: 'mask' })),
  }),
);

describe('The PII detectors on the generated corpus', () => {
  const { positive, negative } = piiCorpus(20);

  it('holds at least 200 positive and 200 negative texts covering every built-in type', () => {
    expect(positive.length).toBeGreaterThanOrEqual(200);
    expect(negative.length).toBeGreaterThanOrEqual(200);
    expect([...CORPUS_TYPES].sort()).toEqual([...PII_TYPES].sort());
  });

  it('is the same corpus on every run (seeded)', () => {
    expect(piiCorpus(20).positive.map((t) => t.text)).toEqual(positive.map((t) => t.text));
  });

  it('finds every pattern-detectable type with recall and precision of at least 0.95', () => {
    const scores = scoreCorpus([...positive, ...negative], (text) => patternFindings(policy, text));
    const report = scores.map(
      (s) =>
        `${s.type.padEnd(15)} recall ${s.recall.toFixed(3)} precision ${s.precision.toFixed(3)} (tp ${s.truePositives}, fp ${s.falsePositives}, fn ${s.falseNegatives})`,
    );
    process.stdout.write(`${report.join('\n')}\n`);
    for (const s of scores) {
      expect({ type: s.type, recall: s.recall >= 0.95, precision: s.precision >= 0.95 }).toEqual({
        type: s.type,
        recall: true,
        precision: true,
      });
    }
  });

  it('finds nothing in the look-alikes: cards failing Luhn, IBANs with wrong check digits, unissued SSNs', () => {
    for (const imitated of ['card', 'iban', 'us_ssn', 'uk_nino', 'de_tax_id'] as const) {
      const texts = negative.filter((t) => t.imitates === imitated);
      const hits = texts.filter((t) => patternFindings(policy, t.text).some((f) => f.type === imitated));
      expect({ imitated, hits: hits.map((h) => h.text) }).toEqual({ imitated, hits: [] });
    }
  });
});
