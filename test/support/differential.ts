/**
 * Settings shared by the differential tests, which run our own implementations of a language (templates,
 * JSONPath, the calculator) side by side with the library each one replaced, on generated inputs.
 *
 * The seed is fixed, so `npm test` runs the same cases every time and a failure reproduces. fast-check prints the
 * seed, the path and the shrunk counterexample when a property fails; `CRUMBS_DIFF_SEED=<n>` runs another seed
 * (and `CRUMBS_DIFF_RUNS=<n>` more cases) to look further without changing the test.
 */
import fc from 'fast-check';

const DEFAULT_SEED = 20_261_123;

export const DIFFERENTIAL_SEED = Number(process.env.CRUMBS_DIFF_SEED ?? DEFAULT_SEED);

/** Asserts `property` on `runs` generated cases (or `CRUMBS_DIFF_RUNS`) from the fixed seed. */
export function assertDifferential<T>(property: fc.IRawProperty<T>, runs: number): void {
  fc.assert(property, {
    seed: DIFFERENTIAL_SEED,
    numRuns: Number(process.env.CRUMBS_DIFF_RUNS ?? runs),
  });
}
