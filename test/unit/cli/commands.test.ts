import { once } from 'node:events';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type CliIo, main } from '#cli/main.ts';

interface Recorded {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  body: unknown;
}

interface Reply {
  status: number;
  body?: unknown;
  contentType?: string;
}

let server: Server;
let endpoint: string;
let requests: Recorded[];
let answer: (req: Recorded) => Reply;

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://x');
      const text = Buffer.concat(chunks).toString('utf8');
      const recorded: Recorded = {
        method: req.method ?? '',
        path: url.pathname,
        query: url.searchParams,
        headers: req.headers,
        body: text ? JSON.parse(text) : undefined,
      };
      requests.push(recorded);
      const reply = answer(recorded);
      if (reply.body === undefined) {
        res.writeHead(reply.status).end();
        return;
      }
      const contentType =
        reply.contentType ?? (reply.status >= 400 ? 'application/problem+json' : 'application/json');
      res.writeHead(reply.status, { 'content-type': contentType });
      res.end(typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body));
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
  answer = () => ({ status: 200, body: {} });
});

function fullCrumb(overrides: Record<string, unknown> = {}) {
  return {
    id: '01JABCDEFGHJKMNPQRSTVWXYZ0',
    workspace: 'default',
    schema_name: 'user.message.v1',
    title: 'hello',
    tags: ['a', 'b'],
    context: { text: 'hi' },
    version: 1,
    checksum: 'f00dfeedcafebabe0123456789',
    created_at: '2025-03-04T05:06:07.890Z',
    updated_at: '2025-03-04T05:06:07.890Z',
    created_by: 'user:local',
    updated_by: 'user:local',
    ...overrides,
  };
}

async function run(argv: string[], options: { env?: NodeJS.ProcessEnv; stdin?: string } = {}) {
  let stdout = '';
  let stderr = '';
  const io: CliIo = {
    stdout: (s) => {
      stdout += s;
    },
    stderr: (s) => {
      stderr += s;
    },
    env: { CRUMBS_ENDPOINT: endpoint, CRUMBS_TOKEN: 'tok-123', ...options.env },
    readStdin: async () => options.stdin,
  };
  const code = await main(argv, io);
  return { code, stdout, stderr };
}

function only(): Recorded {
  expect(requests).toHaveLength(1);
  return requests[0]!;
}

const BASE = '/v1/workspaces/default/breadcrumbs';

