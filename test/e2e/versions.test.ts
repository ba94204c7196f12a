/**
 * Versions in the dashboard, against the local stack: a tool written twice and rolled back with `crumbs rollback`
 * shows its three versions in the Definitions view, each with what changed from the one before; a run whose step
 * pins `calc@1` shows, in the Runs view, the definition version each step ran.
 */
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { main } from '#cli/main.ts';
import { launch, openPage, screenshotPath } from './browser.ts';
import { eventually, http, type Json } from './stack-api.ts';

const { api, token, dashboard } = inject('e2e');
let browser: Browser;

beforeAll(async () => {
  browser = await launch();
});
afterAll(async () => {
  await browser?.close();
});

describe('versions in the dashboard', () => {
  it('lists a definition’s versions with diffs, and the version each run step ran', async () => {
    const ws = `e2e-versions-${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
    const call = http(ws);
    await call('PUT', '/breadcrumbs/tool-calc', {
      schema_name: 'tool.def.v1',
      context: { name: 'calc', implementation: 'echo' },
    });
    await call('PUT', '/breadcrumbs/tool-calc', {
      schema_name: 'tool.def.v1',
      context: { name: 'calc', implementation: 'calculator' },
    });
    let out = '';
    const code = await main(
      ['rollback', 'tool-calc', '--to', '1', '--endpoint', api, '--token', token, '--workspace', ws],
      { stdout: (s) => (out += s), stderr: (s) => (out += s), env: {} },
    );
    expect(code, out).toBe(0);
    await call('PUT', '/breadcrumbs/wf-sum', {
      schema_name: 'workflow.def.v1',
      context: {
        workflow_id: 'sum',
        steps: [
          { id: 'pinned', tool: 'calc@2', input: { expression: '6*7' } },
          { id: 'latest', tool: 'calc', input: { expression: '6*7' } },
        ],
      },
    });
    await eventually(async () => {
      const items = ((await call('GET', '/definitions')).body.items as Json[]) ?? [];
      return items.length === 2 && items.every((d) => d.state === 'active' && d.status_version === d.version)
        ? true
        : undefined;
    });
    const started = await call('POST', '/runs', { workflow: 'sum', input: {} });
    const runId = String(started.body.run_id);
    await eventually(async () =>
      (await call('GET', `/runs/${runId}`)).body.status === 'succeeded' ? true : undefined,
    );

    const { page, problems } = await openPage(browser);
    await page.goto(dashboard.replace('workspace=demo', `workspace=${ws}`));
    await page.click('[data-nav=definitions]');
    const tool = page.locator('[data-versions=tool-calc]');
    await tool.getByRole('button', { name: 'versions (latest v3)' }).click();
    const versions = tool.locator('li[data-version]');
    await versions.first().waitFor();
    expect(await versions.evaluateAll((items) => items.map((i) => i.getAttribute('data-version')))).toEqual([
      '3',
      '2',
      '1',
    ]);
    // Each diff is against the version before: the rollback (v3) changed calculator back to echo.
    const v3 = tool.locator('li[data-version="3"] tr', { hasText: 'context.implementation' });
    expect(await v3.locator('td.del').textContent()).toContain('calculator');
    expect(await v3.locator('td.add').textContent()).toContain('echo');
    const v2 = tool.locator('li[data-version="2"] tr', { hasText: 'context.implementation' });
    expect(await v2.locator('td.del').textContent()).toContain('echo');
    expect(await v2.locator('td.add').textContent()).toContain('calculator');
    await tool.locator('li[data-version="1"]', { hasText: 'the first version' }).waitFor();
    await page.screenshot({ path: screenshotPath('definition-versions') });

    // The run: the pinned step ran v2 (the calculator), the unpinned one v3 (echo again after the rollback).
    await page.click('[data-nav=runs]');
    await page.click(`[data-run="${runId}"] a`);
    await page.locator('[data-step=pinned] [data-ran="tool-calc@2"]').waitFor();
    await page.locator('[data-step=latest] [data-ran="tool-calc@3"]').waitFor();
    const run = (await call('GET', `/runs/${runId}`)).body;
    expect((run.steps as Record<string, Json>).pinned?.output).toEqual({ result: 42 });
    expect((run.steps as Record<string, Json>).latest?.output).toEqual({ expression: '6*7' });
    expect(problems).toEqual([]);
  });
});
