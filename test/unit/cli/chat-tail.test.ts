import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type CliIo, main } from '#cli/main.ts';

interface Recorded {
  method: string;
  path: string;
  query: URLSearchParams;
  body: unknown;
}

let server: Server;
let endpoint: string;
let requests: Recorded[];
let answer: (req: Recorded) => unknown;

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://x');
      const text = Buffer.concat(chunks).toString('utf8');
      const recorded = {
        method: req.method ?? '',
        path: url.pathname,
        query: url.searchParams,
        body: text ? JSON.parse(text) : undefined,
      };
      requests.push(recorded);
      res.writeHead(recorded.method === 'POST' ? 201 : 200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(answer(recorded)));
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(() => {
  server.close();
});

beforeEach(() => {
  requests = [];
});

function crumb(id: string, schema: string, context: Record<string, unknown>, version = 1) {
  return {
    id,
    workspace: 'demo',
    schema_name: schema,
    title: id,
    tags: [],
    context,
    version,
    checksum: 'c',
    created_at: '2026-01-01T00:00:00.000Z',
    updated_at: `2026-01-01T00:00:0${version}.000Z`,
    created_by: 'user:u',
    updated_by: 'user:u',
  };
}

function io(env: NodeJS.ProcessEnv = {}, onSignal?: CliIo['onSignal']) {
  const out: string[] = [];
  const err: string[] = [];
  const value: CliIo = {
    stdout: (s) => out.push(s),
    stderr: (s) => err.push(s),
    env: { CRUMBS_ENDPOINT: endpoint, CRUMBS_TOKEN: 't', ...env },
    ...(onSignal ? { onSignal } : {}),
  };
  return { io: value, out, err };
}

describe('crumbs chat', () => {
  it('writes a user.message.v1 in workspace demo and prints the answer of its thread', async () => {
    let polls = 0;
    answer = (req) => {
      if (req.method === 'POST')
        return crumb('MSG1', 'user.message.v1', (req.body as { context: Record<string, unknown> }).context);
      polls++;
      return {
        items: polls < 2 ? [] : [crumb('R1', 'agent.response.v1', { message: '17*23 = 391' })],
        next_cursor: null,
      };
    };
    const t = io();
    expect(await main(['chat', 'what is 17*23?', '--session', 's9'], t.io)).toBe(0);
    expect(t.out.join('')).toBe('17*23 = 391\n');
    expect(requests[0]).toMatchObject({ method: 'POST', path: '/v1/workspaces/demo/breadcrumbs' });
    expect(requests[0]?.body).toMatchObject({
      schema_name: 'user.message.v1',
      tags: ['user:message', 'session:s9'],
      context: { message: 'what is 17*23?', session: 's9' },
    });
    expect(requests[1]?.query.get('tag')).toBe('thread:MSG1');
  });

  it('reports an agent error and fails', async () => {
    answer = (req) =>
      req.method === 'POST'
        ? crumb('MSG2', 'user.message.v1', {})
        : { items: [crumb('E1', 'agent.error.v1', { error: 'no key for openrouter' })], next_cursor: null };
    const t = io({ CRUMBS_WORKSPACE: 'other' });
    expect(await main(['chat', 'hi'], t.io)).toBe(1);
    expect(t.err.join('')).toContain('no key for openrouter');
    expect(requests[0]?.path).toBe('/v1/workspaces/other/breadcrumbs');
  });

  it('gives up after --timeout', async () => {
    answer = (req) =>
      req.method === 'POST' ? crumb('MSG3', 'user.message.v1', {}) : { items: [], next_cursor: null };
    const t = io();
    expect(await main(['chat', 'hi', '--timeout', '1'], t.io)).toBe(1);
    expect(t.err.join('')).toContain('no answer to MSG3 within 1 s');
  });
});

describe('crumbs tail', () => {
  it('prints the backlog oldest first, then new breadcrumbs and versions until Ctrl-C', async () => {
    let polls = 0;
    let stop: (() => void) | undefined;
    answer = () => {
      polls++;
      const items =
        polls === 1
          ? [crumb('B', 'note.v1', {}), crumb('A', 'note.v1', {})]
          : [crumb('C', 'note.v1', {}), crumb('B', 'note.v1', {}, 2), crumb('A', 'note.v1', {})];
      if (polls === 2) setTimeout(() => stop?.(), 10);
      return { items, next_cursor: null };
    };
    const t = io({}, (handler) => {
      stop = () => handler('SIGINT');
      return () => undefined;
    });
    expect(await main(['tail', '--schema', 'note.v1', '--interval', '100'], t.io)).toBe(0);
    const lines = t.out.join('').trim().split('\n');
    expect(lines.map((l) => l.split('  ').slice(1, 3).join(' '))).toEqual(['A v1', 'B v1', 'B v2', 'C v1']);
    expect(requests[0]?.query.get('schema_name')).toBe('note.v1');
  });

  it('needs --schema or --tag', async () => {
    const t = io();
    expect(await main(['tail'], t.io)).toBe(2);
  });
});