describe('crumbs put', () => {
  it('posts the breadcrumb from flags with the bearer token and prints id and version', async () => {
    answer = () => ({ status: 201, body: fullCrumb() });
    const result = await run([
      'put',
      '--schema',
      'user.message.v1',
      '--title',
      'hello',
      '--tag',
      'a',
      '--tag',
      'b',
      '--context',
      '{"text":"hi"}',
      '--llm-hints',
      '{"exclude":["secret"]}',
      '--expires-at',
      '2030-01-01T00:00:00Z',
      '--idempotency-key',
      'k-1',
    ]);
    expect(result).toMatchObject({ code: 0, stderr: '' });
    const req = only();
    expect(req.method).toBe('POST');
    expect(req.path).toBe(BASE);
    expect(req.headers.authorization).toBe('Bearer tok-123');
    expect(req.headers['idempotency-key']).toBe('k-1');
    expect(req.headers['content-type']).toBe('application/json');
    expect(req.body).toEqual({
      schema_name: 'user.message.v1',
      title: 'hello',
      tags: ['a', 'b'],
      context: { text: 'hi' },
      llm_hints: { exclude: ['secret'] },
      expires_at: '2030-01-01T00:00:00Z',
    });
    const lines = result.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^ID\s+SCHEMA\s+TITLE\s+TAGS\s+VERSION\s+UPDATED$/);
    expect(lines[1]).toMatch(
      /^01JABCDEFGHJKMNPQRSTVWXYZ0\s+user\.message\.v1\s+hello\s+a,b\s+1\s+2025-03-04 05:06:07$/,
    );
  });

  it('reads the context from stdin when no context flag is given', async () => {
    answer = () => ({ status: 201, body: fullCrumb() });
    const result = await run(['put', '--schema', 'user.message.v1'], { stdin: '{"from":"stdin"}' });
    expect(result.code).toBe(0);
    expect(only().body).toEqual({ schema_name: 'user.message.v1', context: { from: 'stdin' } });
  });

  it('sends a whole breadcrumb from a YAML file, with flags overriding its fields', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'crumbs-cli-'));
    const file = join(dir, 'tool.yaml');
    await writeFile(
      file,
      'schema_name: tool.def.v1\ntitle: from file\ntags: [x]\ncontext:\n  name: echo\nllm_hints:\n  exclude: [secret]\n',
    );
    answer = () => ({ status: 201, body: fullCrumb({ schema_name: 'tool.def.v1' }) });
    const result = await run(['put', '-f', file, '--title', 'from flag']);
    expect(result.code).toBe(0);
    expect(only().body).toEqual({
      schema_name: 'tool.def.v1',
      title: 'from flag',
      tags: ['x'],
      context: { name: 'echo' },
      llm_hints: { exclude: ['secret'] },
    });
  });

  it('reads --context-file as JSON', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'crumbs-cli-'));
    const file = join(dir, 'ctx.json');
    await writeFile(file, '{"n": 1}');
    answer = () => ({ status: 201, body: fullCrumb() });
    expect((await run(['put', '--schema', 'a.b.v1', '--context-file', file])).code).toBe(0);
    expect(only().body).toEqual({ schema_name: 'a.b.v1', context: { n: 1 } });
  });

  it('prints the created breadcrumb as JSON with --json', async () => {
    answer = () => ({ status: 201, body: fullCrumb() });
    const result = await run(['--json', 'put', '--schema', 'user.message.v1', '--context', '{}']);
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual(fullCrumb());
  });

  it('exits 1 with the problem title, detail and field errors when the API rejects the input', async () => {
    answer = () => ({
      status: 422,
      body: {
        type: 'https://crumbs.dev/problems/validation-failed',
        title: 'Validation failed',
        status: 422,
        detail: 'the request has 2 invalid fields',
        errors: [
          { path: 'schema_name', message: 'expected a schema name like "domain.noun.v1"' },
          { path: 'tags[0]', message: 'a tag cannot be empty' },
        ],
      },
    });
    const result = await run(['put', '--schema', 'Bad', '--tag', '', '--context', '{}']);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain('Validation failed');
    expect(result.stderr).toContain('the request has 2 invalid fields');
    expect(result.stderr).toContain('schema_name: expected a schema name like "domain.noun.v1"');
    expect(result.stderr).toContain('tags[0]: a tag cannot be empty');
  });

  it('prints each field error once when the detail only repeats them', async () => {
    answer = () => ({
      status: 422,
      body: {
        type: 'about:blank',
        title: 'Unprocessable content',
        status: 422,
        detail: 'tags[0]: a tag cannot be empty',
        errors: [{ path: 'tags[0]', message: 'a tag cannot be empty' }],
      },
    });
    const result = await run(['put', '--schema', 'a.b.v1', '--tag', '', '--context', '{}']);
    expect(result.code).toBe(1);
    expect(result.stderr.split('a tag cannot be empty')).toHaveLength(2);
  });

  it('exits 2 without calling the API when the context is not JSON or missing', async () => {
    const bad = await run(['put', '--schema', 'a.b.v1', '--context', '{nope']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--context: not valid JSON');
    const missing = await run(['put', '--schema', 'a.b.v1']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('missing context');
    expect(requests).toHaveLength(0);
  });
});

