/**
 * The sign-in client the CLI and the dashboard share (PKCE, the authorization URL, the token requests, which token
 * the API is sent) and the CLI's session store (mode 0600, written whole, refreshed when about to expire), against a
 * scripted token endpoint on loopback. `crumbs login` end to end against a real issuer is
 * `test/integration/sign-in.test.ts`.
 */
import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { CredentialStore, type Session, storedToken } from '#cli/credentials.ts';
import { main } from '#cli/main.ts';
import {
  type AvailableSignIn,
  authorizationUrl,
  bearerToken,
  exchangeCode,
  logoutUrl,
  pkcePair,
  refreshTokens,
  SignInError,
  s256Challenge,
  tokenClaims,
} from '#shared/client/sign-in.ts';
import { ENV } from '#shared/topology.ts';
import { type RecordedRequest, startHttpServer, type TestHttpServer } from '../../support/http-server.ts';

const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
/** An unsigned JWT-shaped token (the client never verifies; the API does). */
const jwt = (claims: Record<string, unknown>) => `${b64({ alg: 'RS256' })}.${b64(claims)}.c2ln`;

let idp: TestHttpServer;
let reply: (req: RecordedRequest) => { status: number; body: unknown } = () => ({ status: 500, body: {} });
let config: AvailableSignIn;

beforeAll(async () => {
  idp = await startHttpServer((req, res) => {
    const { status, body } = reply(req);
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  });
  config = {
    available: true,
    issuer: 'https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_AbC',
    client_id: 'cli-client',
    authorization_endpoint: `${idp.url}/oauth2/authorize`,
    token_endpoint: `${idp.url}/oauth2/token`,
    revocation_endpoint: `${idp.url}/oauth2/revoke`,
    logout_endpoint: `${idp.url}/logout`,
    logout_style: 'cognito',
    scopes: ['openid', 'email'],
    authorization_params: {},
    cli_redirect_uri: 'http://localhost:4790/callback',
    workspaces_claim: 'cognito:groups',
  };
});
afterAll(() => idp.close());
beforeEach(() => {
  idp.requests.length = 0;
});

describe('PKCE and the authorization request', () => {
  it('computes S256 challenges as RFC 7636 Appendix B does, and fresh verifiers each time', async () => {
    expect(await s256Challenge('dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk')).toBe(
      'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
    );
    const [a, b] = [await pkcePair(), await pkcePair()];
    expect(a.verifier).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(a.verifier).not.toBe(b.verifier);
    expect(a.challenge).toBe(await s256Challenge(a.verifier));
  });

  it('asks for a code with the client, the redirect, the scopes, state and the S256 challenge', () => {
    const url = new URL(
      authorizationUrl(
        { ...config, authorization_params: { prompt: 'consent' } },
        { redirectUri: config.cli_redirect_uri, state: 's1', challenge: 'c1' },
      ),
    );
    expect(Object.fromEntries(url.searchParams)).toEqual({
      response_type: 'code',
      client_id: 'cli-client',
      redirect_uri: 'http://localhost:4790/callback',
      scope: 'openid email',
      state: 's1',
      code_challenge: 'c1',
      code_challenge_method: 'S256',
      prompt: 'consent',
    });
  });

  it('signs out at Cognito with logout_uri, at an OpenID Connect issuer with post_logout_redirect_uri', () => {
    expect(logoutUrl(config, 'https://api/ui/')).toBe(
      `${idp.url}/logout?client_id=cli-client&logout_uri=https%3A%2F%2Fapi%2Fui%2F`,
    );
    expect(logoutUrl({ ...config, logout_style: 'oidc' }, 'https://api/ui/', 'id.tok')).toContain(
      'post_logout_redirect_uri=https%3A%2F%2Fapi%2Fui%2F&id_token_hint=id.tok',
    );
  });
});

describe('the token requests', () => {
  it('exchanges the code with the verifier (no secret) and keeps the expiry of the token the API is sent', async () => {
    const access = jwt({ client_id: 'cli-client', exp: 2_000_000_000 });
    reply = () => ({
      status: 200,
      body: {
        access_token: access,
        id_token: jwt({ aud: 'cli-client' }),
        refresh_token: 'r1',
        expires_in: 900,
      },
    });
    const tokens = await exchangeCode(config, {
      code: 'c',
      verifier: 'v',
      redirectUri: config.cli_redirect_uri,
    });
    expect(Object.fromEntries(new URLSearchParams(idp.requests[0]?.body))).toEqual({
      grant_type: 'authorization_code',
      code: 'c',
      redirect_uri: 'http://localhost:4790/callback',
      code_verifier: 'v',
      client_id: 'cli-client',
    });
    expect(tokens).toMatchObject({
      access_token: access,
      refresh_token: 'r1',
      expires_at: 2_000_000_000_000,
    });
    // Cognito's access token is a JWT (client_id, no aud): it is what the API gets.
    expect(bearerToken(tokens)).toBe(access);
  });

  it('sends the ID token when the access token is opaque (an OpenID Connect issuer’s)', () => {
    const id = jwt({ aud: 'cli-client', exp: 1 });
    expect(bearerToken({ access_token: 'opaque-Xy9', id_token: id, expires_at: 0 })).toBe(id);
    expect(tokenClaims('opaque-Xy9')).toBeUndefined();
  });

  it('keeps the refresh token when the issuer does not rotate it, and reads invalid_grant as signed out', async () => {
    reply = () => ({ status: 200, body: { access_token: jwt({ exp: 2_000_000_000 }), expires_in: 900 } });
    expect((await refreshTokens(config, 'r1')).refresh_token).toBe('r1');
    reply = () => ({
      status: 400,
      body: { error: 'invalid_grant', error_description: 'Refresh Token has been revoked' },
    });
    const error = await refreshTokens(config, 'r1').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SignInError);
    expect((error as SignInError).signedOut).toBe(true);
    expect((error as Error).message).toContain('invalid_grant: Refresh Token has been revoked');
  });
});

