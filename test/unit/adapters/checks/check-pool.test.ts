/**
 * The check pool and the data checks in front of it: checks past the slice run in a worker thread while the event
 * loop goes on, workspaces are served in turn with a cap on what one may queue, a worker past its deadline or that
 * crashes is replaced, and errors come back as their own classes. Orders of events only, never durations.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { CheckPool, ChecksBusyError } from '#shared/adapters/checks/check-pool.ts';
import { pooledChecks } from '#shared/adapters/checks/checks.ts';
import { type CheckTask, runCheck } from '#shared/adapters/checks/tasks.ts';
import {
  InvalidJsonSchemaError,
  JsonSchemaWorkLimitError,
  NonRetriableError,
  RetriableError,
} from '#shared/domain/errors.ts';

const pools: CheckPool[] = [];
const poolOf = (options: ConstructorParameters<typeof CheckPool>[0]) => {
  const pool = new CheckPool(options);
  pools.push(pool);
  return pool;
};
afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.close()));
});

const GUARD = { timeout: 60_000 };

/** 2,000 values against a 3,000-entry enum of objects: past the slice, and past the full budget. */
const enumAttack = (n = 3_000) => ({
  cacheKey: `enum-${n}`,
  schema: { type: 'array', items: { enum: Array.from({ length: n }, (_, i) => ({ kind: 'item', id: i })) } },
  what: "evil's input_schema",
  value: Array.from({ length: 2_000 }, () => ({ kind: 'item', id: n - 1 })),
  root: 'input',
});

/** An expression that runs for a while in full (well past the slice): `items` strings made one by one. */
const slowExpression = (tag: string, timeoutMs = 60_000, items = 20_000) => ({
  expression: `($t := "${tag}"; $count([1..${items}].($string($))) > 0 ? $t : "")`,
  data: {},
  timeoutMs,
});

