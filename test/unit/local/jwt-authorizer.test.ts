/**
 * `crumbs dev --oidc-issuer`'s token check for the local events server (local/jwt-authorizer.ts) against the test
 * issuer on loopback (test/support/oidc-issuer.ts): it takes both Cognito token shapes of the client and refuses
 * what the front door's authorizer refuses, with the claims as AppSync gives them to a handler (as they are). The
 * same tokens through the front door's own check (`tokenCheck`) get the same verdicts, so the API and the channels
 * of `crumbs dev` agree on who may call.
 */
import { generateKeyPairSync } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createJwtAuthorizer, type JwtAuthorizer } from '#local/jwt-authorizer.ts';
import { tokenCheck } from '#shared/core/front-door/authorizer.ts';
import { type OidcIssuer, startOidcIssuer } from '../../support/oidc-issuer.ts';

const other = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
let issuer: OidcIssuer;
let authorizer: JwtAuthorizer;
let frontDoor: ReturnType<typeof tokenCheck>;
const now = () => Math.floor(Date.now() / 1000);

beforeAll(async () => {
  issuer = await startOidcIssuer();
  authorizer = await createJwtAuthorizer({ issuer: issuer.issuer, audiences: ['the-client'] });
  frontDoor = tokenCheck({
    issuer: issuer.issuer,
    audiences: ['the-client'],
    workspacesClaim: 'cognito:groups',
  });
});
afterAll(() => issuer.stop());

describe('the local JWT authorizer', () => {
  it('takes an ID token (aud) and an access token (client_id, no aud) of the client, as the front door does', async () => {
    const id = issuer.idToken('the-client', { 'cognito:groups': ['a', 'b'] });
    const access = issuer.accessToken('the-client', { 'cognito:groups': ['a'] });
    expect(authorizer.payloadOfSync(id)).toMatchObject({ aud: 'the-client', 'cognito:groups': ['a', 'b'] });
    expect(authorizer.payloadOfSync(access)).toMatchObject({
      client_id: 'the-client',
      'cognito:groups': ['a'],
    });
    expect(await frontDoor(`Bearer ${id}`)).toMatchObject({ ok: true, context: { workspaces: '["a","b"]' } });
    expect(await frontDoor(`Bearer ${access}`)).toMatchObject({ ok: true, context: { workspaces: '["a"]' } });
  });

  it('refuses another client, an aud that is not the client even with its client_id, expiry, forgery and other issuers', async () => {
    for (const token of [
      issuer.idToken('other-client'),
      issuer.accessToken('other-client'),
      issuer.sign({ aud: 'other-client', client_id: 'the-client' }),
      issuer.sign({}),
      issuer.sign({ aud: 'the-client', exp: now() - 5 }),
      issuer.sign({ aud: 'the-client' }, { key: other }),
      issuer.sign({ aud: 'the-client', iss: 'https://elsewhere.example' }),
      'not-a-jwt',
    ]) {
      expect(authorizer.payloadOfSync(token)).toBeUndefined();
      expect(await frontDoor(`Bearer ${token}`)).toMatchObject({ ok: false });
    }
  });

  it('fails to start, naming the document, when the issuer cannot be read', async () => {
    await expect(createJwtAuthorizer({ issuer: 'http://127.0.0.1:1', audiences: ['c'] })).rejects.toThrow(
      /cannot read the issuer's discovery document http:\/\/127\.0\.0\.1:1\/\.well-known\/openid-configuration/,
    );
  });
});
