/**
 * The sign-in settings the dashboard and `crumbs login` read (`/ui/sign-in.json`): the stack's own user pool's
 * endpoints as the CDK app gives them, an issuer's discovery document read over loopback, and every way there is no
 * sign-in, each saying what to do instead.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SIGN_IN_PATH, signInSettings } from '#shared/core/api/sign-in.ts';
import { staticSite } from '#shared/core/api/static-site.ts';
import { ENV } from '#shared/topology.ts';
import { startHttpServer, type TestHttpServer } from '../../../support/http-server.ts';

const COGNITO_ISSUER = 'https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_AbCdEf';
const DOMAIN = 'https://crumbs-prod-0f8fad5b.auth.eu-west-1.amazoncognito.com';

let issuer: TestHttpServer;
/** What the loopback issuer's discovery document says (a test changes it). */
let discovery: Record<string, unknown> | string = {};

beforeAll(async () => {
  issuer = await startHttpServer((req, res) => {
    if (req.path !== '/.well-known/openid-configuration') {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(typeof discovery === 'string' ? discovery : JSON.stringify(discovery));
  });
});
afterAll(() => issuer.close());

const oidcDocument = () => ({
  issuer: issuer.url,
  authorization_endpoint: `${issuer.url}/auth`,
  token_endpoint: `${issuer.url}/token`,
  revocation_endpoint: `${issuer.url}/token/revocation`,
  end_session_endpoint: `${issuer.url}/session/end`,
  scopes_supported: ['openid', 'offline_access', 'profile', 'email'],
});

describe('signInSettings', () => {
  it('with the stack’s own pool: the managed login endpoints, Cognito’s logout, the pool’s groups, no discovery', async () => {
    const config = await signInSettings({
      [ENV.jwtIssuer]: COGNITO_ISSUER,
      [ENV.signInClientId]: '3n4b5urk1ft4fl3mg5e62d9ado',
      [ENV.signInEndpoints]: JSON.stringify({
        authorization_endpoint: `${DOMAIN}/oauth2/authorize`,
        token_endpoint: `${DOMAIN}/oauth2/token`,
      }),
      [ENV.workspacesClaim]: 'cognito:groups',
    })();
    expect(config).toEqual({
      available: true,
      issuer: COGNITO_ISSUER,
      client_id: '3n4b5urk1ft4fl3mg5e62d9ado',
      authorization_endpoint: `${DOMAIN}/oauth2/authorize`,
      token_endpoint: `${DOMAIN}/oauth2/token`,
      revocation_endpoint: `${DOMAIN}/oauth2/revoke`,
      logout_endpoint: `${DOMAIN}/logout`,
      logout_style: 'cognito',
      scopes: ['openid', 'email', 'profile'],
      authorization_params: {},
      cli_redirect_uri: 'http://localhost:4790/callback',
      workspaces_claim: 'cognito:groups',
    });
  });

  it('with an OpenID Connect issuer: its discovery document, offline_access (with consent) for a refresh token', async () => {
    discovery = oidcDocument();
    const config = await signInSettings({
      [ENV.jwtIssuer]: issuer.url,
      [ENV.signInClientId]: 'crumbs-cli',
    })();
    expect(config).toMatchObject({
      available: true,
      authorization_endpoint: `${issuer.url}/auth`,
      token_endpoint: `${issuer.url}/token`,
      revocation_endpoint: `${issuer.url}/token/revocation`,
      logout_endpoint: `${issuer.url}/session/end`,
      logout_style: 'oidc',
      scopes: ['openid', 'email', 'profile', 'offline_access'],
      authorization_params: { prompt: 'consent' },
      workspaces_claim: 'crumbs:workspaces',
    });
  });

  it('reads the discovery document once, and after a failure tries again only 30 s later', async () => {
    discovery = 'not json';
    let now = 0;
    const settings = signInSettings(
      { [ENV.jwtIssuer]: issuer.url, [ENV.signInClientId]: 'crumbs-cli' },
      undefined,
      () => now,
    );
    const before = issuer.requests.length;
    expect(await settings()).toEqual({
      available: false,
      detail: `the issuer's discovery document ${issuer.url}/.well-known/openid-configuration is not JSON`,
    });
    discovery = oidcDocument();
    now = 29_000;
    expect((await settings()).available).toBe(false);
    expect(issuer.requests.length).toBe(before + 1);
    now = 31_000;
    expect((await settings()).available).toBe(true);
    now = 1_000_000;
    expect((await settings()).available).toBe(true);
    expect(issuer.requests.length).toBe(before + 2);
  });

  it('refuses a discovery document that names another issuer (OpenID Connect Discovery §4.3)', async () => {
    discovery = { ...oidcDocument(), issuer: 'https://evil.example' };
    const config = await signInSettings({ [ENV.jwtIssuer]: issuer.url, [ENV.signInClientId]: 'c' })();
    expect(config).toEqual({
      available: false,
      detail: `the discovery document ${issuer.url}/.well-known/openid-configuration names the issuer https://evil.example, not ${issuer.url}`,
    });
  });

  it('says what to do when there is no sign-in: crumbs dev’s token, or the client the stack does not name', async () => {
    const local = await signInSettings({})();
    expect(local).toMatchObject({ available: false });
    expect(JSON.stringify(local)).toContain('--oidc-issuer');
    const noClient = await signInSettings({ [ENV.jwtIssuer]: COGNITO_ISSUER })();
    expect(noClient).toMatchObject({ available: false });
    expect(JSON.stringify(noClient)).toContain('crumbs:signInClientId');
    const broken = await signInSettings({
      [ENV.jwtIssuer]: COGNITO_ISSUER,
      [ENV.signInClientId]: 'c',
      [ENV.signInEndpoints]: '{"authorization_endpoint":"javascript:alert(1)"}',
    })();
    expect(broken).toMatchObject({ available: false });
  });
});

describe('the dashboard’s sign-in.json', () => {
  it('answers the settings, and lets the page call the token endpoint’s origin and no other', async () => {
    discovery = oidcDocument();
    const config = await signInSettings({ [ENV.jwtIssuer]: issuer.url, [ENV.signInClientId]: 'c' })();
    const dir = mkdtempSync(join(tmpdir(), 'site-'));
    writeFileSync(join(dir, 'index.html'), '<!doctype html>');
    const site = staticSite(dir);
    const answer = site.serve('GET', SIGN_IN_PATH, config);
    expect(answer.statusCode).toBe(200);
    expect(JSON.parse(String(answer.body))).toEqual(config);
    expect(answer.headers['content-security-policy']).toContain(`connect-src 'self' ${issuer.url};`);
    const page = site.serve('GET', '/ui/');
    expect(page.headers['content-security-policy']).toContain("connect-src 'self';");
    expect(JSON.parse(String(site.serve('GET', SIGN_IN_PATH).body))).toMatchObject({ available: false });
  });
});
