/**
 * The Runs view against the orchestration engine on the local stack: a real workflow (a tool step, a human
 * checkpoint with an `input_schema`, a tool step that uses the approver's input) started through the API, shown
 * waiting in the browser, approved through the form generated from the checkpoint's schema (the real run route,
 * nothing intercepted), and seen to succeed with the approver's input in its output. A second run is paused,
 * resumed and cancelled from the view's controls, and a finished run is retried from a step.
 */
import type { Browser, Page } from 'playwright-core';
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

const shipWorkflow = {
  workflow_id: 'ship-order',
  input_schema: { type: 'object', required: ['order'], properties: { order: { type: 'number' } } },
  steps: [
    { id: 'lookup', tool: 'echo', input: { order: '=input.order', total: 99 } },
    {
      id: 'approve',
      human: {
        prompt: '="Ship order " & $string(input.order) & "?"',
        input_schema: {
          type: 'object',
          properties: { carrier: { type: 'string', enum: ['ups', 'dhl'] }, express: { type: 'boolean' } },
          required: ['carrier'],
        },
      },
    },
    {
      id: 'ship',
      tool: 'echo',
      input: { carrier: '=steps.approve.carrier', express: '=steps.approve.express' },
    },
  ],
  output: { shipped: '=steps.ship' },
};

/** A workspace with the echo tool and the ship-order workflow, both rules active. */
async function workspaceWithWorkflow(): Promise<{ ws: string; call: ReturnType<typeof http> }> {
  const ws = `e2e-runs-${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
  const call = http(ws);
  expect(
    (
      await call('PUT', '/breadcrumbs/tool-echo', {
        schema_name: 'tool.def.v1',
        context: { name: 'echo', implementation: 'echo' },
      })
    ).status,
  ).toBe(201);
  expect(
    (await call('PUT', '/breadcrumbs/wf-ship', { schema_name: 'workflow.def.v1', context: shipWorkflow }))
      .status,
  ).toBe(201);
  await eventually(async () => {
    const res = await call('GET', '/breadcrumbs?schema_name=definition.status.v1&limit=10');
    const items = (res.body.items as { context: { state: string } }[]) ?? [];
    return items.length === 2 && items.every((i) => i.context.state === 'active') ? true : undefined;
  });
  return { ws, call };
}

async function startRun(call: ReturnType<typeof http>, order: number): Promise<string> {
  const res = await call('POST', '/runs', { workflow: 'ship-order', input: { order } });
  expect(res.status).toBe(201);
  return String(res.body.run_id);
}

async function openRun(page: Page, ws: string, runId: string): Promise<void> {
  await page.goto(dashboard.replace('workspace=demo', `workspace=${ws}`));
  await page.click('[data-nav=runs]');
  await page.click(`[data-run="${runId}"] a`);
  await page.locator(`[data-run-view="${runId}"]`).waitFor();
}

const runStatus = (page: Page) => page.locator('[data-run-status]');

describe('the Runs view', () => {
  it('approves a waiting human step with input from the generated form, and the run succeeds', async () => {
    const { ws, call } = await workspaceWithWorkflow();
    const runId = await startRun(call, 42);
    await eventually(async () =>
      (await call('GET', `/runs/${runId}`)).body.status === 'waiting' ? true : undefined,
    );

    const { page, problems } = await openPage(browser);
    await page.goto(dashboard.replace('workspace=demo', `workspace=${ws}`));
    await page.click('[data-nav=runs]');
    await page.locator('[data-status=waiting]', { hasText: 'waiting 1' }).waitFor();
    await page.click(`[data-run="${runId}"] a`);
    await page.locator('[data-step=lookup][data-step-status=succeeded]').waitFor();
    await page.locator('.prompt', { hasText: 'Ship order 42?' }).waitFor();
    const decision = page.locator('[data-decision=approve]');
    await decision.locator('select[name=carrier]').selectOption({ label: 'dhl' });
    await decision.locator('input[name=express]').check();
    await page.screenshot({ path: screenshotPath('run') });
    await decision.locator('[data-approve]').click();

    // The view follows the run to its end; the approver's input reached the next step.
    await runStatus(page).getByText('succeeded').waitFor({ timeout: 45_000 });
    await page.locator('[data-step=ship][data-step-status=succeeded]').waitFor();
    const run = (await call('GET', `/runs/${runId}`)).body;
    expect(run.status).toBe('succeeded');
    expect(run.output).toEqual({ shipped: { carrier: 'dhl', express: true } });
    const approve = (run.steps as Record<string, Json>).approve;
    expect(approve).toMatchObject({
      status: 'succeeded',
      decision: 'approve',
      output: { carrier: 'dhl', express: true },
    });

    // Retry from a step: the list offers the top-level steps the API accepts; `ship` runs again as a second
    // attempt and the run ends again.
    const offered = await page
      .locator('select[name=from_step] option')
      .evaluateAll((options) =>
        options.map((o) => (o as unknown as { value: string }).value).filter(Boolean),
      );
    expect(offered).toEqual(run.retry_steps);
    await page.locator('select[name=from_step]').selectOption('ship');
    await page.locator('form.retry button[type=submit]').click();
    await eventually(async () => {
      const r = (await call('GET', `/runs/${runId}`)).body;
      const ship = (r.steps as Record<string, Json>).ship;
      return r.status === 'succeeded' && ship?.attempts === 2 ? true : undefined;
    });
    await page.locator('[data-step=ship]', { hasText: 'attempt 2' }).waitFor();
    expect(problems).toEqual([]);
  });

  it('pauses, resumes and cancels a waiting run from the controls', async () => {
    const { ws, call } = await workspaceWithWorkflow();
    const runId = await startRun(call, 7);
    await eventually(async () =>
      (await call('GET', `/runs/${runId}`)).body.status === 'waiting' ? true : undefined,
    );

    const { page, problems } = await openPage(browser);
    await openRun(page, ws, runId);
    await page.locator('[data-decision=approve]').waitFor();

    await page.getByRole('button', { name: 'Pause' }).click();
    await runStatus(page).getByText('paused').waitFor();
    expect((await call('GET', `/runs/${runId}`)).body.status).toBe('paused');

    await page.getByRole('button', { name: 'Resume' }).click();
    await runStatus(page).getByText('waiting').waitFor();

    await page.getByRole('button', { name: 'Cancel' }).click();
    await runStatus(page).getByText('cancelled').waitFor();
    const run = (await call('GET', `/runs/${runId}`)).body;
    expect(run.status).toBe('cancelled');
    expect((run.steps as Record<string, Json>).ship?.status).not.toBe('succeeded');
    expect(problems).toEqual([]);
  });
});
