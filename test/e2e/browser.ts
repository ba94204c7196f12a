/** Headless Chromium (Debian's, driven by playwright-core) with every console error and page error recorded. */
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';

export const CHROMIUM = process.env.CRUMBS_CHROMIUM ?? '/usr/bin/chromium';

export async function launch(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `no Chromium at ${CHROMIUM}: apt-get install chromium (or set CRUMBS_CHROMIUM); .ci/run installs it`,
    );
  }
  return chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
}

/** A page whose console errors and uncaught errors are collected in `problems`. */
export async function openPage(browser: Browser): Promise<{ page: Page; problems: string[] }> {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  const problems: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  return { page, problems };
}

/**
 * Screenshots go to docs/ with CRUMBS_SCREENSHOTS=1 (`npm run screenshots`), otherwise to a scratch folder: every
 * run takes them (so each view is rendered), but only a deliberate run changes the committed pictures.
 */
export function screenshotPath(name: string): string {
  const dir = process.env.CRUMBS_SCREENSHOTS === '1' ? 'docs/screenshots' : join('.scratch', 'screenshots');
  mkdirSync(dir, { recursive: true });
  return join(dir, `${name}.png`);
}
