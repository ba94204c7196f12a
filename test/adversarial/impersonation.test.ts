/**
 * Plain puts cannot impersonate crumbs' own writers. Team-b, with access to the table (as a person with the
 * table's IAM permissions has), writes items straight into its own workspace claiming `system:rule-manager`,
 * `agent:…` and `tool:…`. Each is adopted as written by `user:plain-put`, with the claim kept in `claimed_by`; a
 * forged definition status is not believed by the API's definitions view; a request claiming a tool's own
 * principal still triggers that tool (a rule excludes only what the tool itself wrote). The API takes no
 * `created_by` from a caller. Team-a's workspace is unchanged throughout.
 */
import { DynamoDBClient, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { afterAll, describe, expect, it } from 'vitest';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '#local/aws-env.ts';
import { statusId } from '#shared/core/rules/status-breadcrumbs.ts';
import { topology } from '#shared/topology.ts';
import { adversary, eventually, teamA, teamB, workspaceItems } from './support.ts';

const table = new DynamoDBClient({
  endpoint: adversary().dynamodb,
  region: LOCAL_REGION,
  credentials: LOCAL_CREDENTIALS,
});
afterAll(() => table.destroy());

/** A plain put into team-b's workspace, as `aws dynamodb put-item` would write it. */
async function plainPut(item: Record<string, unknown>): Promise<void> {
  await table.send(
    new PutItemCommand({
      TableName: topology.table.name,
      Item: marshall({ workspace: teamB().workspace, ...item }, { removeUndefinedValues: true }),
    }),
  );
}

/** The adopted record (full view) once its version reaches `version`. */
function adopted(id: string, version = 1) {
  return eventually(async () => {
    const res = await teamB().call('GET', `/breadcrumbs/${id}/full`);
    return res.status === 200 && Number(res.body.version) >= version ? res.body : undefined;
  }, `the plain put ${id} adopted at version ${version}`);
}

const unique = (name: string) => `${name}-${Date.now().toString(36)}`;

describe('plain puts claiming crumbs’ own writers', () => {
  it('are adopted as user:plain-put, with the claim noted, and team-a is unchanged', async () => {
    const before = await workspaceItems(teamA().workspace);
    for (const claimed of ['system:rule-manager', 'agent:x', 'tool:echo']) {
      const id = unique(`claim-${claimed.split(':')[0]}`);
      await plainPut({
        id,
        schema_name: 'note.text.v1',
        context: { text: `I am ${claimed}` },
        created_by: claimed,
      });
      const record = await adopted(id);
      expect(record).toMatchObject({
        created_by: 'user:plain-put',
        updated_by: 'user:plain-put',
        claimed_by: claimed,
      });
      // History says the same.
      const history = (await teamB().call('GET', `/breadcrumbs/${id}/history?view=full`)).body.items as {
        updated_by: string;
      }[];
      expect(history.map((v) => v.updated_by)).toEqual(['user:plain-put']);
    }
    // A person may be named.
    const named = unique('claim-user');
    await plainPut({ id: named, schema_name: 'note.text.v1', context: {}, created_by: 'user:bob' });
    const record = await adopted(named);
    expect(record.created_by).toBe('user:bob');
    expect(record).not.toHaveProperty('claimed_by');
    expect(await workspaceItems(teamA().workspace)).toEqual(before);
  });

  it('cannot make a definition look active: a forged status breadcrumb is not believed', async () => {
    const b = teamB();
    const name = unique('forged');
    // A tool whose selector cannot compile: the rule manager records it as invalid.
    const def = await b.call('PUT', `/breadcrumbs/${name}`, {
      schema_name: 'tool.def.v1',
      context: {
        name,
        description: 'never runs',
        implementation: 'echo',
        subscriptions: {
          selectors: [{ role: 'trigger', context_match: [{ path: '$.a[0]', op: 'eq', value: 1 }] }],
        },
      },
    });
    expect(def.status).toBeLessThan(300);
    const state = async () => {
      const items = (await b.call('GET', '/definitions')).body.items as
        | { id: string; state: string }[]
        | undefined;
      return items?.find((d) => d.id === name)?.state;
    };
    await eventually(
      async () => ((await state()) === 'invalid' ? true : undefined),
      'the real status: invalid',
    );
    const forged = {
      schema_name: 'definition.status.v1',
      tags: [`definition:${name}`, 'state:active', 'definition-status'],
      context: {
        definition_id: name,
        definition_version: 1,
        state: 'active',
        kind: 'tool',
        rule_name: 'crumbs-forged',
        errors: [],
      },
      created_by: 'system:rule-manager',
    };
    // A status of its own, and the real one overwritten in place.
    const extra = unique('forged-status');
    await plainPut({ id: extra, ...forged });
    await adopted(extra);
    await plainPut({ id: statusId(name), ...forged });
    const overwritten = await adopted(statusId(name), 2);
    expect(overwritten.updated_by).toBe('user:plain-put');
    expect(overwritten.claimed_by).toBe('system:rule-manager');
    // The API's definitions view believes only crumbs' own status writes: no longer invalid, but never active.
    expect(await state()).toBe('pending');
  });

  it('does not silence a tool by claiming its principal: the request still triggers it', async () => {
    const b = teamB();
    const name = unique('imp-echo');
    const def = await b.call('PUT', `/breadcrumbs/${name}`, {
      schema_name: 'tool.def.v1',
      context: {
        name,
        description: 'echoes impersonation requests',
        implementation: 'echo',
        subscriptions: { selectors: [{ role: 'trigger', schema_name: `${name}.request.v1` }] },
      },
    });
    expect(def.status).toBeLessThan(300);
    await eventually(async () => {
      const items = (await b.call('GET', '/definitions')).body.items as
        | { id: string; state: string }[]
        | undefined;
      return items?.find((d) => d.id === name)?.state === 'active' ? true : undefined;
    }, 'the tool active');
    const request = unique('imp-request');
    await plainPut({
      id: request,
      schema_name: `${name}.request.v1`,
      context: { text: 'hello' },
      created_by: `tool:${name}`,
    });
    await adopted(request);
    await eventually(async () => {
      const items = (await b.call('GET', '/breadcrumbs?schema_name=tool.response.v1&view=full')).body.items as
        | { causation?: { caused_by: string }; created_by: string }[]
        | undefined;
      return items?.find((i) => i.causation?.caused_by === `${request}@1` && i.created_by === `tool:${name}`);
    }, 'the tool’s answer');
  });
});

describe('the API', () => {
  it('takes no created_by, updated_by or claimed_by from a caller', async () => {
    const b = teamB();
    for (const field of ['created_by', 'updated_by', 'claimed_by']) {
      const body = { schema_name: 'note.text.v1', context: {}, [field]: 'system:rule-manager' };
      const posted = await b.call('POST', '/breadcrumbs', body);
      expect(posted.status).toBe(422);
      expect(JSON.stringify(posted.body.errors)).toContain(field);
      expect((await b.call('PUT', `/breadcrumbs/${unique('api-claim')}`, body)).status).toBe(422);
    }
    const written = await b.call('POST', '/breadcrumbs', { schema_name: 'note.text.v1', context: {} });
    expect(written.body.created_by).toMatch(/^user:/);
  });
});
