/**
 * `crumbs dev` as a user runs it: a child process that starts the whole local stack, answers /health, and on
 * Ctrl-C (SIGINT) or SIGTERM stops everything — no DynamoDB Local java process is left behind — also after a
 * function agent ran (its sandbox's idle worker holds nothing open: the process exits by itself, no second Ctrl-C,
 * no child left), refuses a port that is already taken with a message that names it, and ends by itself when a
 * service fails to start (what it started meanwhile is stopped).
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';

/** Every `crumbs dev` a test started: one a failed test leaves running is stopped after it. */
const started: ChildProcess[] = [];

afterEach(() => {
  for (const child of started.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
});

function startDev(args: string[] = []): { child: ChildProcess; output: () => string } {
  let output = '';
  const child = spawn(
    process.execPath,
    [
      'bin/crumbs.js',
      'dev',
      '--json',
      '--port',
      '0',
      '--dynamodb-port',
      '0',
      '--sqs-port',
      '0',
      '--eventbridge-port',
      '0',
      ...args,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  started.push(child);
  child.stdout?.on('data', (d: Buffer) => {
    output += d.toString();
  });
  child.stderr?.on('data', (d: Buffer) => {
    output += d.toString();
  });
  return { child, output: () => output };
}

async function ready(
  output: () => string,
  // Generous: a loaded CI machine can take half a minute to start DynamoDB Local and the handlers.
  timeoutMs = 120_000,
): Promise<{ endpoints: Record<string, string>; token: string }> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const line = output()
      .split('\n')
      .find((l) => l.startsWith('{"endpoints"'));
    if (line) return JSON.parse(line) as { endpoints: Record<string, string>; token: string };
    if (Date.now() > deadline) throw new Error(`not ready: ${output()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function exited(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    if (child.exitCode !== null) resolve(child.exitCode);
    else child.once('exit', (code) => resolve(code));
  });
}

/** The process ids of `pid`'s children (and theirs), as `pgrep -P` sees them now. */
function descendants(pid: number): number[] {
  let children: number[];
  try {
    children = execFileSync('pgrep', ['-P', String(pid)])
      .toString()
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map(Number);
  } catch {
    children = [];
  }
  return children.flatMap((child) => [child, ...descendants(child)]);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function javaOnPort(port: string): string {
  try {
    return execFileSync('pgrep', ['-f', `DynamoDBLocal.jar.*-port ${port}`])
      .toString()
      .trim();
  } catch {
    return '';
  }
}

describe('crumbs dev', () => {
  it.each(['SIGINT', 'SIGTERM'] as const)(
    'serves the API and stops everything on %s',
    async (signal) => {
      const { child, output } = startDev();
      const { endpoints } = await ready(output);
      const health = (await (await fetch(`${endpoints.api}/health`)).json()) as {
        status: string;
        local: Record<string, string>;
      };
      expect(health).toMatchObject({
        status: 'ok',
        local: { dynamodb: endpoints.dynamodb, eventbridge: endpoints.eventbridge },
      });
      const dynamodbPort = new URL(endpoints.dynamodb ?? '').port;
      expect(javaOnPort(dynamodbPort)).not.toBe('');

      child.kill(signal);
      expect(await exited(child)).toBe(0);
      expect(output()).toContain('stopped');
      expect(javaOnPort(dynamodbPort)).toBe('');
      await expect(fetch(`${endpoints.api}/health`)).rejects.toThrow();
    },
    180_000,
  );

  it('stops on the first Ctrl-C after a function agent ran: it exits by itself and leaves no child', async () => {
    const { child, output } = startDev();
    const { endpoints, token } = await ready(output);
    const api = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${endpoints.api}/v1/workspaces/fn-stop${path}`, {
        method,
        headers: {
          authorization: `Bearer ${token}`,
          ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
      return (await res.json()) as Record<string, unknown>;
    };
    await api('PUT', '/breadcrumbs/agent-adder', {
      schema_name: 'agent.def.v1',
      title: 'adder',
      context: {
        agent_id: 'adder',
        type: 'function',
        function_code: 'async function handler(input) { return { sum: input.a + input.b }; }',
        transport: { kind: 'function', function: { timeout_ms: 2000, memory_mb: 16 } },
      },
    });
    const deadline = Date.now() + 90_000;
    let answer: Record<string, unknown> | undefined;
    let asked: string | undefined;
    while (answer === undefined && Date.now() < deadline) {
      // Asked again until the rule is active (a request written before that is not routed).
      const request = await api('POST', '/breadcrumbs', {
        schema_name: 'agent.request.v1',
        tags: [],
        context: { agent: 'adder', input: { a: 2, b: 3 } },
      });
      asked = String(request.id);
      for (let look = 0; look < 20 && answer === undefined; look++) {
        await new Promise((r) => setTimeout(r, 250));
        const page = await api(
          'GET',
          `/breadcrumbs?schema_name=agent.response.v1&tag=request:${asked}&view=full`,
        );
        answer = (page.items as Record<string, unknown>[] | undefined)?.[0];
      }
    }
    expect(answer?.context, output()).toMatchObject({ status: 'success', output: { sum: 5 } });
    const children = descendants(child.pid ?? 0);
    expect(children.length).toBeGreaterThan(0); // DynamoDB Local's java, at least

    child.kill('SIGINT');
    // One Ctrl-C: the process ends by itself (a hang fails the test by its timeout).
    expect(await exited(child)).toBe(0);
    expect(output()).toContain('stopped');
    expect(output()).not.toContain('again: exiting without waiting');
    expect(children.filter(alive)).toEqual([]);
  }, 240_000);

  it('refuses a port that is in use, saying which and how to choose another', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = String((blocker.address() as { port: number }).port);
    try {
      const { child, output } = startDev(['--port', port]);
      expect(await exited(child)).toBe(1);
      expect(output()).toContain(`port ${port} (HTTP API) is already in use`);
      expect(output()).toContain('--port');
    } finally {
      blocker.close();
    }
  });

  it('ends by itself when DynamoDB Local cannot start, the SQS emulator it started meanwhile stopped', async () => {
    // DynamoDB Local keeps its data in <data-dir>/dynamodb: a file there makes it fail after SQS is up.
    const dataDir = mkdtempSync(join(tmpdir(), 'crumbs-dev-fail-'));
    writeFileSync(join(dataDir, 'dynamodb'), 'not a folder');
    const sqs = createServer();
    await new Promise<void>((resolve) => sqs.listen(0, '127.0.0.1', resolve));
    const sqsPort = String((sqs.address() as { port: number }).port);
    await new Promise<void>((resolve) => sqs.close(() => resolve()));
    try {
      const { child, output } = startDev(['--data-dir', dataDir, '--sqs-port', sqsPort]);
      // No signal: the process reports the failure and exits (a hang fails the test by its timeout).
      expect(await exited(child)).toBe(1);
      expect(output()).toMatch(/crumbs dev: .*dynamodb/i);
      // The emulator's port is free again: binding it succeeds.
      const again = createServer();
      await new Promise<void>((resolve, reject) => {
        again.once('error', reject);
        again.listen(Number(sqsPort), '127.0.0.1', resolve);
      });
      again.close();
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 120_000);
});
