/**
 * The Live view in headless Chromium follows its workspace over the change channel: a write made through the API
 * appears in the view, carried by a WebSocket frame of the workspace's channel, while the page makes no request
 * to `/changes` for it (its only reads of `/changes` are answered at once: the backlog and the feed's start).
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { CrumbsClient } from '#cli/api-client.ts';
import { launch, openPage, screenshotPath } from './browser.ts';

const { api, token } = inject('e2e');
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

describe('the Live view over the change channel', () => {
  it('shows a write as it is pushed, with no /changes request made for it', async () => {
    const workspace = `e2e-live-${Date.now().toString(36)}`;
    const requests: string[] = [];
    const frames: string[] = [];
    const sentFrames: string[] = [];
    page.on('request', (r) => requests.push(r.url()));
    page.on('websocket', (ws) => {
      ws.on('framereceived', (f) => frames.push(String(f.payload)));
      ws.on('framesent', (f) => sentFrames.push(String(f.payload)));
    });
    // The view's one read of what came before (the newest 50), answered at once.
    const backlog = page.waitForResponse(
      (r) => r.url().includes('/changes?') && r.url().includes('backlog=50'),
      {
        timeout: 60_000,
      },
    );
    await page.goto(
      `${api}/ui/#token=${encodeURIComponent(token)}&workspace=${encodeURIComponent(workspace)}`,
    );
    await page.locator('section h2', { hasText: 'Live' }).waitFor();
    // Subscribed to the workspace's change channel, and the view is following it (the dot is on).
    await expect
      .poll(() => sentFrames.some((f) => f.includes('"subscribe"') && f.includes('"/changes/w')), {
        timeout: 30_000,
      })
      .toBe(true);
    await expect
      .poll(() => frames.some((f) => f.includes('subscribe_success')), { timeout: 30_000 })
      .toBe(true);
    await page.locator('.heading .dot.on').waitFor({ timeout: 30_000 });
    await backlog;
    const before = requests.length;

    const client = new CrumbsClient({ endpoint: api, token, workspace });
    const written = await client.create({
      schema_name: 'e2e.note.v1',
      title: 'pushed to the Live view',
      tags: ['e2e'],
      context: { text: 'hello' },
    });
    const row = page.locator('table.live tr', { hasText: 'pushed to the Live view' });
    await row.waitFor({ timeout: 30_000 });
    expect(await row.textContent()).toContain('e2e.note.v1');
    await page.screenshot({ path: screenshotPath('live-pushed') });

    // It came in a frame of the channel, and the page asked /changes nothing since it subscribed.
    expect(frames.some((f) => f.includes('"type":"data"') && f.includes(written.id))).toBe(true);
    const changeReads = requests.filter((u) => new URL(u).pathname.endsWith('/changes'));
    expect(requests.slice(before).filter((u) => new URL(u).pathname.endsWith('/changes'))).toEqual([]);
    // Before it: only reads answered at once (the newest 50, the feed's start), never a long poll.
    expect(changeReads.length).toBeGreaterThan(0);
    for (const u of changeReads) expect(new URL(u).searchParams.get('wait')).toBe('0');
    expect(problems).toEqual([]);
  });
});
