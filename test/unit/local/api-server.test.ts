/**
 * The local front door with the authorizer function itself (`functions/authorizer/handler.ts`) against a loopback
 * issuer: a Cognito ID token and an access token both reach the handler as the caller their claims make, through
 * the authorizer context the function returns; anything else is the gateway's 401 (problem body,
 * `WWW-Authenticate`), a public route needs no token, local tokens keep working, and an Allow is kept per token for
 * the authorizer's TTL, as API Gateway keeps it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { streamingHttpHandler } from '#functions/wiring/http-handler.ts';
import { powertools } from '#functions/wiring/powertools.ts';
import { authorizerOf, type LocalApiServer, startLocalApiServer } from '#local/api-server.ts';
import { installAwsLambdaGlobal } from '#local/lambda-runtime.ts';
import { localTokens } from '#local/tokens.ts';
import { json } from '#shared/core/api/http.ts';
import { ENV, topology } from '#shared/topology.ts';
import { type OidcIssuer, startOidcIssuer } from '../../support/oidc-issuer.ts';

const CLIENT = '3n4b5urk1ft4fl3mg5e62d9ado';
const CLAIM = 'cognito:groups';

let issuer: OidcIssuer;
let server: LocalApiServer;
let authorizerCalls = 0;

beforeAll(async () => {
  issuer = await startOidcIssuer();
  process.env[ENV.jwtIssuer] = issuer.issuer;
  process.env[ENV.jwtAudience] = CLIENT;
  process.env[ENV.workspacesClaim] = CLAIM;
  process.env.POWERTOOLS_METRICS_DISABLED = 'true';
  process.env.POWERTOOLS_LOG_LEVEL = 'CRITICAL';
  installAwsLambdaGlobal();
  const { handler: authorizer } = await import('#functions/authorizer/handler.ts');
  const counted = (event: unknown, context: unknown) => {
    authorizerCalls++;
    return (authorizer as (e: unknown, c: unknown) => Promise<unknown>)(event, context);
  };
  const echo = streamingHttpHandler(powertools('crumbs-local-front-door-test', []), CLAIM, async (request) =>
    json(200, { path: request.path, query: request.query, caller: request.caller ?? null }),
  );
  server = await startLocalApiServer({
    port: 0,
    host: '127.0.0.1',
    tokens: localTokens('local-token-1234', []),
  });
  server.attach(
    [
      {
        declaration: {
          name: 'echo',
          timeoutSeconds: 30,
          memoryMb: 128,
          trigger: { kind: 'http', defaultRoute: true, publicRoutes: ['GET /health'], response: 'stream' },
        },
        handler: echo,
      },
    ],
    authorizerOf(counted, topology.functions.authorizer),
  );
});

afterAll(async () => {
  await server?.stop();
  await issuer?.stop();
  for (const name of [ENV.jwtIssuer, ENV.jwtAudience, ENV.workspacesClaim]) delete process.env[name];
});

async function call(path: string, token?: string) {
  const response = await fetch(`${server.endpoint}${path}`, {
    headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
  });
  return {
    status: response.status,
    headers: response.headers,
    body: (await response.json()) as Record<string, unknown>,
  };
}

describe('the local front door with the authorizer function', () => {
  it('lets a Cognito ID token in as the caller its groups make', async () => {
    const answer = await call(
      '/v1/workspaces/team-a/breadcrumbs',
      issuer.idToken(CLIENT, { [CLAIM]: ['team-a'] }),
    );
    expect(answer.status).toBe(200);
    expect(answer.body.caller).toMatchObject({ principal: 'user:ann', workspaces: ['team-a'] });
  });

  it('lets a Cognito access token (client_id, no aud) in the same way', async () => {
    const answer = await call(
      '/v1/workspaces/team-b/breadcrumbs',
      issuer.accessToken(CLIENT, { [CLAIM]: ['team-b', 'team-c'] }),
    );
    expect(answer.status).toBe(200);
    expect(answer.body.caller).toMatchObject({ principal: 'user:ann', workspaces: ['team-b', 'team-c'] });
  });

  it('matches a public route with a trailing slash as its resource (GET /health/ is /health), keeping the path as sent', async () => {
    const answer = await call('/health/');
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ path: '/health/', caller: null });
  });

  it("answers the gateway's 401 for a token of another client, no token or junk", async () => {
    for (const token of [
      issuer.idToken('someone-else'),
      issuer.accessToken('someone-else'),
      undefined,
      'junk',
    ]) {
      const answer = await call('/v1/workspaces/team-a/breadcrumbs', token);
      expect(answer.status, String(token)).toBe(401);
      expect(answer.headers.get('www-authenticate')).toBe('Bearer');
      expect(answer.headers.get('content-type')).toBe('application/problem+json');
      expect(answer.body).toMatchObject({ status: 401, type: 'https://crumbs.dev/problems/unauthorized' });
    }
  });

  it('serves a public route without a token, and takes local tokens as before', async () => {
    expect((await call('/health')).body).toMatchObject({ path: '/health', caller: null });
    const local = await call('/v1/workspaces/anything/breadcrumbs', 'local-token-1234');
    expect(local.body.caller).toMatchObject({ principal: 'user:local', workspaces: '*' });
  });

  it('passes the query as API Gateway does, a repeated parameter joined, whatever its name', async () => {
    const answer = await call(
      '/v1/workspaces/w/breadcrumbs?valueOf=x&constructor=y&a=1&a=2',
      'local-token-1234',
    );
    expect(answer.status).toBe(200);
    expect(answer.body.query).toEqual({ valueOf: 'x', constructor: 'y', a: '1,2' });
  });

  it('asks the authorizer once per token while its answer is kept', async () => {
    const token = issuer.idToken(CLIENT, { [CLAIM]: ['team-a'], jti: 'kept' });
    const before = authorizerCalls;
    for (let i = 0; i < 3; i++)
      expect((await call('/v1/workspaces/team-a/breadcrumbs', token)).status).toBe(200);
    expect(authorizerCalls - before).toBe(1);
  });

  it('keeps a refusal too (a Deny, no function error), as API Gateway keeps it', async () => {
    const refused = issuer.idToken('someone-else', { jti: 'refused' });
    const before = authorizerCalls;
    for (let i = 0; i < 3; i++)
      expect((await call('/v1/workspaces/team-a/breadcrumbs', refused)).status).toBe(401);
    expect(authorizerCalls - before).toBe(1);
  });
});
