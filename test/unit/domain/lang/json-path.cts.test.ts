/**
 * The JSONPath Compliance Test Suite (RFC 9535; `test/fixtures/jsonpath-cts/`, BSD-2, source commit in SOURCE):
 * every case runs against `queryJsonPath`. A valid selector must give the suite's result (or one of its `results`
 * where member order is left open); an invalid one must be refused with a syntax error. None of the suite's cases
 * falls on crumbs' deliberate differences from the RFC (json-path/README.md: `.length`, literal patterns that are
 * not I-Regexps), so every case is held as the suite states it.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { JsonPathLimitError, JsonPathSyntaxError } from '#shared/domain/errors.ts';
import { queryJsonPath } from '#shared/domain/lang/json-path.ts';

interface CtsCase {
  name: string;
  selector: string;
  document?: unknown;
  result?: unknown[];
  results?: unknown[][];
  invalid_selector?: boolean;
  tags?: string[];
}

const suite = JSON.parse(
  readFileSync(new URL('../../../fixtures/jsonpath-cts/cts.json', import.meta.url), 'utf8'),
) as { tests: CtsCase[] };

describe('JSONPath compliance test suite', () => {
  it('holds every case of the suite', () => {
    expect(suite.tests.length).toBeGreaterThan(700);
  });

  for (const test of suite.tests) {
    it(test.name, () => {
      if (test.invalid_selector) {
        expect(() => queryJsonPath(test.selector, {})).toThrow(JsonPathSyntaxError);
        return;
      }
      let got: unknown[];
      try {
        got = queryJsonPath(test.selector, test.document);
      } catch (error) {
        if (error instanceof JsonPathLimitError) throw error;
        throw new Error(`refused a valid selector ${test.selector}: ${(error as Error).message}`);
      }
      if (test.results) {
        expect(test.results).toContainEqual(got);
      } else {
        expect(got).toEqual(test.result);
      }
    });
  }
});
