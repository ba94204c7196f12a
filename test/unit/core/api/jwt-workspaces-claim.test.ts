/**
 * The workspaces claim of a JWT in every form real issuers send it — a JSON array, a JSON array's text, a space- or
 * comma-separated string, one name — read from a token signed here and passed on as API Gateway's JWT authorizer
 * passes claims to the api function (payload 2.0: every claim a string, a list claim rendered `"[a b]"`), then through
 * the API's routes on the in-memory store. A malformed claim is a 403 that says what is wrong with it, never a 5xx.
 */
import { createSign, createVerify, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createApi } from '#shared/core/api/api.ts';
import {
  callerFromClaims,
  type HttpEvent,
  MAX_CLAIMED_WORKSPACES,
  toHttpRequest,
} from '#shared/core/api/http.ts';
import { InMemoryBreadcrumbStore } from '../../../support/memory/breadcrumb-store.ts';

const CLAIM = 'crumbs:workspaces';
const ISSUER = 'https://issuer.example.test/';
const AUDIENCE = 'crumbs-api';
const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });

const b64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

/** An RS256 JWT as an identity provider issues it. */
function signToken(claims: Record<string, unknown>, key: KeyObject = privateKey): string {
  const now = Math.floor(Date.now() / 1000);
  const body = `${b64url({ alg: 'RS256', typ: 'JWT', kid: 'test' })}.${b64url({
    iss: ISSUER,
    aud: AUDIENCE,
    iat: now,
    exp: now + 300,
    sub: 'ann',
    ...claims,
  })}`;
  return `${body}.${createSign('RSA-SHA256').update(body).sign(key).toString('base64url')}`;
}

/**
 * What API Gateway's JWT authorizer does before the function runs: check signature, issuer, audience and expiry
 * (a failure is its 401, and the function never runs), then hand the claims on as strings — a list claim as
 * `"[a b]"`, an object in Go's map notation.
 */
function authorize(token: string): Record<string, string> | undefined {
  const [header, payload, signature] = token.split('.');
  if (header === undefined || payload === undefined || signature === undefined) return undefined;
  const valid = createVerify('RSA-SHA256')
    .update(`${header}.${payload}`)
    .verify(publicKey, Buffer.from(signature, 'base64url'));
  if (!valid) return undefined;
  const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<string, unknown>;
  if (claims.iss !== ISSUER || claims.aud !== AUDIENCE) return undefined;
  if (typeof claims.exp !== 'number' || claims.exp * 1000 < Date.now()) return undefined;
  const render = (value: unknown): string =>
    Array.isArray(value)
      ? `[${value.map(render).join(' ')}]`
      : value !== null && typeof value === 'object'
        ? `map[${Object.entries(value)
            .map(([k, v]) => `${k}:${render(v)}`)
            .join(' ')}]`
        : String(value);
  return Object.fromEntries(Object.entries(claims).map(([k, v]) => [k, render(v)]));
}

const store = new InMemoryBreadcrumbStore();
const api = createApi({ store });

/** POSTs a note into `workspace` with the token, through the authorizer and the API. */
async function post(token: string, workspace: string) {
  const claims = authorize(token);
  if (!claims) return { status: 401, detail: 'the authorizer refused the token' };
  const event = {
    version: '2.0',
    routeKey: '$default',
    rawPath: `/v1/workspaces/${workspace}/breadcrumbs`,
    rawQueryString: '',
    headers: { 'content-type': 'application/json' },
    requestContext: {
      http: { method: 'POST', path: `/v1/workspaces/${workspace}/breadcrumbs` },
      authorizer: { principalId: '', integrationLatency: 0, jwt: { claims, scopes: [] } },
    },
    body: JSON.stringify({ schema_name: 'note.v1', context: { n: 1 } }),
    isBase64Encoded: false,
  } as unknown as HttpEvent;
  const result = await api(toHttpRequest(event, CLAIM));
  const body = JSON.parse(result.body ?? '{}') as { detail?: string; created_by?: string };
  return { status: result.statusCode, detail: body.detail, createdBy: body.created_by };
}

