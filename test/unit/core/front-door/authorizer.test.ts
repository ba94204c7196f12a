/**
 * The front door's token check against a loopback issuer (OIDC discovery and a JWKS of keys generated here): both
 * Cognito token shapes pass — ID tokens by `aud`, access tokens by `client_id` — and every other token is refused
 * with a reason (wrong audience or client, expired, not yet valid, another issuer, another key, no `exp`, no `sub`,
 * `alg: none`, not a JWT); a rotated key is fetched when a token names it; an issuer that cannot be read is an error,
 * not a refusal. And the other end: the handler turns the authorizer's context back into the caller, and a cached
 * Allow whose token has expired since lets nobody in.
 */
import { generateKeyPairSync } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toHttpRequest } from '#shared/core/api/http.ts';
import {
  AUTHORIZER,
  AUTHORIZER_EXP_KEY,
  allowResponse,
  denyResponse,
  tokenCheck,
} from '#shared/core/front-door/authorizer.ts';
import { type OidcIssuer, startOidcIssuer } from '../../../support/oidc-issuer.ts';
import { proxyEvent } from '../../../support/proxy-event.ts';

const CLIENT = '3n4b5urk1ft4fl3mg5e62d9ado';
const OTHER_CLIENT = '7q1v0d7d8h6e4u0p5bq3l2fh6o';
const CLAIM = 'cognito:groups';
const METHOD_ARN = 'arn:aws:execute-api:eu-west-1:123456789012:abc123/prod/POST/v1/workspaces/team-a/mcp';

let issuer: OidcIssuer;
let check: ReturnType<typeof tokenCheck>;
beforeAll(async () => {
  issuer = await startOidcIssuer();
  check = tokenCheck({ issuer: issuer.issuer, audiences: ['crumbs-api', CLIENT], workspacesClaim: CLAIM });
});
afterAll(() => issuer.stop());

const bearer = (token: string) => `Bearer ${token}`;

