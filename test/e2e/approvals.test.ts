/**
 * Approvals in the dashboard against the local stack: a workflow's agent step asks the offline model, which calls
 * the `calculator` tool; the tool needs approval, so the run's agent step waits. The navigation counts the
 * pending approval; the Approvals view approves it with edited arguments (the tool runs with them and the run
 * succeeds), and a second run's approval is rejected from the Runs view's form (the model reads the reason). The
 * count follows the workspace's change channel: a quiet minute reads `/approvals` no more (it was read every 5 s),
 * and a new approval is counted when its change is pushed.
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

async function workspace(): Promise<{ ws: string; call: ReturnType<typeof http> }> {
  const ws = unique('e2e-approvals');
  const call = http(ws);
  const put = async (id: string, schema_name: string, context: Json) =>
    expect((await call('PUT', `/breadcrumbs/${id}`, { schema_name, context })).status).toBe(201);
  await put('tool-calculator', 'tool.def.v1', {
    name: 'calculator',
    implementation: 'calculator',
    approval: 'required',
  });
  await put('agent-calc', 'agent.def.v1', {
    agent_id: 'calc',
    model: 'offline/calc',
    system_prompt: 'Compute.',
    tools: ['calculator'],
  });
  await put('wf-sum', 'workflow.def.v1', {
    workflow_id: 'sum',
    steps: [{ id: 'add', agent: 'calc', message: 'what is 17*23?' }],
    output: '=steps.add',
  });
  await eventually(async () => {
    const res = await call('GET', '/breadcrumbs?schema_name=definition.status.v1&limit=10');
    const items = (res.body.items as { context: { state: string } }[]) ?? [];
    return items.length === 3 && items.every((i) => i.context.state === 'active') ? true : undefined;
  });
  return { ws, call };
}

async function startAndWaitForApproval(
  call: ReturnType<typeof http>,
): Promise<{ runId: string; id: string }> {
  const started = await call('POST', '/runs', { workflow: 'sum', input: {} });
  expect(started.status).toBe(201);
  const runId = String(started.body.run_id);
  const id = await eventually(async () => {
    const list = (await call('GET', `/approvals?run=${runId}`)).body.items as { approval_id: string }[];
    return list[0]?.approval_id;
  });
  return { runId, id };
}

describe('the Approvals view', () => {
  it('counts pending approvals in the navigation and approves one with edited arguments', async () => {
    const { ws, call } = await workspace();
    const { runId, id } = await startAndWaitForApproval(call);
    const approval = (await call('GET', `/approvals/${id}`)).body;
    expect(approval).toMatchObject({
      agent_id: 'calc',
      tool: 'calculator',
      arguments: { expression: '17*23' },
      run_id: runId,
      step: 'add',
    });

    const { page, problems } = await openPage(browser);
    await page.goto(dashboard.replace('workspace=demo', `workspace=${ws}`));
    await page.locator('[data-nav=approvals] [data-approvals-count]', { hasText: '1' }).waitFor();
    await page.click('[data-nav=approvals]');
    const card = page.locator(`[data-approval="${id}"]`);
    await card.waitFor();
    await card.locator('textarea[name=arguments]').fill('{"expression": "2+3"}');
    await page.screenshot({ path: screenshotPath('approvals') });
    await card.locator('[data-approve]').click();
    // Answered: the card says so at once (before any refresh of the list can take it away).
    await page
      .locator(`[data-approval-answered="${id}"]`, { hasText: 'approved with edited arguments' })
      .waitFor();

    await eventually(async () =>
      (await call('GET', `/runs/${runId}`)).body.status === 'succeeded' ? true : undefined,
    );
    const run = (await call('GET', `/runs/${runId}`)).body;
    // The tool ran with the edited expression (5, not 391); the offline model quotes the call it made.
    expect(JSON.stringify(run.output)).toContain('= 5 (offline model)');
    expect((await call('GET', `/approvals/${id}`)).body).toMatchObject({ status: 'approved', edited: true });
    // The card is gone once the agent decided, and the navigation counts none.
    await page.locator('[data-approvals-view] button.link', { hasText: 'refresh' }).click();
    await card.waitFor({ state: 'detached' });
    await page.locator('[data-approvals-view]', { hasText: 'No tool call waits for approval' }).waitFor();
    await page.locator('[data-nav=approvals] [data-approvals-count]').waitFor({ state: 'detached' });
    expect(problems).toEqual([]);
  });

  it("rejects from the Runs view's form on the waiting agent step, and the model reads the reason", async () => {
    const { ws, call } = await workspace();
    const { runId, id } = await startAndWaitForApproval(call);

    const { page, problems } = await openPage(browser);
    await page.goto(dashboard.replace('workspace=demo', `workspace=${ws}`));
    await page.click('[data-nav=runs]');
    await page.click(`[data-run="${runId}"] a`);
    const card = page.locator(`[data-step=add] [data-approval="${id}"]`);
    await card.waitFor();
    // A rejection needs a reason: the form says so and sends nothing.
    await card.locator('[data-reject]').click();
    await card.getByText('say why you reject it').waitFor();
    expect((await call('GET', `/approvals/${id}`)).body.status).toBe('pending');
    await card.locator('input[name=reason]').fill('use the spreadsheet instead');
    await card.locator('[data-reject]').click();

    await eventually(async () =>
      (await call('GET', `/runs/${runId}`)).body.status === 'succeeded' ? true : undefined,
    );
    const run = (await call('GET', `/runs/${runId}`)).body;
    expect(JSON.stringify(run.output)).toContain('use the spreadsheet instead');
    expect((await call('GET', `/approvals/${id}`)).body.status).toBe('rejected');
    expect(problems).toEqual([]);
  });

  it('counts an approval when its change is pushed, and reads /approvals no more while nothing changes', async () => {
    const { ws, call } = await workspace();
    const { page, problems } = await openPage(browser);
    const approvalReads: string[] = [];
    const frames: string[] = [];
    page.on('request', (r) => {
      if (new URL(r.url()).pathname.endsWith('/approvals')) approvalReads.push(r.url());
    });
    page.on('websocket', (socket) => socket.on('framereceived', (f) => frames.push(String(f.payload))));
    // The page's timers run on a clock the test moves: a poll every 5 s would show in a minute moved at once.
    await page.clock.install();
    await page.goto(dashboard.replace('workspace=demo', `workspace=${ws}`));
    await expect
      .poll(() => frames.some((f) => f.includes('subscribe_success')), { timeout: 30_000 })
      .toBe(true);
    await expect.poll(() => approvalReads.length, { timeout: 30_000 }).toBeGreaterThan(0);
    const quiet = approvalReads.length;
    await page.clock.fastForward('01:00');
    // What the moved timers asked for is sent within a round of the page's event loop; give it a real moment.
    await page.waitForTimeout(1000);
    expect(approvalReads.length).toBe(quiet);
    expect(await page.locator('[data-nav=approvals] [data-approvals-count]').count()).toBe(0);

    // A run asks for approval: its human.request.v1 is pushed, and the badge counts it.
    const { id } = await startAndWaitForApproval(call);
    await page.locator('[data-nav=approvals] [data-approvals-count]', { hasText: '1' }).waitFor();
    expect(frames.some((f) => f.includes('"type":"data"') && f.includes('human.request.v1'))).toBe(true);
    expect(approvalReads.length).toBeGreaterThan(quiet);
    // Answered through the API (as another person would, elsewhere): the count goes when the answer is pushed.
    expect((await call('POST', `/approvals/${id}`, { decision: 'approve' })).status).toBeLessThan(300);
    await page.locator('[data-nav=approvals] [data-approvals-count]').waitFor({ state: 'detached' });
    expect(frames.some((f) => f.includes('"type":"data"') && f.includes('human.response.v1'))).toBe(true);
    expect(problems).toEqual([]);
  });
});
