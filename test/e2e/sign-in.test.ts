/**
 * The dashboard's sign-in page in Chromium against the local stack and its local OpenID Connect issuer
 * (`oidc-provider`, test/support/oidc-issuer.ts; the stack runs as `crumbs dev --oidc-issuer`): "Sign in" leads to
 * the issuer's login and consent pages, which send the page back with a code; the dashboard exchanges it (PKCE, no
 * secret), opens the person's workspace, reads data with the token, refreshes the token when it is about to
 * expire, and "Log out" revokes it and ends the issuer's session, back at the sign-in page.
 */
import type { Browser, BrowserContext, Page, Request } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { CrumbsClient } from '#cli/api-client.ts';
import { tokenClaims } from '#shared/client/sign-in.ts';
import { OIDC_CLIENT_ID } from '../support/oidc-issuer.ts';
import { launch, screenshotPath } from './browser.ts';

const { api, token, issuer } = inject('e2e');

let browser: Browser;
let context: BrowserContext;
let page: Page;
/** Console errors of the dashboard's own pages (the issuer's development pages are not under test). */
const problems: string[] = [];
const requests: Request[] = [];

beforeAll(async () => {
  browser = await launch();
  context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  page = await context.newPage();
  page.on('console', (m) => {
    if (m.type() === 'error' && m.location().url.startsWith(api)) problems.push(`console: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('request', (r) => requests.push(r));
});

afterAll(async () => {
  await browser?.close();
});

/** The Authorization headers the page sent to the API since `from`. */
function apiBearers(from: number): string[] {
  return requests
    .slice(from)
    .filter((r) => r.url().startsWith(`${api}/v1/`))
    .map((r) => r.headers().authorization ?? '');
}

describe('signing in to the dashboard', () => {
  const ws = 'sign-in-b';
  let crumbId: string;

  it('offers Sign in with the stack’s issuer beside the token form', async () => {
    const crumb = await new CrumbsClient({ endpoint: api, token, workspace: ws }).create({
      schema_name: 'note.text.v1',
      title: 'written for the signed-in reader',
      context: { text: 'hello bob' },
    });
    crumbId = crumb.id;
    await page.goto(`${api}/ui/`);
    await page.waitForSelector('[data-sign-in]');
    expect(await page.textContent('.sign-in')).toContain(
      `Sign in with your account at ${new URL(issuer).host}`,
    );
    expect(await page.isVisible('input[name=token]')).toBe(true);
  });

  it('signs in at the issuer (login and consent pages) and comes back to the person’s workspace', async () => {
    await page.click('[data-sign-in]');
    await page.waitForURL((url) => url.href.startsWith(issuer));
    const authorize = requests.find((r) => r.url().startsWith(`${issuer}/auth`));
    const query = new URL(authorize?.url() ?? '').searchParams;
    expect(query.get('code_challenge_method')).toBe('S256');
    expect(query.get('client_id')).toBe(OIDC_CLIENT_ID);
    expect(query.get('redirect_uri')).toBe(`${api}/ui/`);
    await page.fill('input[name=login]', 'bob');
    await page.fill('input[name=password]', 'any password');
    await page.click('button[type=submit]');
    await page.waitForSelector('button:has-text("Continue")');
    await page.click('button:has-text("Continue")');
    await page.waitForSelector('[data-user]');
    expect(await page.textContent('[data-user]')).toBe('bob@example.test');
    expect(await page.inputValue('input[name=workspace]')).toBe(ws);
    // The code is gone from the address bar and the history.
    expect(page.url()).toBe(`${api}/ui/#/live`);
    const exchange = requests.find((r) => r.url() === `${issuer}/token` && r.method() === 'POST');
    const form = new URLSearchParams(exchange?.postData() ?? '');
    expect(form.get('grant_type')).toBe('authorization_code');
    expect(form.get('code_verifier')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(form.has('client_secret')).toBe(false);
  });

  it('reads the workspace with the signed-in token, never a pasted one', async () => {
    const from = requests.length;
    await page.goto(`${api}/ui/#/breadcrumb/${crumbId}`);
    await page.waitForSelector('text=written for the signed-in reader');
    const bearers = apiBearers(from);
    expect(bearers.length).toBeGreaterThan(0);
    for (const bearer of bearers) {
      expect(bearer).not.toContain(token);
      // The issuer's access tokens are opaque: the ID token is sent, issued to the dashboard's client.
      expect(tokenClaims(bearer.replace(/^Bearer /, ''))).toMatchObject({ aud: OIDC_CLIENT_ID, sub: 'bob' });
    }
    await page.screenshot({ path: screenshotPath('signed-in') });
  });

  it('follows the Live view over the change channel with the signed-in token', async () => {
    const frames: string[] = [];
    const sentFrames: string[] = [];
    page.on('websocket', (socket) => {
      socket.on('framereceived', (f) => frames.push(String(f.payload)));
      socket.on('framesent', (f) => sentFrames.push(String(f.payload)));
    });
    await page.goto(`${api}/ui/#/live`);
    // A new page: its feed opens its socket now, where the listeners see it.
    await page.reload();
    await page.locator('section h2', { hasText: 'Live' }).waitFor();
    await expect
      .poll(() => frames.some((f) => f.includes('subscribe_success')), { timeout: 30_000 })
      .toBe(true);
    expect(frames.filter((f) => f.includes('error'))).toEqual([]);
    // The subscription carried the session's ID token (the feed once sent a signed-in page's empty token).
    const subscribe = sentFrames.find((f) => f.includes('"subscribe"')) ?? '';
    const bearer = /"Authorization":"(?:Bearer )?([^"]+)"/.exec(subscribe)?.[1] ?? '';
    expect(tokenClaims(bearer)).toMatchObject({ aud: OIDC_CLIENT_ID, sub: 'bob' });
    const written = await new CrumbsClient({ endpoint: api, token, workspace: ws }).create({
      schema_name: 'note.text.v1',
      title: 'pushed to the signed-in reader',
      context: { text: 'hello again' },
    });
    await page
      .locator('table.live tr', { hasText: 'pushed to the signed-in reader' })
      .waitFor({ timeout: 30_000 });
    expect(frames.some((f) => f.includes('"type":"data"') && f.includes(written.id))).toBe(true);
  });

  it('refreshes the token when it is about to expire and goes on reading', async () => {
    const before = await page.evaluate<string | null>("localStorage.getItem('crumbs.signin')");
    // The page's own storage, as the dashboard keeps it: the stored tokens now say they have expired.
    await page.evaluate(`(() => {
      const session = JSON.parse(localStorage.getItem('crumbs.signin'));
      session.tokens.expires_at = 0;
      localStorage.setItem('crumbs.signin', JSON.stringify(session));
    })()`);
    const from = requests.length;
    await page.reload();
    await page.waitForSelector('text=written for the signed-in reader');
    const refresh = requests
      .slice(from)
      .find(
        (r) => r.url() === `${issuer}/token` && (r.postData() ?? '').includes('grant_type=refresh_token'),
      );
    expect(refresh).toBeDefined();
    const after = JSON.parse(
      (await page.evaluate<string | null>("localStorage.getItem('crumbs.signin')")) ?? '{}',
    );
    expect(after.tokens.expires_at).toBeGreaterThan(Date.now());
    // The issuer rotates a public client's refresh token on use; the page keeps the new one.
    expect(after.tokens.refresh_token).not.toBe(JSON.parse(before ?? '{}').tokens.refresh_token);
  });

  it('is refused a workspace its token does not grant', async () => {
    await page.fill('input[name=workspace]', 'sign-in-a');
    await page.click('button:has-text("Switch")');
    await page.goto(`${api}/ui/#/definitions`);
    await page.waitForSelector('text=you may not use workspace sign-in-a');
    // The browser logs each refused request; those are the point here, and nothing else may be logged.
    expect(problems.filter((p) => !p.includes('status of 403 (Forbidden)'))).toEqual([]);
    // Back to the workspace it grants: the refused workspace's polls (the approvals badge) would go on logging 403s.
    await page.fill('input[name=workspace]', ws);
    await page.click('button:has-text("Switch")');
    await page.click('[data-nav=live]');
    await page.waitForSelector('text=written for the signed-in reader');
    problems.length = 0;
  });

  it('logs out: the refresh token is revoked, the issuer’s session ended, and the sign-in page is back', async () => {
    const from = requests.length;
    await page.click('button:has-text("Log out")');
    await page.waitForURL((url) => url.href.startsWith(`${issuer}/session/end`));
    expect(requests.slice(from).some((r) => r.url() === `${issuer}/token/revocation`)).toBe(true);
    await page.click('button:has-text("Yes, sign me out")');
    await page.waitForURL((url) => url.href.startsWith(`${api}/ui/`));
    await page.waitForSelector('[data-sign-in]');
    expect(await page.evaluate<string | null>("localStorage.getItem('crumbs.signin')")).toBeNull();
    expect(problems).toEqual([]);
  });
});