describe('the session store', () => {
  const session = (expiresAt: number, refresh = 'r1'): Session => ({
    sign_in: config,
    tokens: {
      access_token: jwt({ exp: Math.floor(expiresAt / 1000), n: 1 }),
      refresh_token: refresh,
      expires_at: expiresAt,
    },
    user: 'ann@example.com',
    signed_in_at: new Date(0).toISOString(),
  });

  it('writes credentials.json 0600 in a 0700 directory, one session per endpoint, and forgets one', async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'crumbs-cfg-')), 'nested');
    const store = new CredentialStore(dir);
    await store.put('https://a.example/', session(Date.now() + 3_600_000));
    await store.put('https://b.example', session(Date.now() + 3_600_000));
    expect(statSync(store.path).mode & 0o777).toBe(0o600);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    expect(Object.keys(JSON.parse(readFileSync(store.path, 'utf8')).sessions)).toEqual([
      'https://a.example',
      'https://b.example',
    ]);
    expect(await store.delete('https://a.example')).toBe(true);
    expect(await store.get('https://a.example')).toBeUndefined();
    expect(await store.get('https://b.example')).toBeDefined();
  });

  it('sends a fresh token as it is, refreshes one about to expire once, and writes the new tokens back', async () => {
    const store = new CredentialStore(mkdtempSync(join(tmpdir(), 'crumbs-cfg-')));
    let now = 1_000_000;
    await store.put('https://api.example', session(now + 30_000));
    const fresh = jwt({ exp: 5000, n: 2 });
    reply = () => ({ status: 200, body: { access_token: fresh, refresh_token: 'r2', expires_in: 900 } });
    const token = storedToken(store, 'https://api.example', undefined, () => now);
    expect(await token()).toBe(fresh);
    expect(idp.requests).toHaveLength(1);
    expect(await token()).toBe(fresh);
    expect(idp.requests).toHaveLength(1);
    expect((await store.get('https://api.example'))?.tokens).toMatchObject({
      refresh_token: 'r2',
      expires_at: 5_000_000,
    });
    now = 4_950_000;
    reply = () => ({ status: 400, body: { error: 'invalid_grant' } });
    await expect(token()).rejects.toThrow(
      /you are signed out of https:\/\/api\.example .*run `crumbs login`/,
    );
  });

  it('uses what another crumbs process refreshed meanwhile instead of refreshing again', async () => {
    const store = new CredentialStore(mkdtempSync(join(tmpdir(), 'crumbs-cfg-')));
    let now = 1_000_000;
    await store.put('https://api.example', session(now + 120_000));
    const token = storedToken(store, 'https://api.example', undefined, () => now);
    await token();
    // Another process refreshed and wrote its tokens; this one's copy is now about to expire.
    const theirs = session(now + 3_600_000, 'r-theirs');
    await store.put('https://api.example', theirs);
    now += 90_000;
    expect(await token()).toBe(theirs.tokens.access_token);
    expect(idp.requests).toHaveLength(0);
  });

  it('refuses a credentials file that is not one, saying how to recover, and puts a readable one back to 0600', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'crumbs-cfg-'));
    const store = new CredentialStore(dir);
    writeFileSync(store.path, 'junk');
    await expect(store.get('x')).rejects.toThrow(/is not JSON: remove it and run `crumbs login` again/);
    writeFileSync(store.path, JSON.stringify({ version: 1, sessions: {} }), { mode: 0o644 });
    await store.get('x');
    expect(statSync(store.path).mode & 0o777).toBe(0o600);
  });
});

describe('crumbs login without sign-in at the endpoint', () => {
  it('says what the endpoint answered instead (crumbs dev without --oidc-issuer)', async () => {
    const dev = await startHttpServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ available: false, detail: 'this endpoint signs nobody in: use the token' }));
    });
    let stderr = '';
    const code = await main(['login', '--endpoint', dev.url, '--no-browser'], {
      stdout: () => undefined,
      stderr: (s) => {
        stderr += s;
      },
      env: { [ENV.configDir]: mkdtempSync(join(tmpdir(), 'crumbs-cfg-')) },
    });
    await dev.close();
    expect(code).toBe(1);
    expect(stderr).toContain(`${dev.url} has no sign-in: this endpoint signs nobody in: use the token`);
  });
});
