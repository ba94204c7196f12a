/**
 * The Usage view against the local stack: a workflow whose step asks an agent on a priced offline model runs
 * through the real API; the view shows the totals the stream consumer kept (the same as the answer's recorded
 * call), a bar for today in the chart of days, the agent among the top agents and the run among the top runs —
 * and, switched to another workspace, none of it.
 */
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { launch, openPage, screenshotPath } from './browser.ts';
import { eventually, http, type Json } from './stack-api.ts';

const { dashboard } = inject('e2e');
let browser: Browser;

beforeAll(async () => {
  browser = await launch();
});
afterAll(async () => {
  await browser?.close();
});

const unique = (prefix: string) =>
  `${prefix}-${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;

describe('the Usage view', () => {
  it("shows the workspace's totals, a chart over days and the top agents and runs, and no other workspace's", async () => {
    const ws = unique('e2e-usage');
    const call = http(ws);
    expect(
      (
        await call('PUT', '/breadcrumbs/agent-helper', {
          schema_name: 'agent.def.v1',
          context: { agent_id: 'helper', model: 'offline/metered', system_prompt: 'Help.' },
        })
      ).status,
    ).toBe(201);
    expect(
      (
        await call('PUT', '/breadcrumbs/wf-ask', {
          schema_name: 'workflow.def.v1',
          context: {
            workflow_id: 'ask',
            steps: [{ id: 'ask', agent: 'helper', message: '="Say hello to " & input.name' }],
            output: '=steps.ask',
          },
        })
      ).status,
    ).toBe(201);
    await eventually(async () => {
      const res = await call('GET', '/breadcrumbs?schema_name=definition.status.v1&limit=10');
      const items = (res.body.items as { context: { state: string } }[]) ?? [];
      return items.length === 2 && items.every((i) => i.context.state === 'active') ? true : undefined;
    });
    const started = await call('POST', '/runs', { workflow: 'ask', input: { name: 'Ann' } });
    expect(started.status).toBe(201);
    const runId = String(started.body.run_id);
    await eventually(async () =>
      (await call('GET', `/runs/${runId}`)).body.status === 'succeeded' ? true : undefined,
    );

    // What the answer recorded is what the view must show.
    const answers = await call('GET', '/breadcrumbs?schema_name=agent.response.v1&view=full&limit=5');
    const [answer] = answers.body.items as { context: { llm_usage: { run_id: string; calls: Json[] } } }[];
    const usage = answer!.context.llm_usage;
    expect(usage.run_id).toBe(runId);
    expect(usage.calls).toHaveLength(1);
    const recorded = usage.calls[0] as { input_tokens: number; output_tokens: number; cost_nusd: number };
    expect(recorded.cost_nusd).toBe(recorded.input_tokens * 2000 + recorded.output_tokens * 8000);
    await eventually(async () =>
      ((await call('GET', '/usage')).body.totals as { calls: number }).calls === 1 ? true : undefined,
    );

    const { page, problems } = await openPage(browser);
    await page.goto(dashboard.replace('workspace=demo', `workspace=${ws}`));
    await page.click('[data-nav=usage]');
    const cost = `$0.${String(recorded.cost_nusd).padStart(9, '0').replace(/0+$/, '')}`;
    await page.locator('[data-usage-totals]', { hasText: `${cost} for 1 model calls` }).waitFor();
    const today = new Date().toISOString().slice(0, 10);
    const bar = page.locator(`[data-usage-chart] [data-day="${today}"]`);
    expect(await bar.getAttribute('data-calls')).toBe('1');
    // Drawn as tall as the chart (the only day with usage), and a day without usage draws nothing.
    expect((await bar.locator('rect').boundingBox())!.height).toBeGreaterThan(50);
    const yesterday = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);
    const empty = await page.locator(`[data-usage-chart] [data-day="${yesterday}"] rect`).boundingBox();
    expect(empty?.height ?? 0).toBeLessThan(1);
    expect(await page.locator('[data-usage-chart] [data-day]').count()).toBe(30);
    const agentRow = page.locator('[data-usage-top=agent] [data-key=helper]');
    await expect(agentRow.textContent()).resolves.toContain(cost.slice(1));
    await page.locator(`[data-usage-top=run] [data-key="${runId}"] a`).waitFor();
    await page.screenshot({ path: screenshotPath('usage') });

    // Another workspace: nothing of this one's usage.
    await page.fill('input[name=workspace]', unique('e2e-usage-other'));
    await page.click('form.workspace button[type=submit]');
    await page.click('[data-nav=usage]');
    await page.locator('[data-usage-totals]', { hasText: '$0 for 0 model calls' }).waitFor();
    expect(await page.locator('[data-usage-top] [data-key]').count()).toBe(0);
    expect(problems).toEqual([]);
  });
});
