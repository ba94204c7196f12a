import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type CliIo, main } from '#cli/main.ts';

interface Recorded {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: Record<string, string | string[] | undefined>;
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
      if (url.pathname.endsWith('/changes/channel')) {
        // No change channel configured, as on an API without one: `crumbs tail` falls back to the long-poll.
        res.writeHead(404, { 'content-type': 'application/problem+json' });
        res.end(
          JSON.stringify({ status: 404, title: 'Not Found', detail: 'no change channel is configured' }),
        );
        return;
      }
      const text = Buffer.concat(chunks).toString('utf8');
      const recorded = {
        method: req.method ?? '',
        path: url.pathname,
        query: url.searchParams,
        headers: req.headers,
        body: text ? JSON.parse(text) : undefined,
      };
      requests.push(recorded);
      const body = answer(recorded);
      // A string is a server-sent event stream (the change stream); anything else is JSON.
      res.writeHead(recorded.method === 'POST' ? 201 : 200, {
        'content-type': typeof body === 'string' ? 'text/event-stream' : 'application/json',
      });
      res.end(typeof body === 'string' ? body : JSON.stringify(body));
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
  const change = (id: string, version: number, type = version === 1 ? 'created' : 'updated') => ({
    type,
    id,
    version,
    schema_name: 'note.v1',
    title: id,
    tags: [],
    created_by: 'user:u',
    updated_by: 'user:u',
    updated_at: `2026-01-01T00:00:0${version}.000Z`,
    causation: null,
    status: null,
    outcome: 'ok',
  });
  const frame = (cursor: string, event: unknown) => `id: ${cursor}\ndata: ${JSON.stringify(event)}\n\n`;

  it('prints the backlog, then each change once, continuing from the last event id until Ctrl-C', async () => {
    let polls = 0;
    let stop: (() => void) | undefined;
    answer = () => {
      polls++;
      if (polls === 1) return `retry: 250\n\n${frame('c1', change('A', 1))}${frame('c2', change('B', 1))}`;
      if (polls === 2) return 'retry: 250\n\nid: c3\n\n'; // nothing changed: only the position moves
      return `retry: 250\n\n${frame('c4', change('B', 2))}${frame('c5', change('A', 1, 'deleted'))}`;
    };
    const t = io({}, (handler) => {
      stop = () => handler('SIGINT');
      return () => undefined;
    });
    // Ctrl-C once the fourth change is printed.
    const stdout = (text: string) => {
      t.out.push(text);
      if (t.out.length === 4) stop?.();
    };
    expect(await main(['tail', '--schema', 'note.v1'], { ...t.io, stdout })).toBe(0);
    expect(polls).toBe(3);
    const lines = t.out.join('').trim().split('\n');
    expect(
      lines.map((l) =>
        l
          .split(/\s{2,}/)
          .slice(1, 4)
          .join(' '),
      ),
    ).toEqual(['created A v1', 'created B v1', 'updated B v2', 'deleted A v1']);
    expect(requests[0]?.path).toBe('/v1/workspaces/default/changes');
    expect(requests[0]?.query.get('schema_name')).toBe('note.v1');
    expect(requests[0]?.query.get('backlog')).toBe('10');
    expect(requests.slice(1, 3).map((r) => r.headers['last-event-id'])).toEqual(['c2', 'c3']);
  });

  it('with --json prints one change event a line with its record', async () => {
    answer = () => frame('c1', { ...change('A', 1), record: { id: 'A' } });
    const t = io();
    expect(await main(['tail', '--once', '--json'], t.io)).toBe(0);
    expect(JSON.parse(t.out.join(''))).toMatchObject({ id: 'A', record: { id: 'A' } });
    expect(requests[0]?.query.get('view')).toBe('full');
  });
});
