/**
 * `crumbs dev` as a user runs it: a child process that starts the whole local stack, answers /health, and on
 * Ctrl-C (SIGINT) or SIGTERM stops everything — no DynamoDB Local java process is left behind — and refuses a port
 * that is already taken with a message that names it.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';

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
});