describe('the front door token check', () => {
  it('accepts a Cognito ID token by its aud, and passes sub, the workspaces claim and exp on', async () => {
    const token = issuer.idToken(CLIENT, { [CLAIM]: ['team-a', 'team-b'] });
    const verdict = await check(bearer(token));
    expect(verdict).toEqual({
      ok: true,
      principalId: 'ann',
      context: { sub: 'ann', workspaces: '["team-a","team-b"]', exp: expect.stringMatching(/^\d+$/) },
    });
  });

  it('accepts a Cognito access token (client_id, no aud) by its client_id', async () => {
    const token = issuer.accessToken(CLIENT, { [CLAIM]: ['team-a'] });
    const verdict = await check(bearer(token));
    expect(verdict).toMatchObject({ ok: true, context: { sub: 'ann', workspaces: '["team-a"]' } });
  });

  it('accepts an aud list naming one of the audiences, and forwards a string claim as it came', async () => {
    const token = issuer.sign({ aud: ['somebody-else', 'crumbs-api'], [CLAIM]: 'team-a team-b' });
    expect(await check(bearer(token))).toMatchObject({ ok: true, context: { workspaces: 'team-a team-b' } });
  });

  const refused: [string, () => string, RegExp][] = [
    ['an ID token of another app client', () => issuer.idToken(OTHER_CLIENT), /aud/],
    ['an access token of another app client', () => issuer.accessToken(OTHER_CLIENT), /client_id/],
    ['a token with neither aud nor client_id', () => issuer.sign({}), /client_id/],
    [
      'a token whose aud is wrong though its client_id is right (aud decides when it is there)',
      () => issuer.sign({ aud: OTHER_CLIENT, client_id: CLIENT }),
      /aud/,
    ],
    [
      'an expired token',
      () => issuer.sign({ aud: CLIENT, exp: Math.floor(Date.now() / 1000) - 10 }),
      /expired/,
    ],
    [
      'a token not valid yet',
      () => issuer.sign({ aud: CLIENT, nbf: Math.floor(Date.now() / 1000) + 600 }),
      /not valid|before/i,
    ],
    [
      'a token of another issuer',
      () => issuer.sign({ aud: CLIENT, iss: 'https://evil.example/pool' }),
      /iss/i,
    ],
    [
      'a token signed with a key the issuer does not have, under its kid',
      () =>
        issuer.sign({ aud: CLIENT }, { key: generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey }),
      /signature/i,
    ],
    ['a token without exp', () => issuer.sign({ aud: CLIENT, exp: undefined }), /exp/],
    ['a token without sub', () => issuer.sign({ aud: CLIENT, sub: undefined }), /sub/],
    [
      'a token whose header says alg none',
      () => {
        const [, payload] = issuer.sign({ aud: CLIENT }).split('.');
        return `${Buffer.from('{"alg":"none","typ":"JWT"}').toString('base64url')}.${payload}.`;
      },
      /alg|signature|kid/i,
    ],
    ['something that is not a JWT', () => 'not-a-jwt', /./],
  ];
  it.each(refused)('refuses %s, saying why', async (_what, token, why) => {
    const verdict = await check(bearer(token()));
    expect(verdict.ok).toBe(false);
    expect(verdict.ok === false && verdict.reason).toMatch(why);
  });

  it('refuses a header that is not a bearer token', async () => {
    expect(await check(`Basic ${Buffer.from('a:b').toString('base64')}`)).toEqual({
      ok: false,
      reason: 'no bearer token',
    });
    expect(await check('')).toMatchObject({ ok: false });
  });

  it("fetches the issuer's JWKS again when a token names a key it has not seen (key rotation)", async () => {
    const own = await startOidcIssuer();
    try {
      const ownCheck = tokenCheck({ issuer: own.issuer, audiences: [CLIENT], workspacesClaim: CLAIM });
      expect((await ownCheck(bearer(own.idToken(CLIENT)))).ok).toBe(true);
      own.rotate();
      expect((await ownCheck(bearer(own.idToken(CLIENT)))).ok).toBe(true);
      expect(own.requests.filter((r) => r.endsWith('/jwks.json'))).toHaveLength(2);
      expect(own.requests.filter((r) => r.endsWith('/openid-configuration'))).toHaveLength(1);
    } finally {
      await own.stop();
    }
  });

  it('is an error, not a refusal, when the issuer cannot be read (API Gateway answers 500 and caches nothing)', async () => {
    const gone = tokenCheck({
      issuer: 'http://127.0.0.1:9/pool',
      audiences: [CLIENT],
      workspacesClaim: CLAIM,
    });
    await expect(gone(bearer(issuer.idToken(CLIENT)))).rejects.toThrow();
    const elsewhere = await startOidcIssuer({ discoveryIssuer: 'https://evil.example/pool' });
    try {
      const spoofed = tokenCheck({ issuer: elsewhere.issuer, audiences: [CLIENT], workspacesClaim: CLAIM });
      await expect(spoofed(bearer(elsewhere.idToken(CLIENT)))).rejects.toThrow(/another issuer/);
    } finally {
      await elsewhere.stop();
    }
  });

  it("reads an issuer's documents over https only, but for a loopback issuer's own", async () => {
    const plain = tokenCheck({
      issuer: 'http://issuer.example/pool',
      audiences: [CLIENT],
      workspacesClaim: CLAIM,
    });
    await expect(plain(bearer(issuer.idToken(CLIENT)))).rejects.toThrow(/https only/);
  });

  it('allows the whole stage, so the cached answer serves the token on every route', async () => {
    const verdict = await check(bearer(issuer.idToken(CLIENT)));
    if (!verdict.ok) throw new Error(verdict.reason);
    const response = allowResponse(METHOD_ARN, verdict);
    expect(response.policyDocument.Statement).toEqual([
      {
        Action: 'execute-api:Invoke',
        Effect: 'Allow',
        Resource: 'arn:aws:execute-api:eu-west-1:123456789012:abc123/prod/*',
      },
    ]);
    expect(response.principalId).toBe('ann');
    // A refusal is a Deny on the same stage (cached too; no function error).
    expect(denyResponse(METHOD_ARN).policyDocument.Statement).toEqual([
      {
        Action: 'execute-api:Invoke',
        Effect: 'Deny',
        Resource: 'arn:aws:execute-api:eu-west-1:123456789012:abc123/prod/*',
      },
    ]);
    expect(new RegExp(AUTHORIZER.validationRegex).test(bearer(issuer.idToken(CLIENT)))).toBe(true);
    expect(new RegExp(AUTHORIZER.validationRegex).test('Bearer not a jwt')).toBe(false);
  });
});

describe("the authorizer's context at the handler", () => {
  const request = (authorizer: Record<string, string> | undefined, now = Date.now()) =>
    toHttpRequest(
      proxyEvent({
        method: 'GET',
        path: '/v1/workspaces/team-a/breadcrumbs',
        ...(authorizer ? { authorizer } : {}),
      }),
      CLAIM,
      undefined,
      () => now,
    );

  it('is the caller: its sub and the workspaces its claim grants', async () => {
    const verdict = await check(bearer(issuer.accessToken(CLIENT, { [CLAIM]: ['team-a', 'admins'] })));
    if (!verdict.ok) throw new Error(verdict.reason);
    expect(request(allowResponse(METHOD_ARN, verdict).context).caller).toMatchObject({
      principal: 'user:ann',
    });
  });

  it('lets nobody in once the token has expired, though API Gateway still holds its Allow', async () => {
    const verdict = await check(bearer(issuer.idToken(CLIENT, { [CLAIM]: ['team-a'] })));
    if (!verdict.ok) throw new Error(verdict.reason);
    const context = allowResponse(METHOD_ARN, verdict).context;
    const exp = Number(context[AUTHORIZER_EXP_KEY]) * 1000;
    expect(request(context, exp - 1000).caller).toBeDefined();
    expect(request(context, exp).caller).toBeUndefined();
    expect(request(context, exp + AUTHORIZER.ttlSeconds * 1000).caller).toBeUndefined();
  });

  it('is nobody without a context (a public route) or with one that is not the authorizer’s', () => {
    expect(request(undefined).caller).toBeUndefined();
    expect(request({ principalId: 'x' }).caller).toBeUndefined();
  });
});
