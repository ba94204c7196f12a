import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { callerFromClaims } from '#shared/core/api/http.ts';
import { audienceAccepted } from '#shared/core/api/token-checks.ts';
import {
  CHANGES_NAMESPACE,
  changesChannelFor,
  channelFor,
  REQUEST_ID_PATTERN,
  WORKSPACE_PATTERN,
  workspaceOfChannel,
  workspaceSegments,
} from '#shared/core/streaming/channel.ts';
import {
  loadOnSubscribe,
  onSubscribeCode,
  SubscribeUnauthorizedError,
} from '#shared/core/streaming/on-subscribe.ts';
import { BREADCRUMB_ID_PATTERN, WORKSPACE_PATTERN as DOMAIN_WORKSPACE } from '#shared/domain/breadcrumb.ts';

const CLAIM = 'crumbs:workspaces';
const handler = loadOnSubscribe(CLAIM);

const wsChar = fc.constantFrom(...'abcXYZ019_-'.split(''));
const workspace = fc
  .tuple(fc.constantFrom(...'aZ7'.split('')), fc.array(wsChar, { maxLength: 63 }))
  .map(([first, rest]) => first + rest.join(''));
const requestId = fc
  .tuple(fc.constantFrom('a', '0'), fc.array(fc.constantFrom(...'aZ09._:-'.split('')), { maxLength: 127 }))
  .map(([first, rest]) => first + rest.join(''));

describe('channelFor', () => {
  it('checks names with the domain’s own patterns (copied so the dashboard can bundle this module)', () => {
    expect(WORKSPACE_PATTERN.source).toBe(DOMAIN_WORKSPACE.source);
    expect(REQUEST_ID_PATTERN.source).toBe(BREADCRUMB_ID_PATTERN.source);
  });

  it('round-trips every workspace through the TS and the APPSYNC_JS decoder, within AppSync segment limits', async () => {
    await fc.assert(
      fc.asyncProperty(workspace, requestId, async (ws, id) => {
        const path = await channelFor(ws, id);
        const segments = path.slice(1).split('/');
        expect(segments.length).toBeLessThanOrEqual(5);
        for (const s of segments) expect(s).toMatch(/^[A-Za-z0-9](?:[A-Za-z0-9-]{0,48}[A-Za-z0-9])?$/);
        expect(workspaceOfChannel(path)).toBe(ws);
        expect(handler.workspaceOfChannel(path)).toBe(ws);
      }),
      { numRuns: 300 },
    );
  });

  it('gives each workspace and request its own channel (no two workspaces share one)', async () => {
    await fc.assert(
      fc.asyncProperty(workspace, workspace, requestId, async (a, b, id) => {
        fc.pre(a !== b);
        expect(await channelFor(a, id)).not.toBe(await channelFor(b, id));
        expect(workspaceSegments(a)).not.toEqual(workspaceSegments(b));
      }),
      { numRuns: 200 },
    );
  });

  it('uses 3 workspace segments for the longest escaped name and 1 for a short one', async () => {
    expect(workspaceSegments('-'.padStart(64, '_'))).toHaveLength(3);
    expect(await channelFor('team-a', 'r1')).toMatch(/^\/crumbs\/wteam-da\/[0-9a-f]{32}$/);
  });

  it('refuses names that are not a workspace or a breadcrumb id with a 422 naming the field', async () => {
    await expect(channelFor('a/b', 'r1')).rejects.toMatchObject({
      status: 422,
      issues: [{ path: 'workspace' }],
    });
    await expect(channelFor('a', 'x y')).rejects.toMatchObject({ issues: [{ path: 'request_id' }] });
  });
});