describe('data checks', () => {
  it('answers a check within the slice on the caller thread, without a worker', async () => {
    // A worker that could not even start: checks within the slice never need one.
    const checks = pooledChecks(
      poolOf({ workers: 1, workerUrl: new URL('data:text/javascript,throw new Error("no worker")') }),
    );
    expect(
      await checks.validate('a', {
        cacheKey: 'int',
        schema: { type: 'integer' },
        what: 'x',
        value: 'no',
        root: 'input',
      }),
    ).toEqual([{ path: 'input', message: 'must be integer' }]);
    expect(await checks.evaluate('a', { expression: 'a + 1', data: { a: 1 } })).toBe(2);
  });

  it('runs a check past the slice in a worker while the event loop goes on', GUARD, async () => {
    const checks = pooledChecks(poolOf({ workers: 1 }));
    const order: string[] = [];
    const heavy = checks.validate('b', enumAttack()).then(
      () => order.push('heavy answered'),
      (error: unknown) => {
        expect(error).toBeInstanceOf(JsonSchemaWorkLimitError);
        expect((error as Error).message).toMatch(/JSON_SCHEMA_LIMITS\.maxWork/);
        order.push('heavy refused');
      },
    );
    // The event loop turns, and a small check of another workspace is answered, while the heavy one runs.
    await new Promise((resolve) => setImmediate(resolve));
    order.push('event loop turned');
    await checks.validate('a', { cacheKey: 's', schema: { type: 'string' }, what: 'x', value: 's' });
    order.push('small check answered');
    await heavy;
    expect(order).toEqual(['event loop turned', 'small check answered', 'heavy refused']);
  });

  it('serves workspaces in turn: one flooding the pool does not hold another back', GUARD, async () => {
    const pool = poolOf({ workers: 1 });
    const order: string[] = [];
    const run = (workspace: string, tag: string) =>
      pool.run(workspace, { kind: 'jsonata', ...slowExpression(tag) }).then((outcome) => {
        if (!outcome.ok) throw new Error(JSON.stringify(outcome));
        order.push(String(outcome.value));
      });
    const flood = [1, 2, 3, 4].map((i) => run('flood', `f${i}`));
    const quiet = run('quiet', 'q');
    await Promise.all([...flood, quiet]);
    // The flood was first in line with f2 when the quiet workspace came; then they alternate. In arrival order
    // the quiet check would have waited for all four.
    expect(order).toEqual(['f1', 'f2', 'q', 'f3', 'f4']);
  });

  it('keeps a worker free for other workspaces when it has several', GUARD, async () => {
    const pool = poolOf({ workers: 2 });
    const order: string[] = [];
    const run = (workspace: string, tag: string) =>
      pool.run(workspace, { kind: 'jsonata', ...slowExpression(tag) }).then(() => order.push(tag));
    const flood = [1, 2, 3, 4, 5, 6].map((i) => run('flood', `f${i}`));
    const quiet = run('quiet', 'q');
    await Promise.all([...flood, quiet]);
    // The flood holds one of the two workers at a time (its share), so the quiet check runs beside it at once and
    // is answered while most of the flood still waits its turn.
    expect(order.indexOf('q')).toBeLessThan(order.indexOf('f4'));
  });

  it('refuses a workspace more checks than it may queue, naming the limit', GUARD, async () => {
    const pool = poolOf({ workers: 1, queuePerWorkspace: 2 });
    const task: CheckTask = { kind: 'jsonata', ...slowExpression('x') };
    const running = [pool.run('b', task), pool.run('b', task), pool.run('b', task)];
    expect(() => pool.run('b', task)).toThrow(ChecksBusyError);
    expect(() => pool.run('b', task)).toThrow(/queuePerWorkspace/);
    // Another workspace still gets in.
    const other = pool.run('a', { kind: 'jsonata', expression: '1', data: {} });
    await Promise.all([...running, other]);
    expect(await other).toEqual({ ok: true, value: 1 });
  });

  it(
    'takes a waiting check out of the queue when its caller leaves, answering it as retriable',
    GUARD,
    async () => {
      const pool = poolOf({ workers: 1 });
      const order: string[] = [];
      const run = (tag: string, signal?: AbortSignal) =>
        pool.run('b', { kind: 'jsonata', ...slowExpression(tag) }, signal).then((outcome) => {
          order.push(outcome.ok ? String(outcome.value) : `${tag}: ${JSON.stringify(outcome)}`);
        });
      const caller = new AbortController();
      const runs = [run('first'), run('left', caller.signal), run('after')];
      caller.abort();
      await Promise.all(runs);
      // The abandoned check never ran: the one behind it took its place.
      expect(order).toEqual([
        'left: {"ok":false,"error":{"type":"retriable","message":"the check was abandoned by its caller before a worker took it"}}',
        'first',
        'after',
      ]);
      // Through the data checks, as a RetriableError (an SQS message comes back); a signal already aborted is
      // never queued.
      const checks = pooledChecks(pool);
      await expect(checks.evaluate('b', slowExpression('gone'), AbortSignal.abort())).rejects.toBeInstanceOf(
        RetriableError,
      );
    },
  );

  it('stops a check at its deadline, replaces the worker and answers the next', GUARD, async () => {
    const checks = pooledChecks(poolOf({ workers: 1, deadlineMs: 300 }));
    await expect(checks.evaluate('b', slowExpression('x', 120_000, 900_000))).rejects.toThrow(
      /ran past 300 ms \(CHECK_POOL_LIMITS\.deadlineMs\) and was stopped/,
    );
    expect(await checks.evaluate('a', { expression: '$sum([1..3000])', data: {} })).toBe(4_501_500);
  });

  it('fails the checks of a worker that cannot run, as errors', GUARD, async () => {
    const checks = pooledChecks(
      poolOf({ workers: 1, workerUrl: new URL('data:text/javascript,throw new Error("boom")') }),
    );
    await expect(checks.validate('b', enumAttack())).rejects.toThrow(/the check's worker failed: boom/);
  });

  it('brings each error back as its own class', GUARD, async () => {
    const checks = pooledChecks(poolOf({ workers: 1 }));
    const schema = { $defs: { a: { $ref: '#/$defs/missing' } }, $ref: '#/$defs/a' };
    await expect(
      checks.validate('b', { cacheKey: 'bad', schema, what: 'bad', value: 1 }),
    ).rejects.toBeInstanceOf(InvalidJsonSchemaError);
    await expect(checks.evaluate('b', { expression: '$error("nope")', data: {} })).rejects.toBeInstanceOf(
      NonRetriableError,
    );
  });
});

describe('a check in a slice', () => {
  it('says the slice ran out, deciding nothing, where the full check decides', async () => {
    const task: CheckTask = { kind: 'schema', ...enumAttack(300) };
    expect(await runCheck(task, 'slice')).toEqual({ ok: false, slice: true });
    expect(await runCheck(task, 'full')).toEqual({ ok: true, value: [] });
    const expression: CheckTask = { kind: 'jsonata', expression: '$sum([1..5000].($ * 2))', data: {} };
    expect(await runCheck(expression, 'slice')).toEqual({ ok: false, slice: true });
    expect(await runCheck(expression, 'full')).toEqual({ ok: true, value: 25_005_000 });
  });

  it("stops a read's templates at the read's budget, each view saying so", async () => {
    const template = '{{#each a}}{{#each ../a}}.{{/each}}{{/each}}';
    const hints = { transform: { n: { type: 'template' as const, template } } };
    const record = {
      id: 'r',
      workspace: 'w',
      schema_name: 'x.y.v1',
      title: '',
      tags: [],
      context: { a: Array.from({ length: 600 }, (_, i) => i) },
      version: 1,
      checksum: '',
      created_at: '',
      updated_at: '',
      created_by: 'user:a',
      updated_by: 'user:a',
    };
    const items = Array.from({ length: 16 }, () => ({ record, hints }));
    const outcome = await runCheck({ kind: 'views', items }, 'full');
    if (!outcome.ok) throw new Error('views never fail');
    const contexts = (outcome.value as { context: { n: unknown } }[]).map((v) => v.context.n);
    // Each render is some 720,000 steps: the read's 10,000,000 render 13 of them; the others say why they were not.
    expect(contexts.filter((c) => typeof c === 'string')).toHaveLength(13);
    expect(contexts.at(-1)).toEqual({ error: expect.stringMatching(/TEMPLATE_LIMITS\.maxStepsPerRead/) });
  });
});
