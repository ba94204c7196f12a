/**
 * Threads, the change stream, definitions and errors through the HTTP API and the CLI, on the shared local stack.
 */

import { describe, expect, it } from 'vitest';
import { type ChangeEvent, CrumbsClient } from '#cli/api-client.ts';
import { main } from '#cli/main.ts';
import { topology } from '#shared/topology.ts';
import { eventually, localStack, uniqueWorkspace } from '../support/local.ts';

function client(workspace: string): CrumbsClient {
  const { api, token } = localStack();
  return new CrumbsClient({ endpoint: api, token, workspace });
}

async function cli(args: string[]): Promise<{ code: number; out: string; err: string }> {
  const { api, token } = localStack();
  let out = '';
  let err = '';
  const code = await main([...args, '--endpoint', api, '--token', token], {
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

describe('threads', () => {
  it('returns the chat demo thread in causal order, with the calculator round trip, from any breadcrumb in it', async () => {
    const c = client('demo');
    const message = await c.create({
      schema_name: 'user.message.v1',
      title: 'what is 17*23?',
      tags: ['user:message', `session:${uniqueWorkspace('trace')}`],
      context: { message: 'what is 17*23?', session: 'trace' },
    });
    const answer = await eventually(
      async () =>
        (await c.thread(message.id)).nodes.find((n) => n.schema_name === 'agent.response.v1') ?? undefined,
      45_000,
      300,
    );
    const view = await c.thread(answer.id);
    expect(view.thread).toBe(message.id);
    const schemas = view.nodes.map((n) => n.schema_name);
    expect(schemas[0]).toBe('user.message.v1');
    for (const s of ['agent.context.v1', 'tool.request.v1', 'tool.response.v1', 'agent.response.v1']) {
      expect(schemas).toContain(s);
    }
    // Causal order: every node comes after the node it answers (the breadcrumb its causation names).
    const position = new Map(view.nodes.map((n, i) => [n.id, i]));
    for (const n of view.nodes.slice(1)) {
      expect(n.parent, n.schema_name).not.toBeNull();
      expect(position.get(n.parent!)).toBeLessThan(position.get(n.id)!);
      const parent = view.nodes[position.get(n.parent!)!]!;
      expect(n.causation?.caused_by.startsWith(`${parent.id}@`)).toBe(true);
      expect(n.hop_ms).not.toBeNull();
    }
    const response = view.nodes.find((n) => n.schema_name === 'tool.response.v1')!;
    expect(response).toMatchObject({
      writer: 'tool:calculator',
      definition: { kind: 'tool', name: 'calculator' },
    });
    expect(view.nodes.find((n) => n.id === response.parent)?.schema_name).toBe('tool.request.v1');

    const trace = await cli(['trace', answer.id, '-w', 'demo']);
    expect(trace.code, trace.err).toBe(0);
    expect(trace.out).toContain(`thread ${message.id}`);
    expect(trace.out).toMatch(/└─ .*tool\.response\.v1 \[success\].*tool:calculator {2}hop \d/);
  });

  it('marks error answers with their error, and answers 404 for an unknown thread', async () => {
    const ws = uniqueWorkspace('thr');
    const c = client(ws);
    const root = await c.create({ schema_name: 'user.message.v1', context: { message: 'hi' } });
    const { localStore } = await import('../support/local.ts');
    const store = localStore();
    await store.create(
      ws,
      {
        schema_name: 'agent.error.v1',
        title: 'helper failed',
        tags: [],
        context: { error: 'model timed out' },
      },
      {
        principal: 'agent:helper',
        causation: { caused_by: `${root.id}@1`, thread: root.id, hop: 1 },
      },
    );
    const view = await c.thread(root.id);
    expect(view.nodes.map((n) => [n.schema_name, n.outcome, n.error])).toEqual([
      ['user.message.v1', 'ok', undefined],
      ['agent.error.v1', 'error', 'model timed out'],
    ]);
    await expect(c.thread('no-such-thread')).rejects.toMatchObject({ status: 404 });
  });
});

describe('the change stream', () => {
  it('delivers writes in order and resumes from Last-Event-ID without gaps or duplicates', async () => {
    const c = client(uniqueWorkspace('chg'));
    const start = await c.changes({ wait: 0 });
    expect(start.events).toEqual([]);
    expect(start.lastEventId).toBeTruthy();

    const seen: ChangeEvent[] = [];
    let lastEventId = start.lastEventId;
    const collect = async (count: number) => {
      await eventually(
        async () => {
          const next = await c.changes({ lastEventId, wait: 2 });
          seen.push(...next.events);
          lastEventId = next.lastEventId;
          return seen.length >= count ? true : undefined;
        },
        20_000,
        0,
      );
    };

    const first = await Promise.all(
      [1, 2, 3].map((n) => c.create({ schema_name: 'note.v1', context: { n } })),
    );
    await collect(3);
    const second = await c.update(first[0]!.id, { title: 'changed' });
    await c.delete(first[1]!.id);
    await collect(5);
    // One more poll after everything settled: nothing new, nothing repeated.
    const after = await c.changes({ lastEventId, wait: 1 });
    seen.push(...after.events);

    expect(seen.map((e) => `${e.type} ${e.id} v${e.version}`).sort()).toEqual(
      [
        ...first.map((b) => `created ${b.id} v1`),
        `updated ${second.id} v2`,
        `deleted ${first[1]!.id} v1`,
      ].sort(),
    );
    const cursors = new Set(seen.map((e) => `${e.id}@${e.version}:${e.type}`));
    expect(cursors.size).toBe(seen.length);
  });

  it('filters by schema, tag and thread, gives full records on request, and refuses a bad Last-Event-ID', async () => {
    const c = client(uniqueWorkspace('chf'));
    const { lastEventId } = await c.changes({ wait: 0 });
    await c.create({ schema_name: 'note.v1', tags: ['keep'], context: { n: 1 } });
    await c.create({ schema_name: 'other.v1', tags: ['keep'], context: { n: 2 } });
    await c.create({ schema_name: 'note.v1', context: { n: 3 } });
    const got = await eventually(async () => {
      const r = await c.changes({ lastEventId, schema_name: 'note.v1', tag: 'keep', view: 'full', wait: 2 });
      return r.events.length > 0 ? r.events : undefined;
    });
    expect(got).toHaveLength(1);
    expect(got[0]).toMatchObject({ type: 'created', schema_name: 'note.v1', record: { context: { n: 1 } } });
    await expect(c.changes({ lastEventId: 'bm90IGEgY3Vyc29y', wait: 0 })).rejects.toMatchObject({
      status: 400,
    });
  });

  it('`crumbs tail --once` prints the newest changes', async () => {
    const ws = uniqueWorkspace('tail');
    const c = client(ws);
    await c.create({ schema_name: 'note.v1', title: 'first', context: {} });
    await c.create({ schema_name: 'note.v1', title: 'second', context: {} });
    const out = await eventually(async () => {
      const r = await cli(['tail', '--once', '--backlog', '5', '-w', ws]);
      return r.out.includes('second') ? r.out : undefined;
    });
    const lines = out.trim().split('\n');
    expect(lines.map((l) => l.split(/\s{2,}/)[1])).toEqual(['created', 'created']);
    expect(out.indexOf('first')).toBeLessThan(out.indexOf('second'));
  });
});

describe('definitions and errors', () => {
  it('lists the demo definitions with their rule state and explains a trigger', async () => {
    const c = client('demo');
    const defs = await eventually(async () => {
      const { items } = await c.definitions();
      const agent = items.find((d) => d.id === 'demo-agent-chat-assistant');
      return agent?.state === 'active' ? items : undefined;
    }, 20_000);
    expect(defs.some((d) => d.schema_name === 'tool.def.v1')).toBe(true);
    // Which bus of the pool holds each active definition's rule (the shared stack has one bus).
    expect(defs.find((d) => d.id === 'demo-agent-chat-assistant')).toMatchObject({
      event_bus: topology.bus.name,
    });

    const message = await c.create({
      schema_name: 'user.message.v1',
      tags: ['user:message'],
      context: { message: 'x' },
    });
    const { api, token } = localStack();
    const explain = await fetch(
      `${api}/v1/workspaces/demo/definitions/demo-context-chat-assistant/explain?breadcrumb=${message.id}`,
      { headers: { authorization: `Bearer ${token}` } },
    );
    expect(explain.status).toBe(200);
    expect(await explain.json()).toMatchObject({
      matched: true,
      matchedSelector: 0,
      rule: {
        state: 'active',
        name: expect.stringMatching(/^crumbs-def-demo-/),
        event_bus: topology.bus.name,
      },
    });
  });

  it('lists error answers newest first with their thread', async () => {
    const ws = uniqueWorkspace('err');
    const c = client(ws);
    await c.create({ schema_name: 'tool.response.v1', context: { status: 'success', tool: 'echo' } });
    const failed = await c.create({
      schema_name: 'tool.response.v1',
      context: { status: 'error', error: 'boom' },
    });
    const stopped = await c.create({
      schema_name: 'system.loop_stopped.v1',
      context: { reason: 'too deep' },
    });
    const { items } = await c.errors();
    expect(items.map((i) => [i.id, i.outcome, i.error, i.thread])).toEqual([
      [stopped.id, 'loop_stopped', 'too deep', stopped.id],
      [failed.id, 'error', 'boom', failed.id],
    ]);
  });
});