describe('changesChannelFor', () => {
  it('round-trips every workspace through the TS and the APPSYNC_JS decoder, within AppSync segment limits', () => {
    fc.assert(
      fc.property(workspace, (ws) => {
        const path = changesChannelFor(ws);
        const segments = path.slice(1).split('/');
        expect(segments[0]).toBe(CHANGES_NAMESPACE);
        expect(segments.length).toBeLessThanOrEqual(5);
        for (const s of segments) expect(s).toMatch(/^[A-Za-z0-9](?:[A-Za-z0-9-]{0,48}[A-Za-z0-9])?$/);
        expect(workspaceOfChannel(path)).toBe(ws);
        expect(handler.workspaceOfChannel(path)).toBe(ws);
      }),
      { numRuns: 300 },
    );
  });

  it('is one channel per workspace, apart from its delta channels', async () => {
    expect(changesChannelFor('team-a')).toBe('/changes/wteam-da');
    expect(changesChannelFor('team-a')).not.toBe(changesChannelFor('team-b'));
    expect(await channelFor('team-a', 'r1')).not.toMatch(/^\/changes\//);
    expect(() => changesChannelFor('a/b')).toThrow(expect.objectContaining({ status: 422 }));
  });
});

describe('workspaceOfChannel', () => {
  const hex = '0123456789abcdef0123456789abcdef';
  it.each([
    ['wildcard', '/crumbs/wteam/*'],
    ['wildcard request', `/crumbs/*/${hex}`],
    ['other namespace', `/default/wteam/${hex}`],
    ['non-canonical split', `/crumbs/wte/wam/${hex}`],
    ['bad escape', `/crumbs/wte-xam/${hex}`],
    ['no workspace', `/crumbs/${hex}`],
    ['short request', '/crumbs/wteam/abc'],
    ['upper-case hex', `/crumbs/wteam/${hex.toUpperCase()}`],
    ['too many segments', `/crumbs/wa/wb/wc/wd/${hex}`],
    ['change channel wildcard', '/changes/*'],
    ['change channel of no workspace', '/changes'],
    ['change channel with a request segment', `/changes/wteam/${hex}`],
    ['non-canonical change channel', '/changes/wte/wam'],
    ['change channel with a bad escape', '/changes/wte-xam'],
    ['too many change channel segments', '/changes/wa/wb/wc/wd'],
  ])('decodes nothing from a %s', (_why, path) => {
    expect(workspaceOfChannel(path)).toBeUndefined();
    expect(handler.workspaceOfChannel(path)).toBeNull();
  });

  it('agrees with the APPSYNC_JS decoder on arbitrary paths', () => {
    const seg = fc.stringMatching(/^[A-Za-z0-9*-]{0,52}$/);
    fc.assert(
      fc.property(
        fc.constantFrom('crumbs', 'changes'),
        fc.array(seg, { minLength: 1, maxLength: 6 }),
        (ns, segs) => {
          const path = `/${[ns, ...segs].join('/')}`;
          expect(handler.workspaceOfChannel(path)).toBe(workspaceOfChannel(path) ?? null);
        },
      ),
      { numRuns: 500 },
    );
  });
});

describe('the onSubscribe handler', () => {
  const nameOrJunk = fc.oneof(
    workspace,
    fc.constant('*'),
    fc.constantFrom('a b', 'bad/name', '', '-x', 'x'.repeat(65), '"q"'),
  );
  const claimValue = fc.oneof(
    fc.constant(undefined),
    fc.array(nameOrJunk, { maxLength: 4 }),
    fc.array(nameOrJunk, { maxLength: 4 }).map((n) => JSON.stringify(n)),
    fc.array(nameOrJunk, { maxLength: 4 }).map((n) => n.join(' ')),
    fc.array(nameOrJunk, { maxLength: 4 }).map((n) => ` ${n.join(', ')}\t`),
    fc.array(nameOrJunk, { maxLength: 4 }).map((n) => `[${n.join(' ')}]`),
    fc.constantFrom('*', '[*]', '["a",', '{"a":1}', 'a,,b', '[ ]', '\u00a0a\u3000b'),
    fc.integer(),
  );

  it('allows exactly what callerFromClaims grants, for every claim form', async () => {
    await fc.assert(
      fc.asyncProperty(workspace, requestId, claimValue, async (ws, id, raw) => {
        const claims = raw === undefined ? { sub: 'u' } : { sub: 'u', [CLAIM]: raw };
        const caller = callerFromClaims(claims as never, CLAIM);
        const expected = caller.workspaces === '*' || caller.workspaces.includes(ws);
        const path = await channelFor(ws, id);
        let allowed: boolean;
        try {
          allowed = handler.subscriberMayRead(claims, path);
        } catch {
          allowed = false; // a runtime error in the handler refuses the subscription
        }
        expect(allowed).toBe(expected);
      }),
      { numRuns: 1000 },
    );
  });

  it('grants a change channel by the same rule as a delta channel', () => {
    fc.assert(
      fc.property(workspace, claimValue, (ws, raw) => {
        const claims = raw === undefined ? { sub: 'u' } : { sub: 'u', [CLAIM]: raw };
        const caller = callerFromClaims(claims as never, CLAIM);
        const expected = caller.workspaces === '*' || caller.workspaces.includes(ws);
        let allowed: boolean;
        try {
          allowed = handler.subscriberMayRead(claims, changesChannelFor(ws));
        } catch {
          allowed = false;
        }
        expect(allowed).toBe(expected);
      }),
      { numRuns: 500 },
    );
  });

  it('allows the own workspace and calls util.unauthorized() for another one', async () => {
    const path = await channelFor('team-a', 'req-1');
    const ctx = (claims: Record<string, unknown>) => ({
      identity: { sub: 'u', claims },
      info: { channel: { path, segments: path.slice(1).split('/') }, channelNamespace: { name: 'crumbs' } },
    });
    expect(() => handler.onSubscribe(ctx({ [CLAIM]: ['team-a'] }))).not.toThrow();
    expect(() => handler.onSubscribe(ctx({ [CLAIM]: '[team-b]' }))).toThrow(SubscribeUnauthorizedError);
    expect(() => handler.onSubscribe(ctx({}))).toThrow(SubscribeUnauthorizedError);
  });

  it('reads cognito:groups as the API does: only the groups named as workspaces count', async () => {
    const groups = loadOnSubscribe('cognito:groups');
    await fc.assert(
      fc.asyncProperty(workspace, requestId, claimValue, async (ws, id, raw) => {
        const claims = raw === undefined ? { sub: 'u' } : { sub: 'u', 'cognito:groups': raw };
        const caller = callerFromClaims(claims as never, 'cognito:groups');
        const expected = caller.workspaces === '*' || caller.workspaces.includes(ws);
        const path = await channelFor(ws, id);
        let allowed: boolean;
        try {
          allowed = groups.subscriberMayRead(claims, path);
        } catch {
          allowed = false;
        }
        expect(allowed).toBe(expected);
      }),
      { numRuns: 1000 },
    );
    const path = await channelFor('team-a', 'req-1');
    expect(groups.subscriberMayRead({ 'cognito:groups': ['Admins Group!', 'team-a'] }, path)).toBe(true);
    expect(groups.subscriberMayRead({ 'cognito:groups': ['Admins Group!'] }, path)).toBe(false);
  });

  describe('with the API’s audiences (both Cognito token shapes)', () => {
    const CLIENT = '3n4b5urk1ft4fl3mg5e62d9ado';
    const withAudiences = loadOnSubscribe('cognito:groups', [CLIENT, 'crumbs-api']);
    const grants = { 'cognito:groups': ['team-a'] };

    it('takes an ID token (aud = the app client) and an access token (client_id, no aud)', async () => {
      const path = await channelFor('team-a', 'req-1');
      expect(withAudiences.subscriberMayRead({ ...grants, token_use: 'id', aud: CLIENT }, path)).toBe(true);
      expect(
        withAudiences.subscriberMayRead({ ...grants, token_use: 'access', client_id: CLIENT }, path),
      ).toBe(true);
      expect(withAudiences.subscriberMayRead({ ...grants, aud: ['other', 'crumbs-api'] }, path)).toBe(true);
    });

    it("refuses another client's tokens, a token with neither claim, and judges aud alone when present", async () => {
      const path = await channelFor('team-a', 'req-1');
      expect(withAudiences.subscriberMayRead({ ...grants, aud: 'another-app' }, path)).toBe(false);
      expect(withAudiences.subscriberMayRead({ ...grants, client_id: 'another-app' }, path)).toBe(false);
      expect(withAudiences.subscriberMayRead(grants, path)).toBe(false);
      // API Gateway's rule: with an aud, client_id is not read.
      expect(
        withAudiences.subscriberMayRead({ ...grants, aud: 'another-app', client_id: CLIENT }, path),
      ).toBe(false);
      const ctx = {
        identity: { sub: 'u', claims: { ...grants, client_id: 'another-app' } },
        info: { channel: { path, segments: path.slice(1).split('/') }, channelNamespace: { name: 'crumbs' } },
      };
      expect(() => withAudiences.onSubscribe(ctx)).toThrow(SubscribeUnauthorizedError);
    });

    it('judges the audience exactly as the shared rule (token-checks.ts) on any claims', () => {
      const value = fc.oneof(
        fc.constantFrom(CLIENT, 'crumbs-api', 'other', ''),
        fc.array(fc.constantFrom(CLIENT, 'crumbs-api', 'other', 7), { maxLength: 3 }),
        fc.constantFrom(null, 5, true),
      );
      fc.assert(
        fc.property(
          fc.option(value, { nil: undefined }),
          fc.option(value, { nil: undefined }),
          (aud, clientId) => {
            const claims: Record<string, unknown> = {};
            if (aud !== undefined) claims.aud = aud;
            if (clientId !== undefined) claims.client_id = clientId;
            expect(withAudiences.audienceAccepted(claims)).toBe(
              audienceAccepted(claims, [CLIENT, 'crumbs-api']),
            );
          },
        ),
        { numRuns: 2000 },
      );
    });

    it('fills the audiences into the inlined code, and refuses an empty list', () => {
      expect(onSubscribeCode('cognito:groups', [CLIENT])).toContain(`const AUDIENCES = ["${CLIENT}"];`);
      expect(onSubscribeCode(CLAIM)).toContain('const AUDIENCES = null;');
      expect(() => onSubscribeCode(CLAIM, [])).toThrow(/at least one audience/);
    });
  });

  it('reads the claim the operator names and fits the namespace code limit', () => {
    const other = loadOnSubscribe('custom/ws');
    const path = '/crumbs/wa/0123456789abcdef0123456789abcdef';
    expect(other.subscriberMayRead({ 'custom/ws': 'a' }, path)).toBe(true);
    expect(other.subscriberMayRead({ [CLAIM]: 'a' }, path)).toBe(false);
    expect(onSubscribeCode(CLAIM).length).toBeLessThanOrEqual(32768);
  });
});
