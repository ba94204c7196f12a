/**
 * Agents on the shared local stack, through the HTTP API and the CLI, against a scripted OpenAI-compatible model
 * server (test/support/fake-openai.ts): which tool calls become requests, how many rounds a turn may take, how a
 * throttled model call is retried, and which provider and model a definition's status says will run.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import { CrumbsClient } from '#cli/api-client.ts';
import { main } from '#cli/main.ts';
import { fakeOpenAiCounts } from '../support/fake-openai.ts';
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
): Promise<Record<string, unknown>> {
  const written = await c.put(id, { title: id, tags: [], ...body });
  return eventually(async () => {
    const page = await c.list({
      schema_name: 'definition.status.v1',
      tag: `definition:${id}`,
      limit: 1,
      view: 'full',
    });
    const s = page.items[0]?.context;
    return s && Number(s.definition_version) >= written.version ? s : undefined;
  }, 20_000);
}

async function waitForTag(c: CrumbsClient, schema: string, tag: string, timeoutMs = 30_000) {
  return eventually(
    async () => (await c.list({ schema_name: schema, tag, limit: 5, view: 'full' })).items[0],
    timeoutMs,
  );
}

const tool = (name: string) => ({ schema_name: 'tool.def.v1', context: { name, implementation: name } });

function agent(model: string, tools: string[]) {
  return {
    schema_name: 'agent.def.v1',
    context: {
      agent_id: 'worker',
      system_prompt: 'Work.',
      model,
      tools,
      subscriptions: {
        selectors: [
          { schema_name: 'user.message.v1', role: 'trigger', all_tags: ['to:worker'] },
          {
            schema_name: 'tool.response.v1',
            role: 'trigger',
            context_match: [{ path: '$.requestedBy', op: 'eq', value: 'worker' }],
          },
        ],
      },
    },
  };
}

async function ask(c: CrumbsClient, message: string) {
  return c.create({ schema_name: 'user.message.v1', tags: ['to:worker'], context: { message } });
}

describe('agents on the local stack', () => {
  it('uses all 8 tool rounds under the default hop limit and answers with agent.response.v1', async () => {
    const c = client(uniqueWorkspace('rounds'));
    await applyAndWait(c, 'tool-echo', tool('echo'));
    await applyAndWait(c, 'agent-worker', agent('openai-compatible/rounds-8-echo', ['echo']));

    const message = await ask(c, 'do eight things');

    const answer = await waitForTag(c, 'agent.response.v1', `thread:${message.id}`, 60_000);
    expect(answer.context).toMatchObject({ tool_rounds: 8, refused_tool_calls: 0 });
    expect(String(answer.context.message)).toMatch(/^done after 8 rounds/);
    expect((await c.list({ schema_name: 'tool.request.v1', limit: 20 })).items).toHaveLength(8);
    expect((await c.list({ schema_name: 'system.loop_stopped.v1', limit: 5 })).items).toEqual([]);
  });

  it('never turns a call to a tool the agent was not given into a request, and lets the model recover', async () => {
    const c = client(uniqueWorkspace('allow'));
    await applyAndWait(c, 'tool-echo', tool('echo'));
    // The calculator exists in the workspace and would answer a request: none must reach it.
    await applyAndWait(c, 'tool-calculator', tool('calculator'));
    await applyAndWait(c, 'agent-worker', agent('openai-compatible/forbidden-calculator', ['echo']));

    const message = await ask(c, 'what is 2+2?');

    const answer = await waitForTag(c, 'agent.response.v1', `thread:${message.id}`);
    expect(answer.context).toMatchObject({ refused_tool_calls: 1, tool_rounds: 1 });
    expect(String(answer.context.message)).toMatch(/calculator\\?" is not available to this agent/);
    expect((await c.list({ schema_name: 'tool.request.v1', limit: 5 })).items).toEqual([]);
    expect((await c.list({ schema_name: 'tool.response.v1', limit: 5 })).items).toEqual([]);
  });

  it('answers within seconds when the model answers 429 with Retry-After twice, not after the visibility timeout', async () => {
    const c = client(uniqueWorkspace('throttle'));
    const model = `throttled-${randomBytes(4).toString('hex')}`;
    await applyAndWait(c, 'agent-worker', agent(`openai-compatible/${model}`, []));

    const message = await ask(c, 'hello');

    // The agent queue's visibility timeout is 12 minutes: only a back-off in seconds answers within this wait.
    const answer = await waitForTag(c, 'agent.response.v1', `thread:${message.id}`);
    expect(String(answer.context.message)).toBe('recovered after 2 throttled calls');
    expect((await fakeOpenAiCounts(inject('fakeOpenAi')))[model]).toBe(3);
  });
});

describe('which model a definition runs', () => {
  async function apply(workspace: string, definitions: Record<string, unknown>[]) {
    const dir = mkdtempSync(join(tmpdir(), 'crumbs-llm-'));
    definitions.forEach((d, i) => {
      writeFileSync(join(dir, `${i}.json`), JSON.stringify(d));
    });
    const { api, token } = localStack();
    let out = '';
    let err = '';
    const code = await main(
      ['apply', '-f', dir, '--json', '--endpoint', api, '--token', token, '--workspace', workspace],
      {
        stdout: (s) => {
          out += s;
        },
        stderr: (s) => {
          err += s;
        },
        env: {},
      },
    );
    return { code, err, rows: out ? (JSON.parse(out) as Record<string, unknown>[]) : [] };
  }

  it("shows seed 002's bare `gpt-4` running on the stack's default provider, in the status and in `crumbs apply`", async () => {
    const ws = uniqueWorkspace('llm');
    const { code, rows } = await apply(ws, [{ id: 'agent-file-manager', ...seed002Breadcrumb }]);

    expect(code).toBe(0);
    expect(rows[0]).toMatchObject({ state: 'active', llm: { provider: 'offline', model: 'gpt-4' } });
    const status = (
      await client(ws).list({
        schema_name: 'definition.status.v1',
        tag: 'definition:agent-file-manager',
        view: 'full',
      })
    ).items[0];
    expect(status?.context.llm).toEqual({ provider: 'offline', model: 'gpt-4' });
  });

  it('runs a bare id the operator aliased, and an agent without a model, as the status says, down to the call', async () => {
    const ws = uniqueWorkspace('llm');
    const c = client(ws);
    const aliased = await applyAndWait(c, 'agent-worker', agent('house-model', []));
    // The shared stack's CRUMBS_MODEL_ALIASES (shared-stack.ts): house-model → offline/house-v2.
    expect(aliased).toMatchObject({ state: 'active', llm: { provider: 'offline', model: 'house-v2' } });
    const first = await ask(c, 'hello house');
    const answer = await waitForTag(c, 'agent.response.v1', `thread:${first.id}`);
    expect(answer.context.model).toBe('offline/house-v2');

    const { model: _none, ...withoutModel } = agent('unused', []).context;
    const defaulted = await applyAndWait(c, 'agent-worker', {
      schema_name: 'agent.def.v1',
      context: withoutModel,
    });
    expect(defaulted).toMatchObject({ state: 'active', llm: { provider: 'offline', model: 'default' } });
    const second = await ask(c, 'hello default');
    const next = await waitForTag(c, 'agent.response.v1', `thread:${second.id}`);
    expect(next.context.model).toBe('offline/default');
  });

  it('marks a model with an unknown provider invalid at apply time, naming the field', async () => {
    const ws = uniqueWorkspace('llm');
    const { code, rows } = await apply(ws, [
      { id: 'agent-typo', ...agent('antrhopic/claude-3-haiku', []) },
      { id: 'agent-explicit', ...agent('openrouter/openai/gpt-4o-mini', []) },
    ]);

    expect(code).toBe(1);
    const [typo, explicit] = rows;
    expect(typo).toMatchObject({ state: 'invalid', llm: null, rule_name: null });
    expect(String((typo?.errors as string[] | undefined)?.[0])).toMatch(
      /^model: .*provider "antrhopic".*not one of/,
    );
    expect(explicit).toMatchObject({
      state: 'active',
      llm: { provider: 'openrouter', model: 'openai/gpt-4o-mini' },
    });
  });
});