describe('crumbs get', () => {
  it('shows the context view by default', async () => {
    answer = () => ({
      status: 200,
      body: {
        id: 'c1',
        schema_name: 'user.message.v1',
        title: 'hello',
        tags: ['a'],
        version: 2,
        updated_at: '2025-03-04T05:06:07Z',
        context: { summary: 'short' },
      },
    });
    const result = await run(['get', 'c1']);
    expect(result.code).toBe(0);
    expect(only()).toMatchObject({ method: 'GET', path: `${BASE}/c1` });
    expect(result.stdout).toMatch(/^id\s+c1$/m);
    expect(result.stdout).toMatch(/^version\s+2$/m);
    expect(result.stdout).toContain('"summary": "short"');
  });

  it('reads the full view with --full and a past version with --version N', async () => {
    answer = () => ({ status: 200, body: fullCrumb({ version: 3 }) });
    const full = await run(['get', 'c1', '--full']);
    expect(full.code).toBe(0);
    expect(full.stdout).toMatch(/^checksum\s+f00dfeedcafebabe0123456789$/m);
    expect(full.stdout).toMatch(/^created\s+2025-03-04 05:06:07 by user:local$/m);
    const version = await run(['get', 'c1', '--version', '1', '--json']);
    expect(version.code).toBe(0);
    expect(JSON.parse(version.stdout)).toMatchObject({ version: 3 });
    expect(requests.map((r) => `${r.path}?${r.query}`)).toEqual([
      `${BASE}/c1?view=full`,
      `${BASE}/c1/versions/1?view=full`,
    ]);
  });

  it('uses the workspace from -w and encodes it and the id in the path', async () => {
    answer = () => ({ status: 200, body: fullCrumb() });
    await run(['get', '-w', 'team-a', 'id:with:colons', '--full']);
    expect(only().path).toBe('/v1/workspaces/team-a/breadcrumbs/id%3Awith%3Acolons');
    expect(only().query.get('view')).toBe('full');
  });

  it('exits 1 with the API message when the breadcrumb does not exist', async () => {
    answer = () => ({
      status: 404,
      body: { type: 'about:blank', title: 'Not Found', status: 404, detail: 'breadcrumb c9 does not exist' },
    });
    const result = await run(['get', 'c9']);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('Not Found');
    expect(result.stderr).toContain('breadcrumb c9 does not exist');
  });

  it('exits 2 with usage when the id is missing or --version is not a number', async () => {
    const missing = await run(['get']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('missing breadcrumb id');
    expect(missing.stderr).toContain('Usage: crumbs get');
    const bad = await run(['get', 'c1', '--version', 'two']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--version: expected an integer');
    expect(requests).toHaveLength(0);
  });
});

describe('crumbs ls', () => {
  it('passes filters as query parameters, prints a table and the next-page hint', async () => {
    answer = () => ({
      status: 200,
      body: {
        items: [fullCrumb({ id: 'c2', title: 'x'.repeat(100) }), fullCrumb({ id: 'c1' })],
        next_cursor: 'CUR1',
      },
    });
    const result = await run(['ls', '--schema', 'user.message.v1', '--tag', 'a', '--limit', '2']);
    expect(result.code).toBe(0);
    const req = only();
    expect(req.path).toBe(BASE);
    expect(Object.fromEntries(req.query)).toEqual({ schema_name: 'user.message.v1', tag: 'a', limit: '2' });
    const lines = result.stdout.split('\n');
    expect(lines[0]).toMatch(/^ID\s+SCHEMA\s+TITLE/);
    expect(lines[1]).toContain(`${'x'.repeat(39)}…`);
    expect(lines[1]).not.toContain('x'.repeat(41));
    // Columns line up: every row starts its SCHEMA cell at the same offset as the header.
    const schemaAt = lines[0]!.indexOf('SCHEMA');
    expect(lines[1]!.indexOf('user.message.v1')).toBe(schemaAt);
    expect(lines[2]!.indexOf('user.message.v1')).toBe(schemaAt);
    expect(result.stdout).toContain('crumbs ls --schema user.message.v1 --tag a --limit 2 --cursor CUR1');
  });

  it('follows cursors with --all and prints every item once', async () => {
    const pages: Record<string, { items: unknown[]; next_cursor: string | null }> = {
      '': { items: [fullCrumb({ id: 'c3' })], next_cursor: 'p2' },
      p2: { items: [fullCrumb({ id: 'c2' })], next_cursor: 'p3' },
      p3: { items: [fullCrumb({ id: 'c1' })], next_cursor: null },
    };
    answer = (req) => ({ status: 200, body: pages[req.query.get('cursor') ?? ''] });
    const result = await run(['ls', '--all', '--json', '--limit', '1']);
    expect(result.code).toBe(0);
    expect(requests.map((r) => r.query.get('cursor'))).toEqual([null, 'p2', 'p3']);
    expect(requests.every((r) => r.query.get('limit') === '1')).toBe(true);
    const printed = JSON.parse(result.stdout) as { items: { id: string }[]; next_cursor: unknown };
    expect(printed.items.map((i) => i.id)).toEqual(['c3', 'c2', 'c1']);
    expect(printed.next_cursor).toBeNull();
  });

  it('says so when there are no breadcrumbs', async () => {
    answer = () => ({ status: 200, body: { items: [], next_cursor: null } });
    const result = await run(['ls']);
    expect(result).toMatchObject({ code: 0, stdout: 'no breadcrumbs\n' });
  });
});

describe('crumbs update', () => {
  it('sends a PATCH with If-Match and only the given fields', async () => {
    answer = () => ({ status: 200, body: fullCrumb({ version: 4 }) });
    const result = await run(['update', 'c1', '--if-match', '3', '--title', 'new', '--context', '{"n":2}']);
    expect(result.code).toBe(0);
    const req = only();
    expect(req.method).toBe('PATCH');
    expect(req.path).toBe(`${BASE}/c1`);
    expect(req.headers['if-match']).toBe('3');
    expect(req.body).toEqual({ title: 'new', context: { n: 2 } });
    expect(result.stdout).toMatch(/\s4\s+2025-03-04 05:06:07$/m);
  });

  it('sends no If-Match without --if-match, and clears tags with --clear-tags', async () => {
    answer = () => ({ status: 200, body: fullCrumb({ version: 2, tags: [] }) });
    await run(['update', 'c1', '--clear-tags']);
    const req = only();
    expect(req.headers['if-match']).toBeUndefined();
    expect(req.body).toEqual({ tags: [] });
  });

  it('exits 1 with the API message on a version conflict (412)', async () => {
    answer = () => ({
      status: 412,
      body: {
        type: 'https://crumbs.dev/problems/version-conflict',
        title: 'Version conflict',
        status: 412,
        detail: 'expected version 3, but the stored version is 5',
      },
    });
    const result = await run(['update', 'c1', '--if-match', '3', '--title', 't']);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('412');
    expect(result.stderr).toContain('expected version 3, but the stored version is 5');
  });

  it('exits 2 when there is nothing to update', async () => {
    const result = await run(['update', 'c1']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('nothing to update');
    expect(requests).toHaveLength(0);
  });
});

describe('crumbs rm', () => {
  it('sends DELETE and confirms', async () => {
    answer = () => ({ status: 204 });
    const result = await run(['rm', 'c1']);
    expect(result).toMatchObject({ code: 0, stdout: 'deleted c1\n' });
    expect(only()).toMatchObject({ method: 'DELETE', path: `${BASE}/c1` });
  });
});

describe('crumbs history', () => {
  it('prints versions with who, when, title and a checksum prefix', async () => {
    answer = () => ({
      status: 200,
      body: {
        items: [
          fullCrumb({
            version: 2,
            title: 'second',
            updated_by: 'agent:helper',
            checksum: 'abcdef0123456789ffff',
          }),
          fullCrumb({ version: 1, title: 'first', checksum: '0123456789abcdef0000' }),
        ],
        next_cursor: null,
      },
    });
    const result = await run(['history', 'c1']);
    expect(result.code).toBe(0);
    expect(only().path).toBe(`${BASE}/c1/history`);
    expect(only().query.get('view')).toBe('full');
    const lines = result.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^VERSION\s+WHO\s+WHEN\s+TITLE\s+CHECKSUM$/);
    expect(lines[1]).toMatch(/^\s*2\s+agent:helper\s+2025-03-04 05:06:07\s+second\s+abcdef012345$/);
    expect(lines[2]).toMatch(/^\s*1\s+user:local\s+2025-03-04 05:06:07\s+first\s+0123456789ab$/);
  });
});

/** A workflow whose first step input and second step condition are not JSONata. */
const brokenWorkflow = {
  schema_name: 'workflow.def.v1',
  context: {
    workflow_id: 'fetcher',
    subscriptions: { selectors: [{ schema_name: 'user.message.v1' }] },
    steps: [
      { id: 'fetch', tool: 'http', input: { url: '=trigger.context.(' } },
      { id: 'store', tool: 'breadcrumb.create', when: 'steps.fetch.ok and' },
    ],
    output: { schema_name: 'fetcher.result.v1' },
  },
};

describe('crumbs apply', () => {
  it('writes nothing and names each expression that is not JSONata, with its path', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'crumbs-apply-'));
    await writeFile(join(dir, 'fetcher.json'), JSON.stringify(brokenWorkflow));
    const result = await run(['apply', '-f', dir]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('nothing was written');
    expect(result.stderr).toMatch(
      /fetcher\.json#1: context\.steps\[0\]\.input\.url: not a valid JSONata expression: \S/,
    );
    expect(result.stderr).toMatch(
      /fetcher\.json#1: context\.steps\[1\]\.when: not a valid JSONata expression: \S/,
    );
    expect(requests).toHaveLength(0);
  });
});

