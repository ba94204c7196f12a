import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SdkMcpClient } from '#shared/adapters/mcp/mcp-client.ts';
import { guardedFetch } from '#shared/adapters/network/guarded-fetch.ts';
import { LocalSecrets } from '#shared/adapters/secrets/secret-source.ts';
import { createToolAgent } from '#shared/core/agents/tool-agent.ts';
import { agentSpec } from '#shared/domain/agent-spec.ts';
import { type AgentDefinition, parseDefinition } from '#shared/domain/definitions.ts';
import { NonRetriableError } from '#shared/domain/errors.ts';
import type { LlmClient, LlmRequest } from '#shared/ports/llm.ts';
import { agentRun } from '../../../support/agent-run.ts';
import { startMcpServer, type TestMcpServer } from '../../../support/mcp-server.ts';

let server: TestMcpServer;
beforeAll(async () => {
  server = await startMcpServer('streamable');
});
afterAll(() => server.close());

const mcp = new SdkMcpClient({ fetch: guardedFetch({ allowPrivate: true }) });

function spec(def: Record<string, unknown>) {
  const parsed = parseDefinition('agent.def.v1', { agent_id: 'math', type: 'tool', ...def });
  const s = agentSpec(parsed.definition as AgentDefinition);
  if (s.type !== 'tool') throw new Error('not a tool spec');
  return s;
}

const withServer = (extra: Record<string, unknown> = {}) =>
  spec({
    transport: {
      kind: 'mcp',
      mcp: { url: server.url, headers: { Authorization: { secret_ref: 'mcp-token' } } },
    },
    yaml: { tools: ['add', 'greet', 'fail', 'whoami'], ...extra },
  });

describe('tool agent (MCP)', () => {
  const agent = createToolAgent({
    mcp,
    secrets: new LocalSecrets({ inline: JSON.stringify({ 'ws-test': { 'mcp-token': 'Bearer abc' } }) }),
  });

  it('calls the named tool with the arguments and answers with structuredContent', async () => {
    const outcome = await agent.run(
      agentRun(withServer(), { input: { tool: 'add', arguments: { a: 20, b: 22 } } }),
    );
    expect(outcome).toEqual({
      kind: 'answer',
      answer: { status: 'success', output: { sum: 42 }, text: '42' },
    });
  });

  it('surfaces a tool error (isError) as an error answer with the tool message', async () => {
    const outcome = await agent.run(
      agentRun(withServer(), { input: { tool: 'fail', arguments: { reason: 'disk full' } } }),
    );
    expect(outcome).toMatchObject({ answer: { status: 'error', error: 'failed: disk full' } });
  });

  it('sends the credential from its secret reference', async () => {
    const outcome = await agent.run(agentRun(withServer(), { input: { tool: 'whoami', arguments: {} } }));
    expect(outcome).toMatchObject({ answer: { status: 'success', text: 'Bearer abc' } });
  });

  it('runs several calls (tool_mode parallel) and answers with the list in call order', async () => {
    const outcome = await agent.run(
      agentRun(withServer({ tool_mode: 'parallel' }), {
        input: {
          calls: [
            { tool: 'add', arguments: { a: 1, b: 2 } },
            { tool: 'greet', arguments: { name: 'Ada' } },
          ],
        },
      }),
    );
    expect(outcome).toMatchObject({ answer: { status: 'success', output: [{ sum: 3 }, 'Hello, Ada!'] } });
  });

  it('refuses a tool the definition does not list', async () => {
    await expect(
      agent.run(agentRun(withServer(), { input: { tool: 'calculator', arguments: { expression: '1+1' } } })),
    ).rejects.toThrow(/not one of this agent's tools/);
  });

  it('lets the model pick the tool and arguments from a message when asked to, with the MCP input schemas', async () => {
    const seen: LlmRequest[] = [];
    const llm: LlmClient = {
      async generate(request) {
        seen.push(request);
        return {
          text: '',
          toolCalls: [{ id: 'c1', name: 'greet', input: { name: 'Grace' } }],
          finishReason: 'tool-calls',
          usage: { inputTokens: 1, outputTokens: 1 },
          model: 'fake/model',
        };
      },
    };
    const extracting = createToolAgent({
      mcp,
      secrets: new LocalSecrets({ inline: JSON.stringify({ 'ws-test': { 'mcp-token': 'x' } }) }),
      llm,
    });
    const outcome = await extracting.run(
      agentRun(withServer({ extract_arguments: true }), { message: 'say hi to Grace' }),
    );
    expect(outcome).toMatchObject({ answer: { status: 'success', output: 'Hello, Grace!' } });
    expect(seen[0]?.tools?.find((t) => t.name === 'greet')?.inputSchema).toMatchObject({
      properties: { name: { type: 'string' } },
    });
  });

  it('finds the server of a transport-less agent through the tool definitions (seed 004 example)', async () => {
    const seed = spec({ yaml: { tools: ['supabase/query-db'] } });
    const resolving = createToolAgent({
      mcp,
      secrets: new LocalSecrets(),
      resolveTool: async (_ws, name) =>
        name === 'supabase/query-db' ? { server: { url: server.url }, tool: 'greet' } : undefined,
    });
    const outcome = await resolving.run(agentRun(seed, { input: { arguments: { name: 'DB' } } }));
    expect(outcome).toMatchObject({ answer: { status: 'success', output: 'Hello, DB!' } });
    const lost = createToolAgent({ mcp, secrets: new LocalSecrets() });
    await expect(lost.run(agentRun(seed, { input: { arguments: {} } }))).rejects.toThrow(NonRetriableError);
  });
});
