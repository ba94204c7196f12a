/**
 * Sign-in, as team-b would attack it. The stack plays one with its own user pool (a local OpenID Connect issuer,
 * workspaces in `cognito:groups`, one client): team-b holds real tokens of that issuer for its own workspace, in
 * both Cognito shapes, and tries to reach team-a with them, with tokens it got for another client of the same
 * issuer, and with tokens it forged — `alg: none`, HS256 keyed with the issuer's public key, its own RSA key under
 * the issuer's key id, a doctored payload under a real signature, an expired or not-yet-valid one. Each is refused
 * at the API and at the delta channels, and team-a's data is unchanged.
 */
import { createHmac, createPublicKey, generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { subscribeToRequest } from '#shared/core/streaming/subscriber.ts';
import { OIDC_CLIENT_ID, OIDC_KEY_ID, signWith } from '../support/oidc-issuer.ts';
import { adversary, client, teamA, workspaceItems } from './support.ts';

const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
const now = () => Math.floor(Date.now() / 1000);

function claims(shape: 'id' | 'access', groups: readonly string[], extra: Record<string, unknown> = {}) {
  const { oidc } = adversary();
  return {
    iss: oidc.issuer,
    sub: 'team-b-person',
    iat: now(),
    exp: now() + 300,
    token_use: shape,
    ...(shape === 'id' ? { aud: OIDC_CLIENT_ID } : { client_id: OIDC_CLIENT_ID }),
    'cognito:groups': [...groups],
    ...extra,
  };
}

/** A token the issuer signed (team-b's own, or one it got for another client of the issuer). */
const issued = (body: Record<string, unknown>) => signWith(adversary().oidc.privateJwk, body);

async function subscribe(token: string, workspace: string) {
  const { api } = adversary();
  const health = (await (await fetch(`${api}/health`)).json()) as {
    local: { events: string; eventsRealtime: string };
  };
  return subscribeToRequest({
    realtimeUrl: health.local.eventsRealtime,
    httpHost: new URL(health.local.events).host,
    token,
    workspace,
    requestId: `attack-${Date.now()}`,
    webSocket: WebSocket,
    onEvent: () => undefined,
    timeoutMs: 5000,
  });
}

describe.each(['id', 'access'] as const)('team-b with a %s token of the stack’s issuer', (shape) => {
  const { teamA: a, teamB: b } = adversary();

  it('works in its own workspace and gets 403 in team-a’s, at the API and the channels', async () => {
    const own = issued(claims(shape, [b.workspace, 'Admins!']));
    expect((await client(b.workspace, own).call('GET', '/definitions')).status).toBe(200);
    (await subscribe(own, b.workspace)).close();
    const before = await workspaceItems(a.workspace);
    const attack = await client(a.workspace, own).call('POST', '/breadcrumbs', {
      schema_name: 'note.v1',
      context: { stolen: true },
    });
    expect(attack.status).toBe(403);
    await expect(subscribe(own, a.workspace)).rejects.toThrow(/Unauthorized/);
    expect(await workspaceItems(a.workspace)).toEqual(before);
  });

  it('cannot use a token the issuer gave it for another client, in either shape', async () => {
    const otherClient =
      shape === 'id'
        ? claims(shape, [a.workspace], { aud: 'another-app' })
        : claims(shape, [a.workspace], { client_id: 'another-app' });
    const audOverridesClientId = claims('access', [a.workspace], { aud: 'another-app' });
    for (const token of [issued(otherClient), issued(audOverridesClientId)]) {
      expect((await client(a.workspace, token).call('GET', '/definitions')).status).toBe(401);
      await expect(subscribe(token, a.workspace)).rejects.toThrow();
    }
  });

  it('cannot forge one: alg none, HS256 keyed with the public key, its own key under the issuer’s kid, a doctored payload', async () => {
    const { oidc } = adversary();
    const body = claims(shape, [a.workspace]);
    const none = `${b64({ alg: 'none', typ: 'JWT' })}.${b64(body)}.`;
    const publicPem = createPublicKey({ key: oidc.privateJwk, format: 'jwk' }).export({
      type: 'spki',
      format: 'pem',
    });
    const hsInput = `${b64({ alg: 'HS256', typ: 'JWT', kid: OIDC_KEY_ID })}.${b64(body)}`;
    const hs256 = `${hsInput}.${createHmac('sha256', publicPem).update(hsInput).digest('base64url')}`;
    const ownKey = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' });
    const ownSigned = signWith(ownKey, body);
    const real = issued(claims(shape, [adversary().teamB.workspace])).split('.');
    const doctored = `${real[0]}.${b64(body)}.${real[2]}`;
    const before = await workspaceItems(a.workspace);
    for (const token of [none, hs256, ownSigned, doctored]) {
      const answer = await client(a.workspace, token).call('POST', '/breadcrumbs', {
        schema_name: 'note.v1',
        context: { forged: true },
      });
      expect(answer.status).toBe(401);
      await expect(subscribe(token, a.workspace)).rejects.toThrow();
    }
    expect(await workspaceItems(a.workspace)).toEqual(before);
  });

  it('cannot use an expired token, one not yet valid, or one of another issuer', async () => {
    for (const extra of [{ exp: now() - 5 }, { nbf: now() + 600 }, { iss: 'http://127.0.0.1:9/elsewhere' }]) {
      const token = issued(claims(shape, [a.workspace], extra));
      expect((await client(a.workspace, token).call('GET', '/definitions')).status).toBe(401);
    }
    // team-a's own token still works: nothing team-b did touched it.
    expect((await teamA().call('GET', '/definitions')).status).toBe(200);
  });
});
