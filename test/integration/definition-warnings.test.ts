/**
 * Definitions say what is wrong with them, on the shared local stack: one with fields crumbs does not know is
 * `active` with a warning naming them (API `Warning` header, status breadcrumb, `crumbs apply`, `crumbs put`,
 * `crumbs explain`); a context builder whose update trigger could never run it is `invalid` with the reason.
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { main } from '#cli/main.ts';
import { api, eventually, localStack, uniqueWorkspace } from '../support/local.ts';

async function crumbs(
  workspace: string,
  ...args: string[]
): Promise<{ code: number; out: string; err: string }> {
  const { api: endpoint, token } = localStack();
  let out = '';
  let err = '';
  const code = await main([...args, '--endpoint', endpoint, '--token', token, '--workspace', workspace], {
    stdout: (s) => {
      out += s;
    },
    stderr: (s) => {
      err += s;
    },
    env: {},
  });
  return { code, out, err };
}

const misplaced = {
  agent_id: 'weather',
  type: 'api',
  transport: { kind: 'api', api: { endpoint: 'https://api.example.com/weather', method: 'POST' } },
  yaml: 'response_transform: data',
  // Belongs inside `yaml`; beside it crumbs does not read it.
  request_transform: '{ "city": input.city }',
};

type Status = {
  context: { state: string; warnings: { path: string }[]; errors: { path: string; message: string }[] };
};

async function statusOf(c: ReturnType<typeof api>, id: string): Promise<Status> {
  return eventually(async () => {
    const res = await c.call(
      'GET',
      `?schema_name=definition.status.v1&tag=definition:${id}&limit=1&view=full`,
    );
    return (res.body.items as Status[] | undefined)?.[0];
  }, 30_000);
}

describe('definition warnings and reasons', () => {
  it('accepts a definition with unknown fields and names them: API header, status, apply, put and explain', async () => {
    const ws = uniqueWorkspace('warn');
    const c = api(ws);
    const put = await c.call('PUT', '/agent-weather', { schema_name: 'agent.def.v1', context: misplaced });
    expect(put.status).toBe(201);
    expect(put.headers.get('warning')).toMatch(/^299 - "request_transform: unknown field/);
    const status = await statusOf(c, 'agent-weather');
    expect(status.context.state).toBe('active');
    expect(status.context.warnings.map((w) => w.path)).toEqual(['request_transform']);

    const dir = await mkdtemp(join(tmpdir(), 'crumbs-warn-'));
    const file = join(dir, 'tool.json');
    await writeFile(
      file,
      JSON.stringify({
        schema_name: 'tool.def.v1',
        context: { name: 'echo', implementation: 'echo', timeout: 5 },
      }),
    );
    const applied = await crumbs(ws, 'apply', '-f', file);
    expect(applied.code).toBe(0);
    expect(applied.err).toMatch(/^warning: tool-echo: context\.timeout: unknown field/m);

    const putCli = await crumbs(
      ws,
      'put',
      '--schema',
      'agent.def.v1',
      '--context',
      JSON.stringify({ ...misplaced, agent_id: 'weather2' }),
    );
    expect(putCli.code).toBe(0);
    expect(putCli.err).toMatch(/warning: .*: context\.request_transform: unknown field/);

    const note = await c.call('PUT', '/note-1', {
      schema_name: 'agent.request.v1',
      context: { agent: 'weather', input: { city: 'Oslo' } },
    });
    expect(note.headers.get('warning')).toBeNull();
    const explained = await crumbs(ws, 'explain', 'agent-weather', 'note-1');
    expect(explained.err).toMatch(/warning: agent-weather: context\.request_transform: unknown field/);
    expect(explained.out).toContain('note-1 triggers agent-weather');
  });

  it('makes a context builder invalid when an update trigger names a schema that is not a trigger', async () => {
    const ws = uniqueWorkspace('warn');
    const c = api(ws);
    const context = {
      consumer_id: 'notes',
      update_triggers: [{ schema_name: 'note.text.v1' }],
      output: { schema_name: 'agent.context.v1' },
    };
    expect((await c.call('PUT', '/ctx-notes', { schema_name: 'context.config.v1', context })).status).toBe(
      201,
    );
    const status = await statusOf(c, 'ctx-notes');
    expect(status.context.state).toBe('invalid');
    expect(status.context.errors).toEqual([
      { path: 'update_triggers[0]', message: expect.stringContaining('not a trigger schema') },
    ]);
    await c.call('PUT', '/note-2', { schema_name: 'note.text.v1', context: { text: 'hi' } });
    const explained = await crumbs(ws, 'explain', 'ctx-notes', 'note-2');
    expect(explained.code).not.toBe(0);
    expect(explained.err).toContain('not a valid definition, so no rule runs it');
    expect(explained.err).toContain('not a trigger schema');
  });
});
