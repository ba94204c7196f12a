/**
 * Definitions written straight into the table, as the README's "Plain puts" section shows (`aws dynamodb put-item`
 * with attribute values, no API), end to end on the shared local stack: the stream consumer adopts them, the rule
 * manager makes them `active`, and what they subscribe to is routed to them and answered — a tool answers a
 * `tool.request.v1`, and an agent whose `context` is a string holding JSON answers an `agent.request.v1` after
 * calling that tool (scripted model `calls-<tools>`). A later put of the tool (version 2) is what runs next.
 */
import { PutItemCommand } from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import { CrumbsClient } from '#cli/api-client.ts';
import { topology } from '#shared/topology.ts';
import { eventually, localDynamoClient, localStack, uniqueWorkspace } from '../support/local.ts';

function client(ws: string): CrumbsClient {
  const { api: endpoint, token } = localStack();
  return new CrumbsClient({ endpoint, token, workspace: ws });
}

/** `aws dynamodb put-item --table-name <BreadcrumbsTable> --item '…'`, as the README writes it. */
async function putItem(item: Record<string, unknown>): Promise<void> {
  const ddb = localDynamoClient();
  await ddb.send(new PutItemCommand({ TableName: topology.table.name, Item: item as never }));
}

/** The definition's status once the rule manager made version `version` (or later) active. */
async function activeStatus(c: CrumbsClient, id: string, version: number) {
  return eventually(async () => {
    const page = await c.list({
      schema_name: 'definition.status.v1',
      tag: `definition:${id}`,
      limit: 1,
      view: 'full',
    });
    const s = page.items[0]?.context;
    return s && Number(s.definition_version) >= version && s.state === 'active' ? s : undefined;
  }, 60_000);
}

async function answerTo(c: CrumbsClient, schema_name: string, requestId: string) {
  return eventually(
    async () => (await c.list({ schema_name, tag: `request:${requestId}`, limit: 1, view: 'full' })).items[0],
    60_000,
  );
}

describe('definitions written with a plain put', () => {
  it('a tool and an agent put straight into the table become active, are routed to and answer', async () => {
    const ws = uniqueWorkspace('plain-put-defs');
    const c = client(ws);
    // The README's example, verbatim but for the workspace.
    await putItem({
      id: { S: 'echo-tool' },
      workspace: { S: ws },
      schema_name: { S: 'tool.def.v1' },
      title: { S: 'Echo' },
      tags: { L: [{ S: 'tool' }] },
      context: { M: { name: { S: 'echo' }, implementation: { S: 'echo' } } },
    });
    const tool = await activeStatus(c, 'echo-tool', 1);
    expect(tool).toMatchObject({ state: 'active' });
    const adopted = await c.getFull('echo-tool');
    expect(adopted).toMatchObject({ version: 1, created_by: 'user:plain-put' });

    // Routed: a request for the tool is answered by the tool executor.
    const request = await c.create({
      schema_name: 'tool.request.v1',
      title: 'echo please',
      context: { tool: 'echo', input: { nonce: 'n-1' }, requestedBy: 'user:test' },
    });
    const response = await answerTo(c, 'tool.response.v1', request.id);
    expect(response.context).toMatchObject({ status: 'success', output: { nonce: 'n-1' } });

    // An agent whose context is a string holding JSON, calling the plain-put tool.
    await putItem({
      id: { S: 'agent-helper' },
      workspace: { S: ws },
      schema_name: { S: 'agent.def.v1' },
      context: {
        S: JSON.stringify({
          agent_id: 'helper',
          system_prompt: 'Work.',
          model: 'openai-compatible/calls-echo',
          tools: ['echo'],
        }),
      },
    });
    await activeStatus(c, 'agent-helper', 1);
    const asked = await c.create({
      schema_name: 'agent.request.v1',
      title: 'ask helper',
      tags: ['agent:request', 'agent:helper'],
      context: { agent: 'helper', message: 'use the tool' },
    });
    const answer = await answerTo(c, 'agent.response.v1', asked.id);
    expect(answer.context).toMatchObject({ status: 'success', message: 'results: {"text":"hello"}' });

    // A second put of the tool is version 2, and version 2 is what answers from then on.
    await putItem({
      id: { S: 'echo-tool' },
      workspace: { S: ws },
      schema_name: { S: 'tool.def.v1' },
      context: {
        M: {
          name: { S: 'echo' },
          implementation: { S: 'echo' },
          approval: { S: 'required' },
        },
      },
    });
    await activeStatus(c, 'echo-tool', 2);
    expect((await c.getFull('echo-tool')).version).toBe(2);
    const again = await c.create({
      schema_name: 'agent.request.v1',
      title: 'ask helper again',
      tags: ['agent:request', 'agent:helper'],
      context: { agent: 'helper', message: 'use the tool again' },
    });
    // Version 2 asks for approval: the call waits for a person instead of running.
    const pending = await eventually(async () => {
      const list = await c.approvals();
      return list.items.find((a) => a.status === 'pending' && a.thread === again.id);
    }, 60_000);
    expect(pending).toMatchObject({ tool: 'echo', agent_id: 'helper' });
  });
});
