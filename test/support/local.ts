/** Helpers for integration tests: clients pointed at the local stack started by global-setup. */
import { randomBytes } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { inject } from 'vitest';
import { main } from '#cli/main.ts';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '#local/aws-env.ts';
import { type LocalStack, type LocalStackOptions, startLocalStack } from '#local/stack.ts';
import { DynamoBreadcrumbStore } from '#shared/adapters/dynamodb/breadcrumb-store.ts';
import { translateConfig } from '#shared/adapters/dynamodb/items.ts';
import { topology } from '#shared/topology.ts';

export function localStack() {
  return inject('crumbs');
}

export function uniqueWorkspace(prefix = 'ws'): string {
  return `${prefix}-${randomBytes(5).toString('hex')}`;
}

export function localDynamoClient(): DynamoDBClient {
  return new DynamoDBClient({
    endpoint: localStack().dynamodb,
    region: LOCAL_REGION,
    credentials: LOCAL_CREDENTIALS,
  });
}

/**
 * Every item of a workspace (breadcrumbs and their bookkeeping: versions, tags, idempotency, hints, …) but its
 * request rate cell (`#rate#requests`), which every request in the workspace moves, refused ones included: a test
 * that compares a workspace before and after requests compares what they wrote, not that they were counted.
 */
export async function workspaceItems(
  workspace: string,
  client: DynamoDBDocumentClient = DynamoDBDocumentClient.from(localDynamoClient(), translateConfig()),
): Promise<Record<string, unknown>[]> {
  const items: Record<string, unknown>[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const page = await client.send(
      new ScanCommand({
        TableName: topology.table.name,
        FilterExpression: '#ws = :ws',
        ExpressionAttributeNames: { '#ws': 'workspace' },
        ExpressionAttributeValues: { ':ws': workspace },
        ConsistentRead: true,
        ...(start ? { ExclusiveStartKey: start } : {}),
      }),
    );
    items.push(...(page.Items ?? []));
    start = page.LastEvaluatedKey;
  } while (start);
  return items
    .filter((i) => !String(i.id).startsWith('#rate#'))
    .sort((a, b) => String(a.id).localeCompare(String(b.id)));
}

/**
 * The workspace's items once the stream has caught up: read until two reads 300 ms apart agree. The publisher
 * writes a breadcrumb's further tag items after the write itself (table-design.md "Tags"), so a test that reads
 * listings or items right after writing without going through the routed path waits for it here.
 */
export async function settledItems(
  workspace: string,
  client?: DynamoDBDocumentClient,
): Promise<Record<string, unknown>[]> {
  let last = JSON.stringify(await workspaceItems(workspace, client));
  for (let attempt = 0; attempt < 50; attempt++) {
    await new Promise((r) => setTimeout(r, 300));
    const items = await workspaceItems(workspace, client);
    const now = JSON.stringify(items);
    if (now === last) return items;
    last = now;
  }
  throw new Error(`workspace ${workspace} kept changing`);
}

export function localStore(
  client: DynamoDBDocumentClient = DynamoDBDocumentClient.from(localDynamoClient(), translateConfig()),
): DynamoBreadcrumbStore {
  return new DynamoBreadcrumbStore({ tableName: topology.table.name, client });
}

/** A small fetch wrapper for the local API (the all-workspaces token unless another is given). */
export function api(workspace: string, token: string = localStack().token) {
  const { api: endpoint } = localStack();
  const base = `${endpoint}/v1/workspaces/${workspace}/breadcrumbs`;
  return {
    base,
    async call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
      const res = await fetch(`${base}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${token}`,
          ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
          ...headers,
        },
        ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
      });
      const text = await res.text();
      return {
        status: res.status,
        headers: res.headers,
        body: text ? (JSON.parse(text) as Record<string, unknown>) : {},
      };
    },
  };
}

export async function eventually<T>(
  check: () => Promise<T | undefined>,
  timeoutMs = 15_000,
  intervalMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/**
 * For tests that play the executor pipeline hop by hop: a local stack of their own whose executors do not run
 * (the shared stack's executors would race them for the same triggers), and a document client on its DynamoDB.
 */
export async function startStackWithoutExecutors(extra: LocalStackOptions = {}): Promise<{
  stack: LocalStack;
  documentClient: DynamoDBDocumentClient;
}> {
  const stack = await startLocalStack({
    apiPort: 0,
    dynamodbPort: 0,
    sqsPort: 0,
    eventbridgePort: 0,
    schedulerPort: 0,
    token: 'no-executors',
    runExecutors: false,
    seedDemo: false,
    ...extra,
  });
  const documentClient = DynamoDBDocumentClient.from(
    new DynamoDBClient({
      endpoint: stack.endpoints.dynamodb,
      region: LOCAL_REGION,
      credentials: LOCAL_CREDENTIALS,
    }),
    translateConfig(),
  );
  return { stack, documentClient };
}

/** Runs the `crumbs` CLI in process against the local stack in `workspace`, its output collected. */
export async function crumbs(
  workspace: string,
  ...args: string[]
): Promise<{ code: number; out: string; err: string }> {
  const { api, token } = localStack();
  let out = '';
  let err = '';
  const code = await main([...args, '--endpoint', api, '--token', token, '--workspace', workspace], {
    stdout: (s) => {
      out += s;
    },
    stderr: (s) => {
      err += s;
    },
    env: {},
  });
  return { code, out, err };
}