describe('the JWT workspaces claim', () => {
  const forms: [string, unknown][] = [
    ['a JSON array', ['team-a', 'team-b']],
    ['a JSON array as text', '["team-a","team-b"]'],
    ['a space-separated string', 'team-a team-b'],
    ['a comma-separated string', 'team-a,team-b'],
    ['a comma-and-space-separated string', 'team-a, team-b'],
  ];
  it.each(forms)('grants exactly the workspaces named when the issuer sends %s', async (_form, value) => {
    const token = signToken({ [CLAIM]: value });
    for (const ws of ['team-a', 'team-b']) {
      const ok = await post(token, ws);
      expect(ok.status, ws).toBe(201);
      expect(ok.createdBy).toBe('user:ann');
    }
    const other = await post(token, 'team-c');
    expect(other.status).toBe(403);
    expect(other.detail).toBe('you may not use workspace team-c');
  });

  it('grants one workspace from a single name, and every workspace from "*" in any form', async () => {
    const single = signToken({ [CLAIM]: 'team-a' });
    expect((await post(single, 'team-a')).status).toBe(201);
    expect((await post(single, 'team-b')).status).toBe(403);
    for (const all of ['*', ['*'], '["*"]']) {
      expect((await post(signToken({ [CLAIM]: all }), 'anything-at-all')).status).toBe(201);
    }
  });

  it('takes the list claim unrendered too (a caller that passes JSON claims on as they are)', () => {
    expect(callerFromClaims({ sub: 'ann', [CLAIM]: ['team-a', 'team-b'] }, CLAIM)).toEqual({
      principal: 'user:ann',
      workspaces: ['team-a', 'team-b'],
    });
  });

  const malformed: [string, unknown, string][] = [
    ['is missing', undefined, 'is missing'],
    ['is empty', '', 'names no workspace'],
    ['is an empty JSON array', [], 'names no workspace'],
    ['names something that is not a workspace', 'team-a team/../b', 'names "team/../b"'],
    ['is an object', { a: 'team-a' }, 'names "map[a:team-a'],
    ['lists an object', [{ a: 'team-a' }], 'names "map[a:team-a'],
    ['is broken JSON', '["team-a",', 'is neither a JSON array nor'],
    ['is a JSON object as text', '["team-a"] trailing "x"', 'is neither a JSON array nor'],
    [
      'names too many workspaces',
      Array.from({ length: MAX_CLAIMED_WORKSPACES + 1 }, (_, i) => `ws-${i}`),
      `(at most ${MAX_CLAIMED_WORKSPACES})`,
    ],
    ['names a workspace longer than 64 characters', 'a'.repeat(65), 'is not a workspace name'],
    ['is longer than any list of workspaces', 'a '.repeat(10_000), 'is longer than'],
  ];
  it.each(malformed)(
    'answers 403 naming the problem, never a 5xx, when the claim %s',
    async (_c, value, why) => {
      const token = signToken(value === undefined ? {} : { [CLAIM]: value });
      const res = await post(token, 'team-a');
      expect(res.status).toBe(403);
      expect(res.detail).toContain(`you may not use workspace team-a: the token's ${CLAIM} claim`);
      expect(res.detail).toContain(why);
      expect(res.detail?.length).toBeLessThan(300);
    },
  );

  it("reads a Cognito user pool's cognito:groups (as API Gateway renders it): each group that is a workspace", () => {
    const groups = 'cognito:groups';
    expect(callerFromClaims({ sub: 'ann', [groups]: '[team-a Admins-Only! team-b]' }, groups)).toEqual({
      principal: 'user:ann',
      workspaces: ['team-a', 'team-b'],
    });
    expect(callerFromClaims({ sub: 'ann', [groups]: ['*'] }, groups).workspaces).toBe('*');
    expect(callerFromClaims({ sub: 'ann', [groups]: '[Admins!]' }, groups)).toMatchObject({
      workspaces: [],
      claimProblem: "the token's cognito:groups claim names no group that is a workspace",
    });
    expect(callerFromClaims({ sub: 'ann' }, groups).claimProblem).toBe(
      "the token's cognito:groups claim is missing",
    );
    // The strict reading stays for a claim made for crumbs: one bad name voids it.
    expect(callerFromClaims({ sub: 'ann', [CLAIM]: '[team-a Admins!]' }, CLAIM).workspaces).toEqual([]);
  });

  it('writes nothing for a refused token, and a token the authorizer refuses never reaches the API', async () => {
    const before = (await store.list({ workspace: 'team-x', schema_name: 'note.v1', limit: 10 })).items
      .length;
    expect((await post(signToken({ [CLAIM]: 'team-y' }), 'team-x')).status).toBe(403);
    const forged = signToken(
      { [CLAIM]: 'team-x' },
      generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey,
    );
    expect((await post(forged, 'team-x')).status).toBe(401);
    expect((await store.list({ workspace: 'team-x', schema_name: 'note.v1', limit: 10 })).items).toHaveLength(
      before,
    );
  });
});
