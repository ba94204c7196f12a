/**
 * Entry for the bundled check pool test (`test/infra/check-worker-bundle.test.ts`): bundled as an executor is, with
 * `check-worker.mjs` bundled beside it, it runs a check too large for the slice (in the worker the pool starts from
 * that file), one within it, and an expression, and prints what each answered as JSON.
 */
import { CheckPool } from '#shared/adapters/checks/check-pool.ts';
import { pooledChecks } from '#shared/adapters/checks/checks.ts';
import { JsonSchemaWorkLimitError } from '#shared/domain/errors.ts';

const pool = new CheckPool({ workers: 1 });
const checks = pooledChecks(pool);
const entries = Array.from({ length: 3_000 }, (_, i) => ({ kind: 'item', id: i }));
const outcome = async (check: () => Promise<unknown>) => {
  try {
    return { value: await check() };
  } catch (error) {
    // Class names are minified in a bundle: the class itself says what the error is.
    const limit = error instanceof JsonSchemaWorkLimitError ? { limit: error.limit } : {};
    return { error: (error as Error).message, ...limit };
  }
};
const heavy = await outcome(() =>
  checks.validate('ws', {
    cacheKey: 'enum',
    schema: { type: 'array', items: { enum: entries } },
    what: 'the tool input_schema',
    value: Array.from({ length: 2_000 }, () => ({ kind: 'item', id: 2_999 })),
    root: 'input',
  }),
);
const light = await outcome(() =>
  checks.validate('ws', {
    cacheKey: 'light',
    schema: { type: 'integer' },
    what: 'x',
    value: 'a',
    root: 'input',
  }),
);
const expression = await outcome(() =>
  checks.evaluate('ws', { expression: '$sum([1..5000].($ * 2))', data: {} }),
);
await pool.close();
process.stdout.write(JSON.stringify({ heavy, light, expression }));
