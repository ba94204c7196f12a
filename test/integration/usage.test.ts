/**
 * Usage and cost end to end on the shared local stack: a context agent on the scripted model server (each call
 * reports 10 input tokens, 4 of them cached, and 5 output; priced at test prices: 41 micro-dollars a call) runs
 * two turns of two tool rounds each. Every call rides in a breadcrumb the turn writes (`llm_usage`), and the totals
 * the stream consumer keeps agree exactly with the sum of the calls, through the API and `crumbs usage`; another
 * workspace sees none of it, and a bad `by` or day is a 400 naming the field.
 */
import { describe, expect, it } from 'vitest';
import { CrumbsClient, type UsageReport } from '#cli/api-client.ts';
import { FAKE_USAGE } from '../support/fake-openai.ts';
import { crumbs, eventually, localStack, uniqueWorkspace } from '../support/local.ts';

const ws = uniqueWorkspace('usage-e2e');
const other = uniqueWorkspace('usage-e2e-other');
const COST_PER_CALL_NUSD = 41_000;

function client(workspace: string): CrumbsClient {
  const { api: endpoint, token } = localStack();
  return new CrumbsClient({ endpoint, token, workspace });
}

async function applyAndWait(
  c: CrumbsClient,
  id: string,
  body: { schema_name: string; context: Record<string, unknown> },
) {
  const written = await c.put(id, { title: id, tags: [], ...body });
  await eventually(async () => {
    const page = await c.list({
      schema_name: 'definition.status.v1',
      tag: `definition:${id}`,
      limit: 1,
      view: 'full',
    });
    const s = page.items[0]?.context;
    return s && Number(s.definition_version) >= written.version && s.state === 'active' ? s : undefined;
  }, 30_000);
}

interface Call {
  input_tokens: number;
  output_tokens: number;
  cached_tokens: number;
  cost_nusd?: number;
}

/** Every `llm_usage` record the workspace's breadcrumbs carry, by schema. */
async function recordedCalls(c: CrumbsClient): Promise<Call[]> {
  const calls: Call[] = [];
  for (const schema of ['agent.response.v1', 'tool.request.v1', 'agent.conversation.v1']) {
    const page = await c.list({ schema_name: schema, limit: 100, view: 'full' });
    for (const item of page.items) {
      const usage = item.context.llm_usage as { calls: Call[] } | undefined;
      if (usage) calls.push(...usage.calls);
    }
  }
  return calls;
}

