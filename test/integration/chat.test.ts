/**
 * Executors end to end on the shared local stack, through the HTTP API and the CLI only: definitions are applied
 * with PUT, triggers are written with POST, and everything in between (stream → publisher → EventBridge rules →
 * SQS → executors → response breadcrumbs) runs as it does on AWS.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { CrumbsClient } from '#cli/api-client.ts';
import { main } from '#cli/main.ts';
import { topology } from '#shared/topology.ts';
import { eventually, localStack, uniqueWorkspace } from '../support/local.ts';
import { seed002Breadcrumb } from '../support/seeds.ts';

function client(workspace: string): CrumbsClient {
  const { api, token } = localStack();
  return new CrumbsClient({ endpoint: api, token, workspace });
}

async function applyAndWait(
  c: CrumbsClient,
  id: string,
  body: { schema_name: string; context: Record<string, unknown> },
) {
  const written = await c.put(id, { title: id, tags: [], ...body });
  const status = await eventually(async () => {
    const page = await c.list({
      schema_name: 'definition.status.v1',
      tag: `definition:${id}`,
      limit: 1,
      view: 'full',
    });
    const s = page.items[0]?.context;
    return s && Number(s.definition_version) >= written.version ? s : undefined;
  }, 20_000);
  expect(status.state, JSON.stringify(status.errors)).toBe('active');
}

async function waitForTag(c: CrumbsClient, schema: string, tag: string, timeoutMs = 30_000) {
  return eventually(
    async () => (await c.list({ schema_name: schema, tag, limit: 5, view: 'full' })).items[0],
    timeoutMs,
  );
}

const calculatorTool = {
  schema_name: 'tool.def.v1',
  context: {
    name: 'calculator',
    description: 'Evaluates arithmetic',
    implementation: 'calculator',
    input_schema: {
      type: 'object',
      properties: { expression: { type: 'string' } },
      required: ['expression'],
      additionalProperties: false,
    },
  },
};

describe('executors through the API and CLI', () => {
  it('answers `crumbs chat "what is 17*23?"` with 391 after a calculator round trip', async () => {
    const { api, token } = localStack();
    let out = '';
    let err = '';
    const code = await main(['chat', 'what is 17*23?', '--endpoint', api, '--token', token], {
      stdout: (s) => {
        out += s;
      },
      stderr: (s) => {
        err += s;
      },
      env: {},
    });
    expect(err).toBe('');
    expect(code).toBe(0);
    expect(out).toContain('391');
  });

  it('runs a tool request to a response tagged with its request id', async () => {
    const c = client(uniqueWorkspace('tool'));
    await applyAndWait(c, 'tool-echo', {
      schema_name: 'tool.def.v1',
      context: { name: 'echo', implementation: 'echo' },
    });
    await c.create({
      schema_name: 'tool.request.v1',
      tags: ['tool:request'],
      context: { tool: 'echo', input: { hello: 'world' }, requestId: 'req-1', requestedBy: 'tester' },
    });
    const response = await waitForTag(c, 'tool.response.v1', 'request:req-1');
    expect(response.context).toMatchObject({
      request_id: 'req-1',
      tool: 'echo',
      status: 'success',
      requestedBy: 'tester',
    });
    expect(response.created_by).toBe('tool:echo');
    expect(response.causation?.hop).toBe(1);
  });

  it('answers status "error" with the validation message when the input fails the tool schema', async () => {
    const c = client(uniqueWorkspace('tool'));
    await applyAndWait(c, 'tool-calculator', calculatorTool);
    await c.create({
      schema_name: 'tool.request.v1',
      context: { tool: 'calculator', input: { expression: 17 }, requestId: 'bad-1', requestedBy: 'tester' },
    });
    const response = await waitForTag(c, 'tool.response.v1', 'request:bad-1');
    expect(response.context.status).toBe('error');
    expect(JSON.stringify(response.context.error)).toMatch(/expression/);
  });

  it("runs seed 003's context config and agent subscriptions: user message → context → agent → tool → answer", async () => {
    const c = client(uniqueWorkspace('seed'));
    await applyAndWait(c, 'tool-calculator', calculatorTool);
    // Seed 003, "Context Config (Shows the Bridge)", as written there.
    await applyAndWait(c, 'context-default-chat-assistant', {
      schema_name: 'context.config.v1',
      context: {
        consumer_id: 'default-chat-assistant',
        update_triggers: [{ schema_name: 'user.message.v1', any_tags: ['workspace:agents'] }],
        output: {
          schema_name: 'agent.context.v1',
          tags: ['agent:context', 'consumer:default-chat-assistant'],
        },
      },
    });
    // Seed 003, "Agent Definition (Final)": its subscriptions as written, plus who the agent is and its model.
    await applyAndWait(c, 'agent-default-chat-assistant', {
      schema_name: 'agent.def.v1',
      context: {
        agent_id: 'default-chat-assistant',
        system_prompt: 'You are a helpful assistant.',
        model: 'offline/crumbs',
        tools: ['calculator'],
        subscriptions: {
          selectors: [
            {
              comment: 'Agent subscribes to PRE-BUILT context only',
              schema_name: 'agent.context.v1',
              all_tags: ['consumer:default-chat-assistant'],
            },
            {
              comment: 'Tool responses for follow-up',
              schema_name: 'tool.response.v1',
              context_match: [{ path: '$.requestedBy', op: 'eq', value: 'default-chat-assistant' }],
            },
          ],
        },
      },
    });
    const message = await c.create({
      schema_name: 'user.message.v1',
      tags: ['workspace:agents', 'user:message'],
      context: { message: 'what is 6*7?' },
    });
    const answer = await waitForTag(c, 'agent.response.v1', `thread:${message.id}`);
    expect(String(answer.context.message)).toContain('42');
    expect(answer.created_by).toBe('agent:default-chat-assistant');
  });

  it("runs seed 002's agent.definition.v1 as written and answers with its structured output", async () => {
    const c = client(uniqueWorkspace('seed2'));
    await applyAndWait(c, 'agent-file-manager', {
      schema_name: seed002Breadcrumb.schema_name,
      context: seed002Breadcrumb.context,
    });
    // Its trigger: tags user:message or chat:input, and $.content containing one of the words file, list,
    // javascript.
    const message = await c.create({
      schema_name: 'user.message.v1',
      tags: ['chat:input'],
      context: { content: 'Can you list my files?' },
    });
    const answer = await waitForTag(c, 'agent.response.v1', `thread:${message.id}`);
    expect(answer.created_by).toBe('agent:file-manager');
    // Seed 002's response_schema requires response_text: the structured output carries it.
    expect(answer.context.output).toMatchObject({ response_text: expect.any(String) });
  });

  it('stops two agents that answer each other at the hop limit with one system.loop_stopped.v1', async () => {
    const c = client(uniqueWorkspace('loop'));
    const agent = (id: string, other: string) => ({
      schema_name: 'agent.def.v1',
      context: {
        agent_id: id,
        system_prompt: 'Reply.',
        model: 'offline/crumbs',
        tools: [],
        hop_limit: 4,
        subscriptions: {
          selectors: [
            { schema_name: 'user.message.v1', role: 'trigger', all_tags: [`to:${id}`] },
            {
              schema_name: 'agent.response.v1',
              role: 'trigger',
              context_match: [{ path: '$.agent_id', op: 'eq', value: other }],
            },
          ],
        },
      },
    });
    await applyAndWait(c, 'agent-ping', agent('ping', 'pong'));
    await applyAndWait(c, 'agent-pong', agent('pong', 'ping'));
    await c.create({ schema_name: 'user.message.v1', tags: ['to:ping'], context: { message: 'hello' } });
    const stopped = await eventually(
      async () => (await c.list({ schema_name: 'system.loop_stopped.v1', limit: 5, view: 'full' })).items[0],
      30_000,
    );
    expect(Number(stopped.causation?.hop ?? stopped.context.hop)).toBeGreaterThanOrEqual(4);
    // Give any stray continuation time to show up, then check it stopped for good.
    await new Promise((r) => setTimeout(r, 1500));
    expect(
      (await c.list({ schema_name: 'system.loop_stopped.v1', limit: 5, view: 'full' })).items,
    ).toHaveLength(1);
    const responses = (await c.list({ schema_name: 'agent.response.v1', limit: 20, view: 'full' })).items;
    expect(responses.length).toBeLessThanOrEqual(4);
  });

  it('sends a message that keeps failing to the DLQ and answers it with an error; the messages around it are unaffected', async () => {
    let attempts = 0;
    const upstream = createServer((_req, res) => {
      attempts++;
      res.statusCode = 503;
      res.end('busy');
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/`;
    try {
      const c = client(uniqueWorkspace('dlq'));
      await applyAndWait(c, 'tool-echo', {
        schema_name: 'tool.def.v1',
        context: { name: 'echo', implementation: 'echo' },
      });
      await applyAndWait(c, 'tool-flaky', {
        schema_name: 'tool.def.v1',
        context: {
          name: 'flaky',
          implementation: 'http',
          config: { allowed_hosts: ['127.0.0.1'], allow_private: true },
        },
      });
      const request = (tool: string, requestId: string, input: Record<string, unknown>) =>
        c.create({
          schema_name: 'tool.request.v1',
          context: { tool, input, requestId, requestedBy: 'tester' },
        });
      await request('echo', 'before', { n: 1 });
      await request('flaky', 'poison', { url });
      await request('echo', 'after', { n: 2 });

      for (const id of ['before', 'after']) {
        expect((await waitForTag(c, 'tool.response.v1', `request:${id}`)).context.status).toBe('success');
      }
      const answer = await waitForTag(c, 'tool.response.v1', 'request:poison', 60_000);
      expect(answer.context).toMatchObject({ status: 'error', tool: 'flaky', request_id: 'poison' });
      // Retried by SQS until the redrive policy moved it to the DLQ, then answered by the DLQ handler.
      expect(attempts).toBe(topology.functions.executors.tool.trigger.queue.maxReceiveCount);
    } finally {
      upstream.closeAllConnections();
      await new Promise((resolve) => upstream.close(resolve));
    }
  });
});
