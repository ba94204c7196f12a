/**
 * The Chat view streams the answer in headless Chromium against the local stack: the demo agent's offline model
 * writes word by word, the view shows the words as they arrive (`[data-streaming]`) before the stored answer takes
 * their place (`[data-answer]`), and the stored answer is the streamed text. Stop cancels a streaming answer and
 * the turn says who cancelled it. The turn follows its thread over the workspace's change channel: no `/changes`
 * request of the page is held (each is answered at once, `wait=0`).
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { launch, openPage, screenshotPath } from './browser.ts';

const { dashboard } = inject('e2e');
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

/** A message the offline model echoes: long enough that its answer streams for a couple of seconds. */
function longMessage(tag: string): string {
  return `${tag}: ${Array.from({ length: 60 }, (_, i) => `word${i}`).join(' ')}`;
}

describe('the Chat view streams answers', () => {
  it('shows the words as they come, then the stored answer, which is what was streamed', async () => {
    const changeReads: URL[] = [];
    const onRequest = (r: { url(): string }) => {
      const url = new URL(r.url());
      if (url.pathname.endsWith('/changes')) changeReads.push(url);
    };
    page.on('request', onRequest);
    await page.goto(dashboard);
    await page.click('[data-nav=chat]');
    await page.fill('.composer input', longMessage('stream'));
    await page.click('.composer button');
    const streaming = page.locator('[data-streaming]');
    await streaming.waitFor({ timeout: 30_000 });
    const early = (await streaming.textContent()) ?? '';
    expect(early.length).toBeGreaterThan(0);
    await page.screenshot({ path: screenshotPath('chat-streaming') });
    const answer = page.locator('[data-answer]');
    await answer.waitFor({ timeout: 30_000 });
    const stored = (await answer.textContent()) ?? '';
    expect(stored).toContain('stream: word0 word1');
    // What was shown first is the beginning of the stored answer, seen before the whole of it.
    expect(stored.startsWith(early.replace(/… .*$/, ''))).toBe(true);
    expect(early.length).toBeLessThan(stored.length);
    expect(await streaming.count()).toBe(0);
    // The thread's steps and its answer came over the change channel: the page never long-polled /changes.
    page.off('request', onRequest);
    expect(changeReads.some((u) => u.searchParams.get('thread') !== null)).toBe(true);
    expect(changeReads.filter((u) => u.searchParams.get('wait') !== '0').map(String)).toEqual([]);
    expect(problems).toEqual([]);
  });

  it('Stop cancels a streaming answer', async () => {
    await page.goto(dashboard);
    await page.click('[data-nav=chat]');
    await page.fill('.composer input', longMessage('stop'));
    await page.click('.composer button');
    await page.locator('[data-streaming]').waitFor({ timeout: 30_000 });
    await page.click('.typing .stop');
    const failed = page.locator('.bubble.agent.error');
    await failed.waitFor({ timeout: 30_000 });
    expect(await failed.textContent()).toMatch(/^cancelled by user:/);
    expect(await page.locator('[data-answer]').count()).toBe(0);
  });
});