describe('usage and cost', () => {
  it('keeps totals that agree exactly with the scripted model calls, through the API and the CLI', async () => {
    const c = client(ws);
    await applyAndWait(c, 'tool-echo', {
      schema_name: 'tool.def.v1',
      context: { name: 'echo', implementation: 'echo' },
    });
    await applyAndWait(c, 'agent-worker', {
      schema_name: 'agent.def.v1',
      context: {
        agent_id: 'worker',
        system_prompt: 'Work.',
        model: 'openai-compatible/rounds-2-echo',
        tools: ['echo'],
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
    });
    const threads: string[] = [];
    for (const message of ['first job', 'second job']) {
      const asked = await c.create({
        schema_name: 'user.message.v1',
        tags: ['to:worker'],
        context: { message },
      });
      threads.push(asked.id);
      const answer = await eventually(
        async () =>
          (
            await c.list({
              schema_name: 'agent.response.v1',
              tag: `thread:${asked.id}`,
              limit: 1,
              view: 'full',
            })
          ).items[0],
        60_000,
      );
      expect(answer.context).toMatchObject({ tool_rounds: 2 });
      // The answer carries the call that made it; the two tool rounds' calls ride in their requests.
      expect(answer.context.llm_usage).toMatchObject({
        agent_id: 'worker',
        thread: asked.id,
        calls: [
          {
            model: 'openai-compatible/rounds-2-echo',
            input_tokens: FAKE_USAGE.input,
            cached_tokens: FAKE_USAGE.cached,
            output_tokens: FAKE_USAGE.output,
            cost_nusd: COST_PER_CALL_NUSD,
          },
        ],
      });
    }

    // Three calls per turn (two tool rounds, then the answer), each recorded once.
    const calls = await recordedCalls(c);
    expect(calls).toHaveLength(6);
    const sum = (f: (call: Call) => number) => calls.reduce((s, call) => s + f(call), 0);
    const expected = {
      calls: 6,
      input_tokens: sum((x) => x.input_tokens),
      output_tokens: sum((x) => x.output_tokens),
      cached_tokens: sum((x) => x.cached_tokens),
      cost_nusd: sum((x) => x.cost_nusd ?? 0),
      unpriced_calls: 0,
    };
    expect(expected).toEqual({
      calls: 6,
      input_tokens: 6 * FAKE_USAGE.input,
      output_tokens: 6 * FAKE_USAGE.output,
      cached_tokens: 6 * FAKE_USAGE.cached,
      cost_nusd: 6 * COST_PER_CALL_NUSD,
      unpriced_calls: 0,
    });

    // The totals trail the writes by the stream.
    const byDay = await eventually(async () => {
      const report = await c.usage({ by: 'day' });
      return report.totals.calls >= 6 ? report : undefined;
    }, 30_000);
    expect(byDay.totals).toEqual({ ...expected, cost_usd: (6 * COST_PER_CALL_NUSD) / 1e9 });
    const today = new Date().toISOString().slice(0, 10);
    expect(byDay.items.find((i) => i.key === today)).toMatchObject(expected);
    expect(byDay.items).toHaveLength(30);

    const byAgent = await c.usage({ by: 'agent' });
    expect(byAgent.items).toEqual([expect.objectContaining({ key: 'worker', ...expected })]);
    const byThread = await c.usage({ by: 'thread' });
    expect(byThread.items.map((i) => [i.key, i.calls, i.cost_nusd]).sort()).toEqual(
      threads.map((t) => [t, 3, 3 * COST_PER_CALL_NUSD]).sort(),
    );

    // A request's calls are read from what its turn wrote: its two tool requests and its answer.
    for (const t of threads) {
      const one = await eventually(async () => {
        const r = await c.requestUsage(t);
        return r.totals.calls >= 3 ? r : undefined;
      }, 30_000);
      expect(one.totals).toMatchObject({ calls: 3, cost_nusd: 3 * COST_PER_CALL_NUSD, input_tokens: 30 });
      expect(one.items.map((i) => i.schema_name).sort()).toEqual([
        'agent.response.v1',
        'tool.request.v1',
        'tool.request.v1',
      ]);
      expect(one.items.every((i) => i.agent_id === 'worker' && i.calls === 1)).toBe(true);
      expect(one.truncated).toBe(false);
    }
    const perRequest = await crumbs(ws, 'usage', '--request', threads[0] as string);
    expect(perRequest.code).toBe(0);
    expect(perRequest.out).toMatch(/^total\s+3\s+30\s+12\s+15\s+0\.000123$/m);
    expect(perRequest.out).toMatch(/agent\.response|tool-req|worker/);
    // Another workspace cannot even tell the request exists.
    await expect(client(other).requestUsage(threads[0] as string)).rejects.toMatchObject({ status: 404 });

    const json = await crumbs(ws, 'usage', '--by', 'agent', '--json');
    expect(json.code).toBe(0);
    const fromCli = JSON.parse(json.out) as UsageReport;
    expect(fromCli.items).toEqual(byAgent.items);
    expect(fromCli.totals).toEqual(byDay.totals);
    const table = await crumbs(ws, 'usage');
    expect(table.code).toBe(0);
    expect(table.out).toMatch(new RegExp(`^${today}\\s+6\\s+60\\s+24\\s+30\\s+0\\.000246$`, 'm'));
    expect(table.out).toMatch(/^total\s+6\s+60\s+24\s+30\s+0\.000246$/m);
  });

  it("never shows one workspace another's usage", async () => {
    const report = await client(other).usage({ by: 'agent' });
    expect(report.items).toEqual([]);
    expect(report.totals.calls).toBe(0);
    const day = await client(other).usage({ by: 'day' });
    expect(day.items.every((i) => i.calls === 0)).toBe(true);
  });

  it('answers a bad by, day or range with a 400 naming the field, and the CLI refuses a bad --by', async () => {
    const cases: [string, string][] = [
      ['?by=model', 'by'],
      ['?from=2026-13-01', 'from'],
      ['?to=yesterday', 'to'],
      ['?from=2026-11-20&to=2026-11-01', 'from'],
      ['?from=2026-01-01&to=2026-11-01', 'from'],
      ['?limit=0', 'limit'],
    ];
    for (const [query, field] of cases) {
      const { api: endpoint, token } = localStack();
      const res = await fetch(`${endpoint}/v1/workspaces/${ws}/usage${query}`, {
        headers: { authorization: `Bearer ${token}` },
      });
      expect(res.status, query).toBe(400);
      expect(await res.text(), query).toContain(`"${field}"`);
    }
    const bad = await crumbs(ws, 'usage', '--by', 'model');
    expect(bad.code).toBe(2);
    expect(bad.err).toMatch(/--by: expected one of day, agent, run, thread, got/);
    const mixed = await crumbs(ws, 'usage', '--request', 'r1', '--by', 'agent');
    expect(mixed.code).toBe(2);
    expect(mixed.err).toMatch(/--request: not with --by/);
    const { api: endpoint, token } = localStack();
    const badId = await fetch(`${endpoint}/v1/workspaces/${ws}/usage/requests/${'x'.repeat(300)}`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(badId.status).toBe(422);
    expect(await badId.text()).toContain('"id"');
  });
});
