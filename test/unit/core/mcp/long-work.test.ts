/**
 * Long work through the MCP endpoint, with the SDK's client over Streamable HTTP (its fetch handed straight to the
 * endpoint's handler) and the API on an in-memory store, where nothing answers until the test writes the answer:
 * - a call not answered within the wait is a tool error naming the request and a resource that reads its answer;
 * - a client that opts into tasks gets a task at once whose id is the request's; `tasks/get` says working, then
 *   completed or failed from the answer; `tasks/result` gives the tool result; `tasks/list` lists the caller's
 *   tasks and nobody else's; another caller's or an unknown task is not found.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import type { Caller } from '#shared/core/api/http.ts';
import { createMcpHttp } from '#shared/core/mcp/http.ts';
import { activeDefinition, inMemoryApi } from '../../../support/memory/api.ts';

const WS = 'ws';
const ann: Caller = { principal: 'user:ann', workspaces: [WS] };
const bob: Caller = { principal: 'user:bob', workspaces: [WS] };
const clients: Client[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close().catch(() => undefined)));
});

async function setup() {
  const { store, api } = inMemoryApi();
  const mcp = createMcpHttp({
    api,
    baseUrl: 'http://mcp.test',
    answerWithinMs: 300,
    pollMs: { first: 20, max: 50 },
  });
  // The tool, active: its definition and the rule manager's status for it.
  await activeDefinition(store, WS, 'tool-slow', 'tool.def.v1', { name: 'slow', implementation: 'echo' });
  const connect = async (caller: Caller) => {
    const client = new Client({ name: 'long-work', version: '1' });
    const transport = new StreamableHTTPClientTransport(new URL(`http://mcp.test/v1/workspaces/${WS}/mcp`), {
      fetch: async (input, init) => {
        const url = new URL(String(input));
        const headers: Record<string, string> = { host: url.host };
        new Headers(init?.headers).forEach((v, k) => {
          headers[k] = v;
        });
        const result = await mcp({
          method: init?.method ?? 'GET',
          path: url.pathname,
          headers,
          query: {},
          body: typeof init?.body === 'string' ? init.body : undefined,
          caller,
        });
        return new Response(result.statusCode === 202 ? null : (result.body as string), {
          status: result.statusCode,
          headers: result.headers,
        });
      },
    });
    await client.connect(transport);
    clients.push(client);
    return client;
  };
  const answer = (requestId: string, context: Record<string, unknown>) =>
    store.create(
      WS,
      { schema_name: 'tool.response.v1', title: 'answer', tags: [`request:${requestId}`], context },
      { principal: 'tool:slow' },
    );
  return { store, connect, answer };
}

describe('MCP long work', () => {
  it('answers a call that outlasts the wait with its request id and a resource that reads the answer later', async () => {
    const { connect, answer } = await setup();
    const client = await connect(ann);
    const result = await client.callTool({ name: 'slow', arguments: { n: 1 } });
    expect(result.isError).toBe(true);
    const requestId = (result._meta as Record<string, string>)['crumbs/request_id'] as string;
    expect(result.content).toEqual([
      { type: 'text', text: expect.stringContaining(requestId) },
      expect.objectContaining({ type: 'resource_link', uri: `crumbs://${WS}/requests/${requestId}/answer` }),
    ]);
    const before = await client.readResource({ uri: `crumbs://${WS}/requests/${requestId}/answer` });
    expect(JSON.parse((before.contents[0] as { text: string }).text)).toEqual({
      request_id: requestId,
      status: 'working',
    });
    await answer(requestId, { status: 'success', output: { n: 1 } });
    const after = await client.readResource({ uri: `crumbs://${WS}/requests/${requestId}/answer` });
    expect(JSON.parse((after.contents[0] as { text: string }).text)).toMatchObject({
      status: 'answered',
      answer: { context: { output: { n: 1 } } },
    });
  });

  it('gives a client that opts in a task backed by the request, read by tasks/get, tasks/result and tasks/list', async () => {
    const { connect, answer } = await setup();
    const client = await connect(ann);
    const { tools } = await client.listTools();
    expect(tools.find((t) => t.name === 'slow')?.execution).toEqual({ taskSupport: 'optional' });
    expect(tools.find((t) => t.name === 'crumbs_get')?.execution).toBeUndefined();

    const created = await client.request(
      { method: 'tools/call', params: { name: 'slow', arguments: { n: 2 }, task: { ttl: 60_000 } } },
      (await import('@modelcontextprotocol/sdk/types.js')).CreateTaskResultSchema,
    );
    const taskId = created.task.taskId;
    expect(created.task).toMatchObject({ status: 'working', ttl: null });
    expect(await client.experimental.tasks.getTask(taskId)).toMatchObject({ taskId, status: 'working' });

    await answer(taskId, { status: 'success', output: { n: 2 } });
    expect(await client.experimental.tasks.getTask(taskId)).toMatchObject({ status: 'completed' });
    const result = await client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
    expect(result.structuredContent).toEqual({ n: 2 });

    // A failed tool: the task fails with the tool's error, and its result is a tool error.
    const second = await client.request(
      { method: 'tools/call', params: { name: 'slow', arguments: {}, task: {} } },
      (await import('@modelcontextprotocol/sdk/types.js')).CreateTaskResultSchema,
    );
    await answer(second.task.taskId, { status: 'error', error: 'no such thing' });
    expect(await client.experimental.tasks.getTask(second.task.taskId)).toMatchObject({
      status: 'failed',
      statusMessage: 'no such thing',
    });
    const failed = await client.experimental.tasks.getTaskResult(second.task.taskId, CallToolResultSchema);
    expect(failed).toMatchObject({ isError: true, content: [{ type: 'text', text: 'no such thing' }] });

    const listed = await client.experimental.tasks.listTasks();
    expect(listed.tasks.map((t) => t.taskId).sort()).toEqual([taskId, second.task.taskId].sort());

    // Another caller of the workspace sees none of them.
    const other = await connect(bob);
    expect((await other.experimental.tasks.listTasks()).tasks).toEqual([]);
    await expect(other.experimental.tasks.getTask(taskId)).rejects.toThrow(/Task not found/);
    await expect(client.experimental.tasks.getTask('01NOSUCHTASK')).rejects.toThrow(/Task not found/);
  });
});
