/**
 * Outspending a daily budget, as team-b: the operator gave team-b's workspaces daily budgets of their own
 * (`TEAM_B_BUDGETS`), and the scripted model bills every call its whole output cap (`~bills`, at $1 / $5 per million
 * input / output tokens: about $0.021 a call), the worst case a budget must hold against.
 *
 * - 60 concurrent requests at a $0.50 day: the spend the model billed stays within $0.50 (the stated bound — no
 *   overshoot while the provider bills within crumbs' estimate), every request is answered, and those refused name
 *   the budget. Before reserve-and-settle, refusals began at 6.4× the budget.
 * - The `llm` tool answers to the same day: refused once it is spent, and the model is not called again.
 * - The `llm` tool's model is its definition's: a request's `input.model` is refused naming the field, and a
 *   definition's bad `allowed_models` is refused when it is written.
 */
import { describe, expect, it } from 'vitest';
import { fakeOpenAiCounts, fakeOpenAiUsage } from '../support/fake-openai.ts';
import { ADVERSARIAL_PRICES, TEAM_B_BUDGETS } from './global-setup.ts';
import { adversary, answerTo, client, defineActive, eventually, teamA, workspaceItems } from './support.ts';

const unique = () => Math.random().toString(36).slice(2, 8);
const NUSD_PER_USD = 1e9;
const PRICE = ADVERSARIAL_PRICES['openai-compatible/*'];

