/** Helpers for integration tests: clients pointed at the local stack started by global-setup. */
import { randomBytes } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { inject } from 'vitest';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '#local/aws-env.ts';
import { type LocalStack, startLocalStack } from '#local/stack.ts';
import { DynamoBreadcrumbStore } from '#shared/adapters/dynamodb/breadcrumb-store.ts';
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

export function localStore(
  client: DynamoDBDocumentClient = DynamoDBDocumentClient.from(localDynamoClient(), {
    marshallOptions: { removeUndefinedValues: true },
  }),
): DynamoBreadcrumbStore {
  return new DynamoBreadcrumbStore({ tableName: topology.table.name, client });
}

/** A small fetch wrapper for the local API. */
export function api(workspace: string) {
  const { api: endpoint, token } = localStack();
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
export async function startStackWithoutExecutors(): Promise<{
  stack: LocalStack;
  documentClient: DynamoDBDocumentClient;
}> {
  const stack = await startLocalStack({
    apiPort: 0,
    dynamodbPort: 0,
    sqsPort: 0,
    eventbridgePort: 0,
    token: 'no-executors',
    runExecutors: false,
    seedDemo: false,
  });
  const documentClient = DynamoDBDocumentClient.from(
    new DynamoDBClient({
      endpoint: stack.endpoints.dynamodb,
      region: LOCAL_REGION,
      credentials: LOCAL_CREDENTIALS,
    }),
    { marshallOptions: { removeUndefinedValues: true } },
  );
  return { stack, documentClient };
}
