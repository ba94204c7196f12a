/**
 * The local stream resumes where it stopped. With `--data-dir`, a change committed while nothing read the stream
 * (the stack crashed before its poller got to it) is published when the stack starts again on the same data,
 * and the position read is kept in the data directory for the next start.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterAll, describe, expect, it } from 'vitest';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '#local/aws-env.ts';
import { startDynamoDbLocal } from '#local/dynamodb-local.ts';
import { ensureTable } from '#local/provision.ts';
import type { LocalStack } from '#local/stack.ts';
import { DynamoBreadcrumbStore } from '#shared/adapters/dynamodb/breadcrumb-store.ts';
import { translateConfig } from '#shared/adapters/dynamodb/items.ts';
import { topology } from '#shared/topology.ts';
import { eventually, startStackWithoutExecutors } from '../support/local.ts';

function storeOn(endpoint: string): DynamoBreadcrumbStore {
  const client = new DynamoDBClient({ endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
  return new DynamoBreadcrumbStore({
    tableName: topology.table.name,
    client: DynamoDBDocumentClient.from(client, translateConfig()),
  });
}

function filesIn(dir: string): Record<string, number> {
  return Object.fromEntries(readdirSync(dir).map((f) => [f, statSync(join(dir, f)).size]));
}

const dataDir = mkdtempSync(join(tmpdir(), 'crumbs-restart-'));
let stack: LocalStack | undefined;
/** The stack's log, shown when the definition is not answered (what the publisher and rule manager said). */
const stackLog: string[] = [];
/**
 * Every invocation of the stack's functions (publisher, rule manager, …), ms after the stack started, also shown
 * then: whether the change was published and reached the rule manager (late) or never did (lost).
 */
const invocations: string[] = [];
afterAll(async () => {
  await stack?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('local stream after a restart', () => {
  it('publishes a change committed before a crash when the stack starts again on the same data directory', async () => {
    const ws = 'restart';
    // The crash: a definition is committed to the table, and the process dies (SIGKILL) before any poller read it.
    const ddb = await startDynamoDbLocal({ port: 0, dataDir });
    const raw = new DynamoDBClient({
      endpoint: ddb.endpoint,
      region: LOCAL_REGION,
      credentials: LOCAL_CREDENTIALS,
    });
    await ensureTable(raw);
    raw.destroy();
    await storeOn(ddb.endpoint).create(
      ws,
      {
        schema_name: 'tool.def.v1',
        title: 'echo',
        tags: [],
        context: { name: 'echo', implementation: 'echo' },
      },
      { principal: 'user:test', id: 'tool-echo' },
    );
    // DynamoDB Local may answer a write before its SQLite transaction is on disk (a rollback journal left at the
    // kill undoes it on the next start, which DynamoDB itself never does): the crash comes once nothing is in flight.
    await eventually(
      async () =>
        readdirSync(join(dataDir, 'dynamodb')).some((f) => f.endsWith('-journal')) ? undefined : true,
      10_000,
    );
    const before = `written to ${ddb.endpoint} (pid ${ddb.process.pid}), files ${JSON.stringify(filesIn(join(dataDir, 'dynamodb')))}`;
    ddb.process.kill('SIGKILL');
    await new Promise((resolve) => ddb.process.once('exit', resolve));

    const startedAt = Date.now();
    ({ stack } = await startStackWithoutExecutors({
      dataDir,
      log: (line) => stackLog.push(`${Date.now() - startedAt} ms ${line}`),
      onInvocation: {
        ended: (r) =>
          invocations.push(
            `${Date.now() - startedAt} ms ${r.function} ${r.ok ? 'ok' : 'failed'} in ${Math.round(r.durationMs)} ms`,
          ),
      },
    }));
    // Published and routed: the rule manager answers the definition's change event with its status.
    const store = storeOn(stack.endpoints.dynamodb);
    const status = await eventually(
      async () =>
        (
          await store.list({
            workspace: ws,
            schema_name: 'definition.status.v1',
            tag: 'definition:tool-echo',
            limit: 1,
          })
        ).items[0],
      30_000,
    ).catch(async (error: Error) => {
      // Was the change there to publish (a stack on another DynamoDB would not have it), and what did the stack say?
      const definition = await store.get(ws, 'tool-echo').then(
        (record) => `version ${record.version}`,
        (reason: Error) => reason.message,
      );
      throw new Error(
        `${error.message}; the definition ${before}; on ${stack?.endpoints.dynamodb}: ${definition}, files after ${JSON.stringify(filesIn(join(dataDir, 'dynamodb')))}; the stack said:\n${stackLog.join('\n')}\ninvocations:\n${invocations.join('\n')}`,
      );
    });
    expect(status.context).toMatchObject({ definition_id: 'tool-echo', state: 'active' });
    await stack.settle();
    const checkpoints = JSON.parse(readFileSync(join(dataDir, 'stream-checkpoints.json'), 'utf8')) as Record<
      string,
      Record<string, string>
    >;
    expect(Object.values(checkpoints).flatMap((shards) => Object.values(shards)).length).toBeGreaterThan(0);
  }, 180_000);
});
