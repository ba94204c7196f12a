/**
 * The Runs view shows a waiting wait_for step — what it waits for (the selector, the correlation value) and until
 * when — and follows the run to its end once the matching breadcrumb is written through the API.
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

const shipping = {
  workflow_id: 'shipping',
  steps: [
    {
      id: 'shipped',
      wait_for: {
        selector: { schema_name: 'order.shipped.v1' },
        correlate: { field: '$.order_id', equals: 'input.order_id' },
        timeout_seconds: 3600,
      },
    },
  ],
  output: '=steps.shipped.context.carrier',
};

describe('the Runs view and wait_for', () => {
  it('shows what a wait_for step waits for, then the run resumed by the matching write', async () => {
    const ws = `e2e-waitfor-${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
    const call = http(ws);
    expect(
      (await call('PUT', '/breadcrumbs/wf-shipping', { schema_name: 'workflow.def.v1', context: shipping }))
        .status,
    ).toBe(201);
    await eventually(async () => {
      const res = await call('GET', '/breadcrumbs?schema_name=definition.status.v1&limit=10');
      const items = (res.body.items as { context: { state: string } }[]) ?? [];
      return items.length === 1 && items[0]?.context.state === 'active' ? true : undefined;
    });
    const started = await call('POST', '/runs', { workflow: 'shipping', input: { order_id: 'W-7' } });
    expect(started.status).toBe(201);
    const runId = String(started.body.run_id);
    await eventually(async () => {
      const run = (await call('GET', `/runs/${runId}`)).body;
      return (run.steps as Record<string, Json> | undefined)?.shipped?.status === 'waiting'
        ? true
        : undefined;
    });

    const { page, problems } = await openPage(browser);
    await page.goto(dashboard.replace('workspace=demo', `workspace=${ws}`));
    await page.click('[data-nav=runs]');
    await page.click(`[data-run="${runId}"] a`);
    const waiting = page.locator('[data-waiting-for=shipped]');
    await waiting.waitFor();
    expect(await waiting.textContent()).toContain('$.order_id');
    expect(await waiting.textContent()).toContain('"W-7"');
    expect(await waiting.textContent()).toContain('order.shipped.v1');
    await page.screenshot({ path: screenshotPath('run-wait-for') });

    const written = await call('POST', '/breadcrumbs', {
      schema_name: 'order.shipped.v1',
      context: { order_id: 'W-7', carrier: 'dhl' },
    });
    expect(written.status).toBe(201);
    await page.locator('[data-run-status]').getByText('succeeded').waitFor({ timeout: 45_000 });
    await page.locator('[data-step=shipped][data-step-status=succeeded]').waitFor();
    expect(await page.locator('[data-waiting-for=shipped]').count()).toBe(0);
    expect((await call('GET', `/runs/${runId}`)).body.output).toBe('dhl');
    expect(problems).toEqual([]);
  });
});
