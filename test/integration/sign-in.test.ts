/**
 * Sign-in against the local stack started as `crumbs dev --oidc-issuer` starts it, with a real OpenID Connect issuer
 * on loopback (`oidc-provider`, test/support/oidc-issuer.ts):
 *
 * - both Cognito token shapes — an ID token (`aud` = the client) and an access token (`client_id`, no `aud`) — work
 *   at the local API and the local events server, which check them as API Gateway's JWT authorizer and the AppSync
 *   onSubscribe handler do on AWS; another client's token, an expired one, a forged one and another issuer's are
 *   refused in either shape;
 * - `crumbs login` end to end: it opens the authorization URL (the injected browser signs in at the issuer's login
 *   form), takes the code on its loopback callback, exchanges it with its PKCE verifier, stores the tokens 0600; a
 *   later CLI call sends them and, once they are about to expire, refreshes them; `crumbs logout` revokes the
 *   refresh token.
 */
import { existsSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import WebSocket from 'ws';
import { main } from '#cli/main.ts';
import { type AvailableSignIn, refreshTokens, SignInError } from '#shared/client/sign-in.ts';
import { SIGN_IN_PATH } from '#shared/core/api/sign-in.ts';
import { subscribeToRequest } from '#shared/core/streaming/subscriber.ts';
import { ENV } from '#shared/topology.ts';
import { uniqueWorkspace } from '../support/local.ts';
import { OIDC_CLIENT_ID, signInAt, signWith } from '../support/oidc-issuer.ts';

const crumbs = inject('crumbs');
const { issuer, privateJwk } = inject('oidc');
const now = () => Math.floor(Date.now() / 1000);

/** A JWT of the stack's issuer, valid for 5 minutes, granting `workspaces`, in one of Cognito's two shapes. */
function token(shape: 'id' | 'access', workspaces: readonly string[], extra: Record<string, unknown> = {}) {
  return signWith(privateJwk, {
    iss: issuer,
    sub: `${shape}-user`,
    iat: now(),
    exp: now() + 300,
    token_use: shape,
    ...(shape === 'id' ? { aud: OIDC_CLIENT_ID } : { client_id: OIDC_CLIENT_ID, scope: 'openid' }),
    'crumbs:workspaces': [...workspaces],
    ...extra,
  });
}

async function post(bearer: string, workspace: string) {
  const res = await fetch(`${crumbs.api}/v1/workspaces/${workspace}/breadcrumbs`, {
    method: 'POST',
    headers: { authorization: `Bearer ${bearer}`, 'content-type': 'application/json' },
    body: JSON.stringify({ schema_name: 'note.v1', context: { n: 1 } }),
  });
  return { status: res.status, body: (await res.json()) as { created_by?: string; detail?: string } };
}

async function subscribe(bearer: string, workspace: string) {
  const health = (await (await fetch(`${crumbs.api}/health`)).json()) as {
    local: { events: string; eventsRealtime: string };
  };
  return subscribeToRequest({
    realtimeUrl: health.local.eventsRealtime,
    httpHost: new URL(health.local.events).host,
    token: bearer,
    workspace,
    requestId: `req-${Date.now()}`,
    webSocket: WebSocket,
    onEvent: () => undefined,
    timeoutMs: 5000,
  });
}

describe.each(['id', 'access'] as const)('a %s token of the issuer', (shape) => {
  const ws = uniqueWorkspace('shape');

  it('writes to the workspaces its claim grants, as its subject, and gets 403 elsewhere (local API)', async () => {
    const own = await post(token(shape, [ws]), ws);
    expect(own.status).toBe(201);
    expect(own.body.created_by).toBe(`user:${shape}-user`);
    expect((await post(token(shape, [ws]), uniqueWorkspace('other'))).status).toBe(403);
  });

  it('subscribes to its own workspace’s channels and no other (local events server)', async () => {
    const subscription = await subscribe(token(shape, [ws]), ws);
    subscription.close();
    await expect(subscribe(token(shape, [ws]), uniqueWorkspace('other'))).rejects.toThrow(/Unauthorized/);
  });

  it('is refused when issued to another client, expired, forged or from another issuer', async () => {
    const other =
      shape === 'id' ? { aud: 'another-client' } : { client_id: 'another-client', aud: undefined };
    const refused = [
      token(shape, [ws], other),
      token(shape, [ws], { exp: now() - 10 }),
      token(shape, [ws], { iss: 'http://127.0.0.1:1/other-issuer' }),
      `${token(shape, [ws]).split('.').slice(0, 2).join('.')}.${Buffer.from('forged').toString('base64url')}`,
    ];
    // API Gateway's rule: with an aud, client_id is not read.
    if (shape === 'access') refused.push(token(shape, [ws], { aud: 'another-client' }));
    for (const bearer of refused) {
      expect((await post(bearer, ws)).status).toBe(401);
      await expect(subscribe(bearer, ws)).rejects.toThrow();
    }
  });
});

describe('crumbs login against the local stack', () => {
  const configDir = mkdtempSync(join(tmpdir(), 'crumbs-login-'));
  const credentials = join(configDir, 'credentials.json');
  const env = { [ENV.configDir]: configDir };
  /** The CLI in-process, its browser played by a sign-in at the issuer's login form as `alice`. */
  async function cli(args: string[], forged: number[] = []) {
    let stdout = '';
    let stderr = '';
    let opened: string | undefined;
    const code = await main([...args, '--endpoint', crumbs.api], {
      stdout: (s) => {
        stdout += s;
      },
      stderr: (s) => {
        stderr += s;
      },
      env,
      openUrl: async (url) => {
        opened = url;
        // Another page sending a code of its own to the waiting callback (login CSRF): refused, and ignored.
        const forgery = await fetch('http://localhost:4790/callback?code=attackers-code&state=guessed');
        forged.push(forgery.status);
        const back = await signInAt(url, 'alice');
        await fetch(back);
      },
    });
    return { code, stdout, stderr, opened };
  }
  const stored = () =>
    JSON.parse(readFileSync(credentials, 'utf8')) as {
      sessions: Record<string, { tokens: { id_token: string; refresh_token: string; expires_at: number } }>;
    };
  const session = () => {
    const s = stored().sessions[crumbs.api];
    if (!s) throw new Error('no session');
    return s;
  };

  it('publishes the sign-in settings: the issuer, the client, the fixed loopback callback', async () => {
    const config = (await (await fetch(`${crumbs.api}${SIGN_IN_PATH}`)).json()) as AvailableSignIn;
    expect(config).toMatchObject({
      available: true,
      issuer,
      client_id: OIDC_CLIENT_ID,
      cli_redirect_uri: 'http://localhost:4790/callback',
      scopes: expect.arrayContaining(['openid', 'offline_access']),
    });
  });

  it('signs in through the browser with PKCE (a forged callback ignored) and keeps the tokens readable by the user only', async () => {
    const forged: number[] = [];
    const login = await cli(['login'], forged);
    expect(login.stderr).toContain(login.opened);
    expect(login.code, login.stderr).toBe(0);
    expect(forged).toEqual([400]);
    const opened = new URL(login.opened ?? '');
    expect(opened.searchParams.get('code_challenge_method')).toBe('S256');
    expect(opened.searchParams.get('redirect_uri')).toBe('http://localhost:4790/callback');
    expect(opened.searchParams.get('client_id')).toBe(OIDC_CLIENT_ID);
    expect(login.stdout).toContain(
      `Signed in to ${crumbs.api} as alice@example.test (workspaces: sign-in-a)`,
    );
    expect(statSync(credentials).mode & 0o777).toBe(0o600);
    expect(statSync(configDir).mode & 0o077).toBe(0);
    expect(session().tokens.refresh_token).toBeTruthy();
  });

  it('sends the session on a later call, with no --token', async () => {
    const put = await cli([
      'put',
      '-w',
      'sign-in-a',
      '--schema',
      'note.v1',
      '--context',
      '{"by":"cli"}',
      '--json',
    ]);
    expect(put.code, put.stderr).toBe(0);
    expect(JSON.parse(put.stdout)).toMatchObject({ workspace: 'sign-in-a', created_by: 'user:alice' });
    const elsewhere = await cli(['ls', '-w', 'sign-in-b', '--schema', 'note.v1']);
    expect(elsewhere.code).toBe(1);
    expect(elsewhere.stderr).toContain('Error 403');
  });

  it('refreshes the tokens when they are about to expire, and writes the new ones back', async () => {
    const before = session();
    const file = stored();
    file.sessions[crumbs.api] = { ...before, tokens: { ...before.tokens, expires_at: Date.now() - 1000 } };
    writeFileSync(credentials, JSON.stringify(file), { mode: 0o600 });
    const ls = await cli(['ls', '-w', 'sign-in-a', '--schema', 'note.v1', '--json']);
    expect(ls.code, ls.stderr).toBe(0);
    const after = session();
    // The issuer rotates a public client's refresh token on use: a new one shows the refresh happened, and is kept.
    // (The ID token may come back byte for byte the same: RS256 is deterministic and a refresh within the second of
    // the sign-in signs the same claims.)
    expect(after.tokens.refresh_token).not.toBe(before.tokens.refresh_token);
    expect(after.tokens.expires_at).toBeGreaterThan(Date.now());
    expect(statSync(credentials).mode & 0o777).toBe(0o600);
  });

  it('logs out: the refresh token is revoked at the issuer and the session forgotten', async () => {
    const last = session().tokens.refresh_token;
    const config = (await (await fetch(`${crumbs.api}${SIGN_IN_PATH}`)).json()) as AvailableSignIn;
    const logout = await cli(['logout']);
    expect(logout.code, logout.stderr).toBe(0);
    expect(logout.stdout).toContain(
      `Signed out of ${crumbs.api} (alice@example.test): the refresh token is revoked`,
    );
    expect(existsSync(credentials)).toBe(false);
    const refused = await refreshTokens(config, last).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(SignInError);
    expect((refused as SignInError).signedOut).toBe(true);
    const after = await cli(['ls', '-w', 'sign-in-a', '--schema', 'note.v1']);
    expect(after.code).toBe(1);
    expect(after.stderr).toContain('Sign in with `crumbs login`');
  });

  it('says to sign in again when the stored refresh token no longer works', async () => {
    expect((await cli(['login'])).code).toBe(0);
    const config = (await (await fetch(`${crumbs.api}${SIGN_IN_PATH}`)).json()) as AvailableSignIn;
    // Someone used (so rotated away) the stored refresh token: it is no good any more.
    await refreshTokens(config, session().tokens.refresh_token);
    const file = stored();
    const current = session();
    file.sessions[crumbs.api] = { ...current, tokens: { ...current.tokens, expires_at: 0 } };
    writeFileSync(credentials, JSON.stringify(file), { mode: 0o600 });
    const ls = await cli(['ls', '-w', 'sign-in-a', '--schema', 'note.v1']);
    expect(ls.code).toBe(1);
    expect(ls.stderr).toContain(`you are signed out of ${crumbs.api}`);
    expect(ls.stderr).toContain('run `crumbs login`');
  });
});
