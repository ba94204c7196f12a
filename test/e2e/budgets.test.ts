/**
 * A run stopped by its budget in the Runs view: a workflow of two agent steps with `limits.max_llm_calls: 1` pauses
 * before the second (the first made the one call), the view shows which budget stopped it and the figures, and a
 * person raises the limit in the view's form and resumes: the run finishes (the real run route, nothing
 * intercepted).
 */
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { launch, openPage } from './browser.ts';
import { eventually, http, type Json } from './stack-api.ts';

const { dashboard } = inject('e2e');
let browser: Browser;

beforeAll(async () => {
  browser = await launch();
});
afterAll(async () => {
  await browser?.close();
});

describe('budgets in the Runs view', () => {
  it('shows a run stopped by max_llm_calls and resumes it after the limit is raised in the form', async () => {
    const ws = `e2e-budget-${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
    const call = http(ws);
    const put = async (id: string, schema_name: string, context: Json) =>
      expect((await call('PUT', `/breadcrumbs/${id}`, { schema_name, context })).status).toBe(201);
    // The offline model answers in one call per turn.
    await put('agent-writer', 'agent.def.v1', { agent_id: 'writer', model: 'offline/metered', tools: [] });
    await put('wf-two', 'workflow.def.v1', {
      workflow_id: 'two-drafts',
      limits: { max_llm_calls: 1 },
      steps: [
        { id: 'draft', agent: 'writer', message: 'write a draft' },
        { id: 'revise', agent: 'writer', message: 'revise it' },
      ],
    });
    await eventually(async () => {
      const res = await call('GET', '/breadcrumbs?schema_name=definition.status.v1&limit=10');
      const items = (res.body.items as { context: { state: string } }[]) ?? [];
      return items.length === 2 && items.every((i) => i.context.state === 'active') ? true : undefined;
    });
    const started = await call('POST', '/runs', { workflow: 'two-drafts', input: {} });
    expect(started.status).toBe(201);
    const runId = String(started.body.run_id);
    await eventually(async () =>
      (await call('GET', `/runs/${runId}`)).body.status === 'paused' ? true : undefined,
    );

    const { page, problems } = await openPage(browser);
    await page.goto(dashboard.replace('workspace=demo', `workspace=${ws}`));
    await page.click('[data-nav=runs]');
    await page.click(`[data-run="${runId}"] a`);
    const form = page.locator('[data-budget-stop="limits.max_llm_calls"]');
    await form
      .getByText('stopped by limits.max_llm_calls (1 calls): 1 calls used, before step revise')
      .waitFor();
    await page.locator('[data-run-budget]', { hasText: 'used 1 model calls' }).waitFor();
    // The plain Resume is not offered: resuming without raising would stop again.
    expect(await page.getByRole('button', { name: 'Resume', exact: true }).count()).toBe(0);

    await form.locator('input[name=max_llm_calls]').fill('3');
    await form.getByRole('button', { name: 'Raise and resume' }).click();
    // The resume runs the second step and ends the run within a second or two; the view is read again then (its
    // change-stream follow may pass over a run's two quick writes between its polls).
    const run = await eventually(async () => {
      const r = (await call('GET', `/runs/${runId}`)).body;
      return r.status === 'succeeded' ? r : undefined;
    });
    await page.reload();
    await page.locator('[data-run-status]').getByText('succeeded').waitFor();
    expect(run.counters).toMatchObject({ llm_calls: 2 });
    expect(run.raised_limits).toMatchObject({ max_llm_calls: 3 });
    await page.locator('[data-run-budget]', { hasText: 'limits raised by user:' }).waitFor();
    expect(problems).toEqual([]);
  });
});
