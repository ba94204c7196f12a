/**
 * Attachments in the dashboard, in Chromium against the local stack: a breadcrumb whose context refers to an image
 * and a PDF shows the image inline (decoded: its natural size is the file's) and links the PDF to its download.
 */
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { pdf, png } from '../support/attachment-files.ts';
import { launch, openPage, screenshotPath } from './browser.ts';
import { http } from './stack-api.ts';

const { dashboard } = inject('e2e');
let browser: Browser;

beforeAll(async () => {
  browser = await launch();
});
afterAll(async () => {
  await browser?.close();
});

describe('attachments in the dashboard', () => {
  it('shows an attached image inline and links a document', async () => {
    const ws = `e2e-att-${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
    const call = http(ws);
    const image = png(24, 16, 9);
    const doc = pdf('the report');
    const shot = await call('POST', '/attachments', {
      media_type: 'image/png',
      name: 'screen.png',
      data_base64: image.toString('base64'),
    });
    const report = await call('POST', '/attachments', {
      media_type: 'application/pdf',
      name: 'report.pdf',
      data_base64: doc.toString('base64'),
    });
    expect(shot.status).toBe(201);
    const created = await call('POST', '/breadcrumbs', {
      schema_name: 'user.message.v1',
      title: 'with files',
      context: { message: 'see these', files: [{ $attachment: shot.body }, { $attachment: report.body }] },
    });
    expect(created.status).toBe(201);

    const { page, problems } = await openPage(browser);
    await page.goto(dashboard.replace('workspace=demo', `workspace=${ws}`));
    await page.locator('[data-nav=definitions]').waitFor();
    // Evaluated in the page as text: this test's TypeScript has no DOM types.
    await page.evaluate(`location.hash = '#/breadcrumb/${String(created.body.id)}'`);
    const img = page.locator('[data-panel=attachments] img');
    await img.waitFor();
    await expect
      .poll(() =>
        page.evaluate(
          `(() => { const i = document.querySelector('[data-panel=attachments] img'); return [i.naturalWidth, i.naturalHeight]; })()`,
        ),
      )
      .toEqual([24, 16]);
    const link = page.locator('[data-panel=attachments] a[data-media-type="application/pdf"]');
    expect(await link.textContent()).toContain('report.pdf');
    const downloaded = await fetch(String(await link.getAttribute('href')));
    expect(Buffer.from(await downloaded.arrayBuffer())).toEqual(doc);
    await page.screenshot({ path: screenshotPath('attachments') });
    expect(problems).toEqual([]);
  });
});