describe('crumbs explain', () => {
  it('says why a definition with a broken expression has no rule instead of explaining one', async () => {
    answer = (req) => ({
      status: 200,
      body: req.path.endsWith('/wf1') ? fullCrumb({ id: 'wf1', ...brokenWorkflow }) : fullCrumb({ id: 'm1' }),
    });
    const result = await run(['explain', 'wf1', 'm1']);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('crumbs explain: wf1 is not a valid definition, so no rule runs it:');
    expect(result.stderr).toContain('context.steps[0].input.url: not a valid JSONata expression:');
    expect(result.stderr).toContain('context.steps[1].when: not a valid JSONata expression:');
    expect(result.stderr).not.toContain('unexpected error');
  });
});

describe('crumbs (global behaviour)', () => {
  it('takes --endpoint, --workspace and --token flags over the environment', async () => {
    answer = () => ({ status: 200, body: { items: [], next_cursor: null } });
    const result = await run(['ls', '--endpoint', endpoint, '--workspace', 'w2', '--token', 'flag-token'], {
      env: { CRUMBS_ENDPOINT: 'http://127.0.0.1:1', CRUMBS_WORKSPACE: 'w1', CRUMBS_TOKEN: 'env-token' },
    });
    expect(result.code).toBe(0);
    const req = only();
    expect(req.path).toBe('/v1/workspaces/w2/breadcrumbs');
    expect(req.headers.authorization).toBe('Bearer flag-token');
  });

  it('names the endpoint and suggests npm start when nothing listens', async () => {
    const closed = createServer();
    closed.listen(0, '127.0.0.1');
    await once(closed, 'listening');
    const port = (closed.address() as AddressInfo).port;
    closed.close();
    await once(closed, 'close');
    const result = await run(['ls'], { env: { CRUMBS_ENDPOINT: `http://127.0.0.1:${port}` } });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`http://127.0.0.1:${port}`);
    expect(result.stderr).toContain('connection refused');
    expect(result.stderr).toContain('npm start');
  });

  it('hints at the token when the API answers 401', async () => {
    answer = () => ({ status: 401, body: { type: 'about:blank', title: 'Unauthorized', status: 401 } });
    const result = await run(['ls'], { env: { CRUMBS_TOKEN: '' } });
    expect(result.code).toBe(1);
    expect(only().headers.authorization).toBeUndefined();
    expect(result.stderr).toContain('CRUMBS_TOKEN');
  });

  it('folds a non-JSON error body into the message', async () => {
    answer = () => ({ status: 502, body: 'upstream exploded', contentType: 'text/plain' });
    const result = await run(['get', 'c1']);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('502');
    expect(result.stderr).toContain('upstream exploded');
  });

  it('exits 2 with usage on an unknown command or flag', async () => {
    const command = await run(['frobnicate']);
    expect(command.code).toBe(2);
    expect(command.stderr).toContain('unknown command "frobnicate"');
    expect(command.stderr).toContain('Commands:');
    const flag = await run(['ls', '--bogus']);
    expect(flag.code).toBe(2);
    expect(flag.stderr).toContain("'--bogus'");
    expect(flag.stderr).toContain('Usage: crumbs ls');
    expect(requests).toHaveLength(0);
  });

  it('prints usage for every command with --help and exits 0', async () => {
    for (const name of ['dev', 'put', 'get', 'ls', 'update', 'rm', 'history']) {
      const result = await run([name, '--help']);
      expect(result.code).toBe(0);
      expect(result.stdout).toContain(`Usage: crumbs ${name}`);
      expect(result.stdout).toContain('--endpoint');
    }
    const general = await run(['--help']);
    expect(general.code).toBe(0);
    for (const name of ['dev', 'put', 'get', 'ls', 'update', 'rm', 'history']) {
      expect(general.stdout).toMatch(new RegExp(`^  ${name}\\s`, 'm'));
    }
    expect((await run(['help', 'put'])).stdout).toContain('Usage: crumbs put');
  });

  it('prints the package version with --version', async () => {
    const result = await run(['--version']);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^crumbs \d+\.\d+\.\d+/);
  });
});

describe('crumbs runs get', () => {
  it('lists the responses and controls the run refused, from whom and why', async () => {
    answer = () => ({
      status: 200,
      body: {
        run_id: 'run-1',
        workflow: 'ship',
        status: 'waiting',
        steps: { approve: { kind: 'human', status: 'waiting', attempts: 1 } },
        refused: [
          {
            id: 'forged-1',
            by: 'agent:mallory',
            what: 'human response (approve) to approve',
            reason: 'only a person answers a human step: this response was written by agent:mallory',
            at: '2026-01-01T00:00:00.000Z',
          },
        ],
      },
    });
    const result = await run(['runs', 'get', 'run-1']);
    expect(result.stdout).toContain(
      'refused   human response (approve) to approve by agent:mallory (forged-1): only a person answers a human step',
    );
  });
});
