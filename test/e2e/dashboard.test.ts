/**
 * The dashboard in a real browser (Debian's Chromium, headless) against the local stack: log in through the URL
 * fragment, chat with the demo agent and see 391, follow its thread through the calculator round trip, read a
 * breadcrumb and its history, explain a definition, switch workspace and find a dead letter in Errors — with no
 * console errors on the way. Each view's screenshot is taken (into docs/screenshots with `npm run screenshots`).
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { CrumbsClient } from '#cli/api-client.ts';
import { launch, openPage, screenshotPath } from './browser.ts';

const { api, token, dashboard } = inject('e2e');

let browser: Browser;
let page: Page;
let problems: string[];

beforeAll(async () => {
  browser = await launch();
  ({ page, problems } = await openPage(browser));
});

afterAll(async () => {
  await browser?.close();
});

async function eventually<T>(check: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/**
 * A workspace with a tool whose upstream always answers 503: its request is retried until SQS dead-letters it,
 * and the DLQ handler answers with an error. Started first, so it is there by the time the test looks.
 */
async function deadLetterWorkspace(): Promise<{ workspace: string; close: () => Promise<void> }> {
  const upstream = createServer((_req, res) => {
    res.statusCode = 503;
    res.end('busy');
  });
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  const workspace = `e2e-dlq-${Date.now().toString(36)}`;
  const client = new CrumbsClient({ endpoint: api, token, workspace });
  await client.put('tool-flaky', {
    schema_name: 'tool.def.v1',
    title: 'A tool whose upstream is always busy',
    context: {
      name: 'flaky',
      implementation: 'http',
      config: { allowed_hosts: ['127.0.0.1'], allow_private: true },
    },
  });
  await eventually(async () =>
    (await client.definitions()).items.some((d) => d.id === 'tool-flaky' && d.state === 'active')
      ? true
      : undefined,
  );
  await client.create({
    schema_name: 'tool.request.v1',
    title: 'fetch from the busy upstream',
    context: {
      tool: 'flaky',
      input: { url: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/` },
      requestId: 'poison',
      requestedBy: 'e2e',
    },
  });
  return {
    workspace,
    close: () =>
      new Promise((resolve) => {
        upstream.closeAllConnections();
        upstream.close(() => resolve());
      }),
  };
}

describe('the dashboard', () => {
  it('shows every view with live data: chat, thread, breadcrumb, live, definitions, errors', async () => {
    const dlq = await deadLetterWorkspace();
    try {
      // Logged in through the fragment; the token leaves the address bar at once.
      await page.goto(dashboard);
      await page.locator('h2', { hasText: 'Live' }).waitFor();
      expect(page.url()).not.toContain(token);
      expect(await page.inputValue('.workspace input')).toBe('demo');

      // Chat: the demo agent answers through the calculator.
      await page.click('[data-nav=chat]');
      await page.fill('.composer input', 'what is 17*23?');
      await page.click('.composer button');
      const answer = page.locator('[data-answer]');
      await answer.waitFor({ timeout: 45_000 });
      expect(await answer.textContent()).toContain('391');
      const messageId = await page.locator('[data-turn]').first().getAttribute('data-turn');
      await page.screenshot({ path: screenshotPath('chat') });

      // Its thread: the causal tree with the calculator round trip.
      await page.click('.thread-link');
      const response = page.locator('tr[data-schema="tool.response.v1"]');
      await response.waitFor();
      await page.locator('tr[data-schema="agent.response.v1"]').waitFor();
      expect(await page.locator('tr[data-schema="tool.request.v1"]').textContent()).toContain(
        'agent:chat-assistant',
      );
      expect(await response.textContent()).toContain('tool:calculator');
      const order = await page
        .locator('tr[data-schema]')
        .evaluateAll((rows) => rows.map((r) => r.getAttribute('data-schema')));
      expect(order.indexOf('tool.request.v1')).toBeLessThan(order.indexOf('tool.response.v1'));
      expect(order.indexOf('tool.response.v1')).toBeLessThan(order.indexOf('agent.response.v1'));
      await page.screenshot({ path: screenshotPath('thread') });

      // The turn's conversation is written once, when it answers; a person adds a note to it through the API, so
      // it has a history: context view, stored record, and the diff of its last version.
      const demo = new CrumbsClient({ endpoint: api, token, workspace: 'demo' });
      const node = (await demo.thread(messageId ?? '')).nodes.find(
        (n) => n.schema_name === 'agent.conversation.v1',
      );
      const stored = await demo.getFull(node?.id ?? 'no-conversation');
      expect(stored.version).toBe(1);
      await demo.update(stored.id, { context: { ...stored.context, note: 'checked' } });
      await page.locator('tr[data-schema="agent.conversation.v1"] a').first().click();
      await page.locator('[data-panel=context-view]').waitFor();
      expect(await page.locator('[data-panel=stored-record]').textContent()).toContain('"version"');
      await page.locator('.diff h4').waitFor();
      expect(await page.locator('.diff').textContent()).toMatch(/context\.note/);
      await page.screenshot({ path: screenshotPath('breadcrumb'), fullPage: true });

      // Live: the chat's breadcrumbs, and a filter.
      await page.click('[data-nav=live]');
      await page.locator('td', { hasText: 'agent.response.v1' }).first().waitFor();
      await page.fill('.filters input[name=writer]', 'tool:calculator');
      await page.locator('table.live tbody tr').first().waitFor();
      const writers = await page.locator('table.live tbody tr td:nth-child(5)').allTextContents();
      expect(new Set(writers)).toEqual(new Set(['tool:calculator']));
      await page.fill('.filters input[name=writer]', '');
      await page.screenshot({ path: screenshotPath('live') });

      // Definitions: the demo's, active, and an explanation against the chat message.
      await page.click('[data-nav=definitions]');
      const contextDef = page.locator('[data-definition=demo-context-chat-assistant]');
      await contextDef.waitFor();
      expect(await contextDef.locator('.badge').textContent()).toBe('active');
      // Its rule, and the bus of the pool that holds it.
      expect(await contextDef.locator('details summary').textContent()).toMatch(
        /crumbs-def-demo-\S+ on crumbs$/,
      );
      await contextDef.locator('input[name=breadcrumb]').fill(messageId ?? '');
      await contextDef.locator('button', { hasText: 'Explain' }).click();
      await contextDef.locator('.explanation.ok').waitFor();
      await page.screenshot({ path: screenshotPath('definitions') });

      // Errors, in another workspace: the dead-lettered request's error answer, linked to its thread.
      await page.fill('.workspace input', dlq.workspace);
      await page.click('.workspace button');
      await page.click('[data-nav=errors]');
      const deadLetter = page.locator('tr[data-error]', { hasText: 'dead letter' });
      await eventually(async () => {
        if ((await deadLetter.count()) > 0) return true;
        await page.locator('button', { hasText: 'refresh' }).click();
        await page.waitForTimeout(500);
        return undefined;
      }, 60_000);
      expect(await deadLetter.first().textContent()).toContain('tool.response.v1');
      await page.screenshot({ path: screenshotPath('errors') });
      await deadLetter.first().locator('a', { hasText: 'open thread' }).click();
      const failed = page.locator('tr.row-error[data-schema="tool.response.v1"]');
      await failed.waitFor();
      expect(await failed.textContent()).toContain('dead-letter queue');

      expect(problems).toEqual([]);
    } finally {
      await dlq.close();
    }
  });

  it('asks for a token when it has none, refuses a wrong one, and logs in with the right one', async () => {
    const { page: fresh, problems: freshProblems } = await openPage(browser);
    await fresh.goto(dashboard.replace(/#.*$/, ''));
    // The token form's own button: the shared stack also names an issuer, whose "Sign in" button comes first.
    const logIn = fresh.locator('.login form button[type=submit]');
    await fresh.fill('input[name=token]', 'wrong');
    await logIn.click();
    await fresh.locator('.login .error', { hasText: '401' }).waitFor();
    await fresh.fill('input[name=token]', token);
    await logIn.click();
    await fresh.locator('h2', { hasText: 'Live' }).waitFor();
    // The refused token is the one expected error.
    expect(freshProblems.filter((p) => !p.includes('401'))).toEqual([]);
  });
});
