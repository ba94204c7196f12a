/**
 * Helpers for the adversarial suite: API clients for each team (scoped tokens) and the operator, and a snapshot of
 * a workspace's items to show that an attack changed nothing there.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { inject } from 'vitest';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '#local/aws-env.ts';
import { translateConfig } from '#shared/adapters/dynamodb/items.ts';
import { workspaceItems as itemsOf } from '../support/local.ts';

export function adversary() {
  return inject('adversary');
}

export interface ApiAnswer {
  status: number;
  headers: Headers;
  body: Record<string, unknown>;
}

/** A client of the API as one token: paths are relative to `/v1/workspaces/{workspace}`. */
export function client(workspace: string, token: string) {
  const { api } = adversary();
  const base = `${api}/v1/workspaces/${workspace}`;
  return {
    workspace,
    base,
    async call(method: string, path: string, body?: unknown): Promise<ApiAnswer> {
      const res = await fetch(`${base}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${token}`,
          ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        },
        ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
      });
      const text = await res.text();
      let parsed: Record<string, unknown> = {};
      try {
        parsed = text ? (JSON.parse(text) as Record<string, unknown>) : {};
      } catch {
        parsed = { text };
      }
      return { status: res.status, headers: res.headers, body: parsed };
    },
  };
}

/** Team a, the victim: its own scoped token. */
export function teamA() {
  const { teamA: t } = adversary();
  return client(t.workspace, t.token);
}

/** Team b, the attacker: its own scoped token. */
export function teamB() {
  const { teamB: t } = adversary();
  return client(t.workspace, t.token);
}

/** Every item of a workspace, read straight from the table (breadcrumbs and their bookkeeping), sorted by key. */
export async function workspaceItems(workspace: string): Promise<Record<string, unknown>[]> {
  const client = DynamoDBDocumentClient.from(
    new DynamoDBClient({
      endpoint: adversary().dynamodb,
      region: LOCAL_REGION,
      credentials: LOCAL_CREDENTIALS,
    }),
    translateConfig(),
  );
  try {
    return await itemsOf(workspace, client);
  } finally {
    client.destroy();
  }
}

/** Polls `check` until it returns a value other than undefined, or fails after `timeoutMs`. */
export async function eventually<T>(
  check: () => Promise<T | undefined>,
  what: string,
  timeoutMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** Writes a definition as `team` and waits until the rule manager calls it active. */
export async function defineActive(
  team: ReturnType<typeof client>,
  id: string,
  schema_name: string,
  context: Record<string, unknown>,
): Promise<void> {
  const put = await team.call('PUT', `/breadcrumbs/${id}`, { schema_name, title: id, context });
  if (put.status >= 300) throw new Error(`definition ${id}: ${put.status} ${JSON.stringify(put.body)}`);
  const version = Number(put.body.version);
  await eventually(async () => {
    const list = await team.call(
      'GET',
      `/breadcrumbs?schema_name=definition.status.v1&tag=${encodeURIComponent(`definition:${id}`)}&view=full`,
    );
    const status = (list.body.items as { context: Record<string, unknown> }[] | undefined)?.[0]?.context;
    if (!status || Number(status.definition_version) < version) return undefined;
    if (status.state !== 'active') throw new Error(`definition ${id} is ${JSON.stringify(status)}`);
    return status;
  }, `definition ${id} active`);
}

/** The agent.response.v1 answering `requestId` in the team's workspace, once there is one. */
export async function answerTo(
  team: ReturnType<typeof client>,
  requestId: string,
): Promise<Record<string, unknown> | undefined> {
  const list = await team.call(
    'GET',
    `/breadcrumbs?schema_name=agent.response.v1&tag=${encodeURIComponent(`request:${requestId}`)}&view=full`,
  );
  return (list.body.items as { context: Record<string, unknown> }[] | undefined)?.[0]?.context;
}
