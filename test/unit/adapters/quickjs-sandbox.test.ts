import { spawn } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { QuickJsSandbox } from '#shared/adapters/sandbox/quickjs-sandbox.ts';
import type { SandboxLimits, SandboxResult } from '#shared/ports/sandbox.ts';

const sandbox = new QuickJsSandbox();
const limits = { timeoutMs: 1000, memoryMb: 16 };

function run(
  code: string,
  input: unknown = {},
  bridge = {},
  l: SandboxLimits = limits,
): Promise<SandboxResult> {
  return sandbox.run(code, input, bridge, l);
}

describe('QuickJsSandbox', () => {
  afterAll(() => sandbox.close());

  it('runs async function handler(input, ctx) and returns its result', async () => {
    const result = await run('async function handler(input) { return { sum: input.a + input.b }; }', {
      a: 2,
      b: 3,
    });
    expect(result).toEqual({ ok: true, value: { sum: 5 }, logs: [] });
  });

  it('ends a running loop when its signal aborts, and keeps working after', async () => {
    const controller = new AbortController();
    const running = run(
      'async function handler() { for (;;) {} }',
      {},
      {},
      {
        timeoutMs: 60_000,
        memoryMb: 16,
        signal: controller.signal,
      },
    );
    setTimeout(() => controller.abort(), 100);
    expect(await running).toMatchObject({ ok: false, error: 'the run was stopped by its executor' });
    expect(await run('async function handler() { return 2; }')).toMatchObject({ ok: true, value: 2 });
  });

  it('captures console output', async () => {
    const result = await run(
      'async function handler() { console.log("hello", { n: 1 }); console.error("oops"); return 1; }',
    );
    expect(result).toEqual({ ok: true, value: 1, logs: ['log: hello {"n":1}', 'error: oops'] });
  });

  it('bridges ctx calls asynchronously, with JSON in and out', async () => {
    const calls: unknown[] = [];
    const result = await run(
      'async function handler(input, ctx) { const r = await ctx.search({ q: input.q }); const c = await ctx.create({ title: "t" }); return { r, c }; }',
      { q: 'cats' },
      {
        search: async (arg: unknown) => {
          calls.push(arg);
          return [{ id: '1' }];
        },
        create: async () => ({ id: 'new' }),
      },
    );
    expect(result).toEqual({ ok: true, value: { r: [{ id: '1' }], c: { id: 'new' } }, logs: [] });
    expect(calls).toEqual([{ q: 'cats' }]);
  });

  it('turns a failing bridged call into an exception the code can catch', async () => {
    const result = await run(
      'async function handler(input, ctx) { try { await ctx.callTool({ tool: "x" }); } catch (e) { return String(e.message); } }',
      {},
      {
        callTool: async () => {
          throw new Error('no such tool');
        },
      },
    );
    expect(result).toEqual({ ok: true, value: 'ctx.callTool: no such tool', logs: [] });
  });

  it('reports code that does not load, or defines no handler', async () => {
    expect(await run('async function handler( {')).toMatchObject({ ok: false, reason: 'invalid-code' });
    expect(await run('const x = 1;')).toMatchObject({ ok: false, error: expect.stringContaining('handler') });
  });

  it('reports an exception thrown by the handler', async () => {
    expect(await run('async function handler() { throw new TypeError("bad input"); }')).toMatchObject({
      ok: false,
      reason: 'error',
      error: 'TypeError: bad input',
    });
  });

  describe('escapes are contained', () => {
    it('interrupts an infinite loop at the time limit', async () => {
      const result = await run(
        'async function handler() { while (true) {} }',
        {},
        {},
        { timeoutMs: 200, memoryMb: 16 },
      );
      expect(result).toMatchObject({
        ok: false,
        reason: 'timeout',
        error: expect.stringContaining('200 ms'),
      });
    });

    it('interrupts a synchronous infinite loop at load time too', async () => {
      const result = await run('for (;;) {}', {}, {}, { timeoutMs: 200, memoryMb: 16 });
      expect(result).toMatchObject({ ok: false, reason: 'timeout' });
    });

    it('stops a memory bomb at the memory limit', async () => {
      const result = await run(
        'async function handler() { const a = []; let s = "x"; for (;;) { s = s + s.length; a.push(s.split("")); } }',
        {},
        {},
        { timeoutMs: 3000, memoryMb: 8 },
      );
      expect(result).toMatchObject({
        ok: false,
        reason: 'memory',
        error: expect.stringContaining('memory_mb'),
      });
    });

    it('ends a builtin-heavy memory bomb at the deadline even where QuickJS cannot interrupt it', async () => {
      const result = await run(
        'async function handler() { const a = []; for (;;) a.push(new Array(100000).fill(0)); }',
        {},
        {},
        { timeoutMs: 500, memoryMb: 8 },
      );
      if (result.ok) throw new Error('the memory bomb returned');
      expect(['memory', 'timeout']).toContain(result.reason);
    });

    it('stops runaway recursion', async () => {
      const result = await run('async function handler() { const f = () => f(); return f(); }');
      expect(result).toMatchObject({ ok: false, reason: 'error', error: expect.stringMatching(/stack/i) });
    });

    it('counts time spent waiting on bridged calls against the limit', async () => {
      const result = await run(
        'async function handler(input, ctx) { return await ctx.search({}); }',
        {},
        { search: () => new Promise((resolve) => setTimeout(() => resolve([]), 2000)) },
        { timeoutMs: 150, memoryMb: 16 },
      );
      expect(result).toMatchObject({ ok: false, reason: 'timeout' });
    });

    it.each([
      ['process', 'return typeof process'],
      ['require', 'return typeof require'],
      ['fetch', 'return typeof fetch'],
      ['timers', 'return typeof setTimeout'],
      ['os/std modules', 'return typeof std + typeof os'],
    ])('offers no %s', async (_name, body) => {
      const result = await run(`async function handler() { ${body}; }`);
      expect(result.ok && String(result.value)).toMatch(/^(undefined)+$/);
    });

    it('fails calls to process, require and fetch with errors', async () => {
      for (const call of ['process.exit(1)', 'require("fs")', 'fetch("http://169.254.169.254/")']) {
        expect(await run(`async function handler() { return ${call}; }`)).toMatchObject({
          ok: false,
          error: expect.stringMatching(/ReferenceError/),
        });
      }
    });

    it('fails import() of a module', async () => {
      const result = await run(
        'async function handler() { const fs = await import("fs"); return typeof fs; }',
      );
      expect(result.ok).toBe(false);
    });

    it('keeps globalThis tampering inside the run', async () => {
      const tamper = await run(`
        Object.prototype.polluted = 'yes';
        globalThis.JSON = { stringify: () => '"hijacked"', parse: JSON.parse };
        Array.prototype.map = function () { return 'hijacked'; };
        async function handler() { return 1; }
      `);
      // The runner serializes through JSON: with JSON replaced, the run's own result is what the code made of it.
      expect(tamper).toBeDefined();
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
      expect([1, 2].map((x) => x * 2)).toEqual([2, 4]);
      const clean = await run(
        'async function handler() { return [({}).polluted ?? null, [1].map((x) => x + 1)]; }',
      );
      expect(clean).toEqual({ ok: true, value: [null, [2]], logs: [] });
    });

    it('cannot reach the host through the bridge or the console', async () => {
      const result = await run(
        `async function handler(input, ctx) {
        const leaks = [];
        for (const f of [console.log, ctx.search]) {
          try { leaks.push(typeof f.constructor('return this')().process); } catch (e) { leaks.push('blocked'); }
        }
        return leaks;
      }`,
        {},
        { search: async () => [] },
      );
      expect(result).toEqual({ ok: true, value: ['undefined', 'undefined'], logs: [] });
    });

    it('runs normally after contained escapes', async () => {
      const result = await run('async function handler(input) { return input.n * 2; }', { n: 21 });
      expect(result).toEqual({ ok: true, value: 42, logs: [] });
    });
  });
});

