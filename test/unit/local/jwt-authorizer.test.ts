/**
 * `crumbs dev --oidc-issuer`'s token check (local/jwt-authorizer.ts) against an issuer on loopback: what API
 * Gateway's JWT authorizer takes — both Cognito token shapes of the client — and what it refuses, and the claims as
 * the function receives them behind API Gateway (lists as `[a b]`) or AppSync (as they are).
 */
import { createSign, generateKeyPairSync } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createJwtAuthorizer, type JwtAuthorizer } from '#local/jwt-authorizer.ts';
import { startHttpServer, type TestHttpServer } from '../../support/http-server.ts';

const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const other = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
let issuerServer: TestHttpServer;
let issuer: string;
let authorizer: JwtAuthorizer;
const now = () => Math.floor(Date.now() / 1000);

function sign(claims: Record<string, unknown>, key = privateKey): string {
  const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
  const body = `${b64({ alg: 'RS256', typ: 'JWT', kid: 'k1' })}.${b64({ iss: issuer, iat: now(), exp: now() + 300, sub: 's', ...claims })}`;
  return `${body}.${createSign('RSA-SHA256').update(body).sign(key).toString('base64url')}`;
}

beforeAll(async () => {
  issuerServer = await startHttpServer((req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    if (req.path === '/.well-known/openid-configuration')
      res.end(JSON.stringify({ issuer, jwks_uri: `${issuer}/jwks` }));
    else
      res.end(
        JSON.stringify({
          keys: [{ ...publicKey.export({ format: 'jwk' }), kid: 'k1', alg: 'RS256', use: 'sig' }],
        }),
      );
  });
  issuer = issuerServer.url;
  authorizer = await createJwtAuthorizer({ issuer, audiences: ['the-client'] });
});
afterAll(() => issuerServer.close());

describe('the local JWT authorizer', () => {
  it('takes an ID token (aud) and an access token (client_id, no aud) of the client', async () => {
    const id = sign({ aud: 'the-client', token_use: 'id', 'cognito:groups': ['a', 'b'] });
    const access = sign({ client_id: 'the-client', token_use: 'access', 'cognito:groups': ['a'] });
    expect(await authorizer.claimsOf(id)).toMatchObject({ aud: 'the-client', 'cognito:groups': '[a b]' });
    expect(await authorizer.claimsOf(access)).toMatchObject({
      client_id: 'the-client',
      'cognito:groups': '[a]',
    });
    expect(authorizer.payloadOfSync(id)).toMatchObject({ 'cognito:groups': ['a', 'b'] });
    expect(authorizer.payloadOfSync(access)).toMatchObject({ client_id: 'the-client' });
  });

  it('refuses another client, an aud that is not the client even with its client_id, expiry, forgery and other issuers', async () => {
    for (const token of [
      sign({ aud: 'other-client' }),
      sign({ client_id: 'other-client' }),
      sign({ aud: 'other-client', client_id: 'the-client' }),
      sign({}),
      sign({ aud: 'the-client', exp: now() - 5 }),
      sign({ aud: 'the-client' }, other),
      sign({ aud: 'the-client', iss: 'https://elsewhere.example' }),
      'not-a-jwt',
    ]) {
      expect(await authorizer.claimsOf(token)).toBeUndefined();
      expect(authorizer.payloadOfSync(token)).toBeUndefined();
    }
  });

  it('fails to start, naming the document, when the issuer cannot be read', async () => {
    await expect(createJwtAuthorizer({ issuer: 'http://127.0.0.1:1', audiences: ['c'] })).rejects.toThrow(
      /cannot read the issuer's discovery document http:\/\/127\.0\.0\.1:1\/\.well-known\/openid-configuration/,
    );
  });
});
