/**
 * Helpers for the adversarial suite: API clients for each team (scoped tokens) and the operator, and a snapshot of
 * a workspace's items to show that an attack changed nothing there.
 */
import { randomBytes } from 'node:crypto';
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

/** Team-a's items but its probes' own (ids `probe-…`): what an attack must leave as it was. */
export async function teamAData(): Promise<Record<string, unknown>[]> {
  return (await workspaceItems('team-a')).filter((item) => !JSON.stringify(item).includes('probe-'));
}

/** Writes a tool.request.v1 of `tool` as `team` for each input, at once; the request ids. */
export async function writeToolRequests(
  team: ReturnType<typeof client>,
  tool: string,
  inputs: readonly unknown[],
): Promise<string[]> {
  return Promise.all(
    inputs.map(async (input) => {
      const requestId = `attack-${randomBytes(4).toString('hex')}`;
      const created = await team.call('POST', '/breadcrumbs', {
        schema_name: 'tool.request.v1',
        tags: [`request:${requestId}`],
        context: { tool, input, requestId },
      });
      if (created.status >= 300)
        throw new Error(`tool request: ${created.status} ${JSON.stringify(created.body)}`);
      return requestId;
    }),
  );
}

/** Every tool.response.v1 answering `requestId` in the team's workspace, once there is one. */
export async function toolAnswers(
  team: ReturnType<typeof client>,
  requestId: string,
  timeoutMs = 80_000,
): Promise<Record<string, unknown>[]> {
  return eventually(
    async () => {
      const page = await team.call(
        'GET',
        `/breadcrumbs?schema_name=tool.response.v1&tag=${encodeURIComponent(`request:${requestId}`)}&limit=5&view=full`,
      );
      const items = ((page.body.items ?? []) as { context: Record<string, unknown> }[]).map((i) => i.context);
      return items.length > 0 ? items : undefined;
    },
    `the answer to ${requestId}`,
    timeoutMs,
  );
}
