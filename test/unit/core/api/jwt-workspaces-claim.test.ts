/**
 * The workspaces claim of a JWT in every form real issuers send it — a JSON array, a JSON array's text, a space- or
 * comma-separated string, one name — from a token signed by a loopback issuer, checked by the front door's
 * authorizer (`tokenCheck`, `allowResponse`), handed to the api function as API Gateway hands an authorizer's context
 * to a REST API integration (every value a string), then through the API's routes on the in-memory store. A
 * malformed claim is a 403 that says what is wrong with it, never a 5xx.
 */
import { generateKeyPairSync } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApi } from '#shared/core/api/api.ts';
import { callerFromClaims, MAX_CLAIMED_WORKSPACES, toHttpRequest } from '#shared/core/api/http.ts';
import { allowResponse, tokenCheck } from '#shared/core/front-door/authorizer.ts';
import { InMemoryBreadcrumbStore } from '../../../support/memory/breadcrumb-store.ts';
import { type OidcIssuer, startOidcIssuer } from '../../../support/oidc-issuer.ts';
import { proxyEvent } from '../../../support/proxy-event.ts';

const CLAIM = 'crumbs:workspaces';
const AUDIENCE = 'crumbs-api';
const METHOD_ARN = 'arn:aws:execute-api:eu-west-1:123456789012:abc123/prod/POST/v1/workspaces/x/breadcrumbs';

let issuer: OidcIssuer;
let check: ReturnType<typeof tokenCheck>;
beforeAll(async () => {
  issuer = await startOidcIssuer();
  check = tokenCheck({ issuer: issuer.issuer, audiences: [AUDIENCE], workspacesClaim: CLAIM });
});
afterAll(() => issuer.stop());

const signToken = (claims: Record<string, unknown>, key?: Parameters<OidcIssuer['sign']>[1]) =>
  issuer.sign({ aud: AUDIENCE, ...claims }, key);

const store = new InMemoryBreadcrumbStore();
const api = createApi({ store });

/** POSTs a note into `workspace` with the token, through the authorizer and the API. */
async function post(token: string, workspace: string) {
  const verdict = await check(`Bearer ${token}`);
  if (!verdict.ok) return { status: 401, detail: 'the authorizer refused the token' };
  const event = proxyEvent({
    method: 'POST',
    path: `/v1/workspaces/${workspace}/breadcrumbs`,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ schema_name: 'note.v1', context: { n: 1 } }),
    authorizer: { principalId: verdict.principalId, ...allowResponse(METHOD_ARN, verdict).context },
  });
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
    ['is an object', { a: 'team-a' }, 'names "{\\"a\\":'],
    ['lists an object', [{ a: 'team-a' }], 'names {"a":"team-a"}'],
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
      { key: generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey },
    );
    expect((await post(forged, 'team-x')).status).toBe(401);
    expect((await store.list({ workspace: 'team-x', schema_name: 'note.v1', limit: 10 })).items).toHaveLength(
      before,
    );
  });
});