describe('QuickJsSandbox workers', () => {
  const limits = { timeoutMs: 400, memoryMb: 16 };
  const ok = 'async function handler(input) { await Promise.resolve(); return { n: input.n }; }';

  it('ends runs that QuickJS cannot free (a timeout mid-loop in a promise job, allocation in jobs) without its assertion, and serves the next runs', async () => {
    const output: string[] = [];
    const sandbox = new QuickJsSandbox({ onWorkerOutput: (text) => output.push(text) });
    try {
      const interrupted = await sandbox.run(
        'async function handler() { await null; const a = []; for (;;) a.push({ i: 1 }); }',
        {},
        {},
        limits,
      );
      // Interrupted mid-job either way: whichever limit the loop reaches first (the machine's speed decides).
      expect(['timeout', 'memory']).toContain((interrupted as { reason?: string }).reason);
      const promiseLoop = await sandbox.run(
        'async function handler() { for (;;) { await Promise.resolve({ a: 1 }); } }',
        {},
        {},
        limits,
      );
      expect(promiseLoop).toMatchObject({ ok: false, reason: 'timeout' });
      const jobs = await sandbox.run(
        'async function handler() { await null; const a = []; for (let i = 0; i < 200000; i++) a.push({ i }); return a.length; }',
        {},
        {},
        { timeoutMs: 10_000, memoryMb: 64 },
      );
      expect(jobs).toEqual({ ok: true, value: 200000, logs: [] });
      for (let n = 0; n < 3; n++) {
        expect(await sandbox.run(ok, { n }, {}, limits)).toEqual({ ok: true, value: { n }, logs: [] });
      }
      expect(output.join('')).not.toContain('Assertion failed');
      expect(output).toEqual([]);
    } finally {
      await sandbox.close();
    }
  });

  it('answers a promise loop stopped at its deadline as a timeout, on a fresh worker and after it', async () => {
    const sandbox = new QuickJsSandbox({ onWorkerOutput: () => {} });
    try {
      for (let n = 0; n < 4; n++) {
        const loop = await sandbox.run(
          'async function handler() { for (;;) { await Promise.resolve({ a: 1 }); } }',
          {},
          {},
          { timeoutMs: 200, memoryMb: 16 },
        );
        expect(loop).toMatchObject({ ok: false, reason: 'timeout' });
      }
    } finally {
      await sandbox.close();
    }
  });

  it('replaces a worker that crashes mid-run: the run fails, the next is served by a fresh worker', async () => {
    const sandbox = new QuickJsSandbox({
      workerUrl: new URL('../../support/crashing-quickjs-worker.mjs', import.meta.url),
      onWorkerOutput: () => {},
    });
    try {
      expect(await sandbox.run(ok, { n: 1 }, {}, limits)).toMatchObject({ ok: true });
      const crashed = await sandbox.run(
        'async function handler(input, ctx) { /* __crash_worker__ */ await ctx.wait(); }',
        {},
        { wait: () => new Promise(() => {}) },
        { timeoutMs: 10_000, memoryMb: 16 },
      );
      expect(crashed).toEqual({
        ok: false,
        reason: 'error',
        error: 'the sandbox stopped (exit code 70)',
        logs: [],
      });
      expect(await sandbox.run(ok, { n: 2 }, {}, limits)).toEqual({ ok: true, value: { n: 2 }, logs: [] });
    } finally {
      await sandbox.close();
    }
  });

  it('forgets an idle worker that died, so the next run starts a fresh one instead of waiting on a dead one', async () => {
    const sandbox = new QuickJsSandbox({ onWorkerOutput: () => {} });
    try {
      expect(await sandbox.run(ok, { n: 1 }, {}, limits)).toMatchObject({ ok: true });
      const idle = (sandbox as unknown as { idle: import('node:worker_threads').Worker | undefined }).idle;
      expect(idle).toBeDefined();
      await idle?.terminate();
      expect(await sandbox.run(ok, { n: 3 }, {}, limits)).toEqual({ ok: true, value: { n: 3 }, logs: [] });
    } finally {
      await sandbox.close();
    }
  });

  it('passes on what a worker writes to its own stdout and stderr', async () => {
    const output: string[] = [];
    const sandbox = new QuickJsSandbox({
      workerUrl: new URL('../../support/noisy-quickjs-worker.mjs', import.meta.url),
      onWorkerOutput: (text) => output.push(text),
    });
    try {
      expect(await sandbox.run(ok, { n: 1 }, {}, limits)).toMatchObject({ ok: true });
      await expect.poll(() => output.join('')).toContain('noisy worker: a run\n');
      expect(output.join('')).toContain('noisy worker: loaded\n');
    } finally {
      await sandbox.close();
    }
  });

  it('lets a process that is done exit while a worker idles (nothing holds its event loop)', async () => {
    const child = spawn(process.execPath, ['bin/run-ts.js', 'test/support/sandbox-then-exit.ts'], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
    });
    // Left to itself: the test's own timeout is what fails a process that hangs.
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(code).toBe(0);
    expect(JSON.parse(out)).toEqual({ ok: true, value: 42, logs: [] });
  }, 60_000);
});
