import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sigv4Problem } from '#local/events/sigv4.ts';
import { AppSyncEventsPublisher, deltaChannelFromEnv } from '#shared/adapters/events/appsync-publisher.ts';
import { ENV } from '#shared/topology.ts';

const CREDENTIALS = { accessKeyId: 'AKIDTEST', secretAccessKey: 'secret-test' };

interface Seen {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: string;
}

let server: Server;
let url: string;
const seen: Seen[] = [];
let answer: { status: number; body: string } = { status: 200, body: '{"successful":[],"failed":[]}' };

beforeAll(async () => {
  server = createServer(async (req, res) => {
    let body = '';
    for await (const chunk of req) body += String(chunk);
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers[k] = v;
    seen.push({ method: req.method ?? '', path: req.url ?? '', headers, body });
    res.writeHead(answer.status, { 'content-type': 'application/json' });
    res.end(answer.body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const address = server.address();
  url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

const publisher = (credentials = CREDENTIALS) =>
  new AppSyncEventsPublisher({ httpUrl: url, region: 'eu-west-1', credentials: () => credentials });

describe('AppSyncEventsPublisher', () => {
  it('posts { channel, events } to /event, SigV4-signed for appsync with the given credentials', async () => {
    answer = { status: 200, body: '{"successful":[{"identifier":"x","index":0}],"failed":[]}' };
    seen.length = 0;
    await publisher().publish('/crumbs/wa/0123', ['{"type":"delta","seq":1,"text":"hi"}']);
    const request = seen[0] as Seen;
    expect(request.path).toBe('/event');
    expect(JSON.parse(request.body)).toEqual({
      channel: '/crumbs/wa/0123',
      events: ['{"type":"delta","seq":1,"text":"hi"}'],
    });
    expect(request.headers.authorization).toMatch(
      /^AWS4-HMAC-SHA256 Credential=AKIDTEST\/\d{8}\/eu-west-1\/appsync\/aws4_request, SignedHeaders=[a-z0-9;-]*host[a-z0-9;-]*, Signature=[0-9a-f]{64}$/,
    );
    expect(await sigv4Problem(request, CREDENTIALS)).toBeUndefined();
    // The check the local events server makes refuses a changed body, another secret and an old signature.
    expect(await sigv4Problem({ ...request, body: request.body.replace('hi', 'ho') }, CREDENTIALS)).toMatch(
      /does not match/,
    );
    expect(await sigv4Problem(request, { ...CREDENTIALS, secretAccessKey: 'other' })).toBe(
      'the signature does not match',
    );
    expect(await sigv4Problem(request, { ...CREDENTIALS, accessKeyId: 'OTHER' })).toMatch(/access key/);
    expect(await sigv4Problem(request, CREDENTIALS, Date.now() + 16 * 60_000)).toMatch(/expired/);
    expect(await sigv4Problem({ ...request, headers: {} }, CREDENTIALS)).toMatch(/not signed/);
  });

  it('rejects when AppSync answers with failed events or an error status, and refuses more than 5 events', async () => {
    answer = { status: 200, body: '{"successful":[],"failed":[{"identifier":"x","index":0,"code":500}]}' };
    await expect(publisher().publish('/crumbs/wa/0', ['{}'])).rejects.toMatchObject({
      name: 'DeltaPublishError',
    });
    answer = { status: 403, body: '{"errors":[{"errorType":"UnauthorizedException"}]}' };
    await expect(publisher().publish('/crumbs/wa/0', ['{}'])).rejects.toMatchObject({ status: 403 });
    await expect(publisher().publish('/crumbs/wa/0', Array(6).fill('{}'))).rejects.toThrow(/at most 5/);
  });

  it('is configured from the environment, or absent when no channel is', () => {
    expect(deltaChannelFromEnv({})).toBeUndefined();
    expect(
      deltaChannelFromEnv({
        [ENV.eventsHttpUrl]: url,
        [ENV.eventsRealtimeUrl]: 'ws://127.0.0.1:1/event/realtime',
      }),
    ).toBeInstanceOf(AppSyncEventsPublisher);
    expect(() => deltaChannelFromEnv({ [ENV.eventsHttpUrl]: url })).toThrow(/set together/);
  });
});
