/**
 * The Runs view on a run breadcrumb shaped as the orchestration engine writes it (`workflow.run.v1`, issue 10):
 * runs by status, the steps as a timeline, and a waiting human step approved through a form generated from its
 * `input_schema`. The run routes belong to the orchestration engine; here the browser's request to them is
 * captured to check what the dashboard sends (the full approve-and-succeed flow is tested once the engine is in).
 */
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { CrumbsClient } from '#cli/api-client.ts';
import { launch, openPage, screenshotPath } from './browser.ts';

const { api, token, dashboard } = inject('e2e');
let browser: Browser;

beforeAll(async () => {
  browser = await launch();
});
afterAll(async () => {
  await browser?.close();
});

describe('the Runs view', () => {
  it('shows a waiting run and approves its human step with input from the generated form', async () => {
    const workspace = `e2e-runs-${Date.now().toString(36)}`;
    const client = new CrumbsClient({ endpoint: api, token, workspace });
    await client.put('run-1-approve-1', {
      schema_name: 'human.request.v1',
      title: 'Ship the order?',
      tags: ['run:run-1', 'step:approve'],
      context: {
        run_id: 'run-1',
        step: 'approve',
        prompt: 'Ship the order?',
        input_schema: {
          type: 'object',
          properties: { carrier: { type: 'string', enum: ['ups', 'dhl'] }, express: { type: 'boolean' } },
          required: ['carrier'],
        },
      },
    });
    const started = new Date(Date.now() - 5000).toISOString();
    await client.put('run-1', {
      schema_name: 'workflow.run.v1',
      title: 'approve-flow run',
      tags: ['workflow:approve-flow', 'run:run-1'],
      context: {
        run_id: 'run-1',
        workflow: 'approve-flow',
        workflow_version: 1,
        status: 'waiting',
        input: { order: 42 },
        started_at: started,
        steps: {
          lookup: {
            kind: 'tool',
            status: 'succeeded',
            attempts: 1,
            input: { order: 42 },
            output: { total: 99 },
            started_at: started,
            ended_at: new Date(Date.parse(started) + 400).toISOString(),
          },
          approve: {
            kind: 'human',
            status: 'waiting',
            attempts: 1,
            attempt_id: 'run-1-approve-1',
            prompt: 'Ship the order?',
            started_at: new Date(Date.parse(started) + 500).toISOString(),
          },
        },
      },
    });

    const { page, problems } = await openPage(browser);
    const posted: { url: string; body: unknown }[] = [];
    await page.route('**/runs/run-1/*', async (route) => {
      posted.push({ url: route.request().url(), body: route.request().postDataJSON() });
      await route.fulfill({ status: 200, contentType: 'application/json', body: '{"run_id":"run-1"}' });
    });
    await page.goto(dashboard.replace('workspace=demo', `workspace=${workspace}`));
    await page.click('[data-nav=runs]');
    await page.locator('[data-status=waiting]', { hasText: 'waiting 1' }).waitFor();
    await page.click('[data-run=run-1] a');
    await page.locator('[data-step=lookup][data-step-status=succeeded]').waitFor();
    const decision = page.locator('[data-decision=approve]');
    await decision.locator('select[name=carrier]').waitFor();
    await decision.locator('select[name=carrier]').selectOption({ label: 'dhl' });
    await decision.locator('input[name=express]').check();
    await page.screenshot({ path: screenshotPath('run') });
    await decision.locator('[data-approve]').click();
    await expect.poll(() => posted.length).toBe(1);
    expect(posted[0]?.url).toMatch(new RegExp(`/v1/workspaces/${workspace}/runs/run-1/approve$`));
    expect(posted[0]?.body).toEqual({ step: 'approve', input: { carrier: 'dhl', express: true } });
    expect(problems).toEqual([]);
  });
});