/** What the scripted model billed a model id, in nano-dollars, and for how many calls. */
async function billed(model: string): Promise<{ nusd: number; calls: number }> {
  const usage = (await fakeOpenAiUsage(adversary().fakeOpenAi))[model.replace(/^openai-compatible\//, '')];
  if (usage === undefined) return { nusd: 0, calls: 0 };
  return {
    nusd: usage.prompt_tokens * PRICE.input * 1000 + usage.completion_tokens * PRICE.output * 1000,
    calls: usage.calls,
  };
}

function teamBIn(workspace: keyof typeof TEAM_B_BUDGETS) {
  return client(workspace, adversary().teamB.token);
}

const DAILY_REFUSAL =
  /^budget CRUMBS_DAILY_BUDGETS \(workspace [a-z-]+, today UTC\) \(\$0\.\d{6}\) reached: \$0\.\d{6} used over \d+ calls?; the next call \(at least \$0\.\d{6}\) was not made$/;

describe('daily budgets under attack', () => {
  it('holds a $0.50 day against 60 concurrent requests: the billed spend stays within it', async () => {
    const b = teamBIn('team-b-spend');
    const limit = TEAM_B_BUDGETS['team-b-spend'] * NUSD_PER_USD;
    const tag = unique();
    const agent = `spender-${tag}`;
    // Each call waits 300 ms at the model, so the requests' calls overlap.
    const model = `openai-compatible/answer-from-prompt~bills~hold300~${tag}`;
    await defineActive(b, `agent-${agent}`, 'agent.def.v1', {
      agent_id: agent,
      system_prompt: 'Answer. <answer>spent</answer>',
      model,
    });

    const ids = Array.from({ length: 60 }, (_, i) => `spend-${tag}-${i}`);
    const posted = await Promise.all(
      ids.map((id) =>
        b.call('POST', '/breadcrumbs', {
          schema_name: 'agent.request.v1',
          title: 'spend',
          context: { agent, request_id: id, message: 'spend' },
        }),
      ),
    );
    for (const p of posted) expect(p.status, JSON.stringify(p.body)).toBe(201);
    const answers = await Promise.all(
      ids.map((id) => eventually(() => answerTo(b, id), `the answer to ${id}`, 360_000)),
    );

    const made = answers.filter((a) => a.status === 'success');
    const refused = answers.filter((a) => a.status !== 'success');
    const spend = await billed(model);
    // The bound: what the model billed stays within the day's limit.
    expect(spend.nusd).toBeLessThanOrEqual(limit);
    expect(spend.calls).toBe(made.length);
    // About 24 calls of $0.021 fit in $0.50; the rest are refused, each naming the budget and the figures.
    expect(made.length).toBeGreaterThanOrEqual(20);
    expect(refused.length).toBeGreaterThanOrEqual(30);
    for (const r of refused) {
      expect(String(r.error)).toMatch(DAILY_REFUSAL);
      expect(r.budget_stop).toMatchObject({ limit, unit: 'usd' });
    }
    // The day's counter agrees with the model's bill, and holds no reservation once every call settled.
    const day = new Date().toISOString().slice(0, 10);
    const counter = (await workspaceItems('team-b-spend')).find((i) => i.id === `#budget#daily#${day}`);
    expect(counter).toMatchObject({ spent: spend.nusd, committed: spend.nusd, calls: made.length });

    // Team-a's model calls answer to no budget of team-b's.
    const a = teamA();
    const calm = `calm-${tag}`;
    await defineActive(a, `agent-${calm}`, 'agent.def.v1', {
      agent_id: calm,
      system_prompt: 'Answer. <answer>calm</answer>',
      model: `openai-compatible/answer-from-prompt~bills~${tag}`,
    });
    const requestId = `calm-${unique()}`;
    await a.call('POST', '/breadcrumbs', {
      schema_name: 'agent.request.v1',
      title: 'hello',
      context: { agent: calm, request_id: requestId, message: 'hi' },
    });
    expect(await eventually(() => answerTo(a, requestId), "team-a's answer", 60_000)).toMatchObject({
      status: 'success',
      text: 'calm',
    });
    // Requests refused while calls in flight held the day come back from the queue: minutes on a loaded machine.
  }, 420_000);

  it('refuses the llm tool once its workspace’s day is spent, without calling the model', async () => {
    const b = teamBIn('team-b-llm-tool');
    const limit = TEAM_B_BUDGETS['team-b-llm-tool'] * NUSD_PER_USD;
    const tag = unique();
    const tool = `ask-${tag}`;
    const model = `openai-compatible/answer-from-prompt~bills~${tag}`;
    await defineActive(b, `tool-${tool}`, 'tool.def.v1', {
      name: tool,
      implementation: 'llm',
      config: { model },
    });
    const ask = async (): Promise<Record<string, unknown>> => {
      const requestId = `r-${unique()}`;
      const created = await b.call('POST', '/breadcrumbs', {
        schema_name: 'tool.request.v1',
        tags: [`request:${requestId}`],
        context: { tool, input: { prompt: 'spend' }, requestId },
      });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      return eventually(async () => {
        const page = await b.call(
          'GET',
          `/breadcrumbs?schema_name=tool.response.v1&tag=${encodeURIComponent(`request:${requestId}`)}&limit=1&view=full`,
        );
        return ((page.body.items ?? []) as { context: Record<string, unknown> }[])[0]?.context;
      }, `the answer to ${requestId}`);
    };
    // $0.05 pays for two calls' worst case and a smaller third; then the day is spent.
    const answers: Record<string, unknown>[] = [];
    for (let i = 0; i < 8 && answers.at(-1)?.status !== 'error'; i++) answers.push(await ask());
    const refusal = answers.at(-1);
    expect(refusal?.status).toBe('error');
    expect(String(refusal?.error)).toMatch(DAILY_REFUSAL);
    expect(answers.filter((a) => a.status === 'success').length).toBeGreaterThanOrEqual(2);
    const before = await billed(model);
    expect(before.nusd).toBeLessThanOrEqual(limit);
    // Once over, every request is refused, and the model is not called.
    expect(String((await ask()).error)).toMatch(DAILY_REFUSAL);
    expect(await billed(model)).toEqual(before);
  });

  it('runs the llm tool on its definition’s model: input.model is refused naming the field', async () => {
    const b = teamBIn('team-b-llm-tool');
    const tag = unique();
    const tool = `cheap-${tag}`;
    const chosen = `offline/cheap-${tag}`;
    const pricey = `openai-compatible/answer-from-prompt~${tag}-pricey`;
    await defineActive(b, `tool-${tool}`, 'tool.def.v1', {
      name: tool,
      implementation: 'llm',
      config: { model: chosen, allowed_models: [`offline/also-${tag}`] },
    });
    const requestId = `r-${unique()}`;
    await b.call('POST', '/breadcrumbs', {
      schema_name: 'tool.request.v1',
      tags: [`request:${requestId}`],
      context: { tool, input: { prompt: 'hi', model: pricey }, requestId },
    });
    const answer = await eventually(async () => {
      const page = await b.call(
        'GET',
        `/breadcrumbs?schema_name=tool.response.v1&tag=${encodeURIComponent(`request:${requestId}`)}&limit=1&view=full`,
      );
      return ((page.body.items ?? []) as { context: Record<string, unknown> }[])[0]?.context;
    }, 'the answer');
    expect(answer.status).toBe('error');
    expect(String(answer.error)).toBe(
      `input.model "${pricey}" is not allowed: this tool runs config.model "${chosen}" or one of config.allowed_models (offline/also-${tag})`,
    );
    expect(
      (await fakeOpenAiCounts(adversary().fakeOpenAi))[pricey.replace('openai-compatible/', '')],
    ).toBeUndefined();

    // A definition whose allowed_models is not a list of models is refused when written, naming the field.
    const bad = `bad-${tag}`;
    const put = await b.call('PUT', `/breadcrumbs/tool-${bad}`, {
      schema_name: 'tool.def.v1',
      title: bad,
      context: { name: bad, implementation: 'llm', config: { allowed_models: 'openai/gpt-4o' } },
    });
    expect(put.status).toBeLessThan(300);
    const status = await eventually(async () => {
      const list = await b.call(
        'GET',
        `/breadcrumbs?schema_name=definition.status.v1&tag=${encodeURIComponent(`definition:tool-${bad}`)}&view=full`,
      );
      return (list.body.items as { context: Record<string, unknown> }[] | undefined)?.[0]?.context;
    }, 'the status');
    expect(status.state).toBe('invalid');
    expect(JSON.stringify(status.errors)).toContain('config.allowed_models');
  });
});
