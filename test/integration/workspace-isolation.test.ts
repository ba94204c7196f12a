/**
 * Workspaces are the tenant boundary, locally as on AWS:
 * - a token scoped (CRUMBS_TOKENS) to another workspace gets 403 on every route and method, and changes nothing;
 * - two workspaces with identical definitions (the demo's agent, context builder and tools): every write in one
 *   reaches only its own — routing, context fetches (recent and vector), breadcrumb.search, the search route.
 * Along the way, every path that hands a breadcrumb to a model, a tool or a default read gives its context view:
 * a field `llm_hints` exclude never shows (list route, breadcrumb.search, vector search, context assembly).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { demoDefinitions } from '#local/demo.ts';
import { createApi } from '#shared/core/api/api.ts';
import type { VectorSearchDeps } from '#shared/core/stream/vector-search.ts';
import type { BreadcrumbStore } from '#shared/ports/breadcrumb-store.ts';
import {
  api,
  eventually,
  localStack,
  localStore,
  uniqueWorkspace,
  workspaceItems,
} from '../support/local.ts';

const routes = createApi({ store: {} as BreadcrumbStore, vectorSearch: {} as VectorSearchDeps }).routes;

describe('a token scoped to another workspace', () => {
  it('gets 403 problem+json on every route and method, and writes nothing', async () => {
    const { scopedToken, scopedWorkspace } = localStack();
    const ws = uniqueWorkspace('forbidden');
    // A schema without embeddings: the indexer writes nothing beside it while the requests run.
    await api(ws).call('PUT', '/x1', { schema_name: 'fuzz.note.v1', context: { a: 1 } });
    const before = await workspaceItems(ws);
    const cases = routes
      .filter((r) => !r.public)
      .flatMap((r) => r.methods.map((method) => ({ method, template: r.template })));
    expect(cases.length).toBeGreaterThanOrEqual(9);
    for (const { method, template } of cases) {
      // Every route under the workspace, breadcrumbs and runs alike, with its parameters filled in.
      const path = template
        .replace('{ws}', ws)
        .replace('{id}', 'x1')
        .replace('{run_id}', 'run-x1')
        .replace('{n}', '1');
      const query = template.endsWith('/search')
        ? '?q=hello'
        : template.endsWith('/breadcrumbs')
          ? '?tag=t'
          : '';
      const body = ['POST', 'PUT', 'PATCH'].includes(method)
        ? { schema_name: 'note.v1', context: { a: 2 } }
        : undefined;
      const res = await fetch(`${localStack().api}${path}${query}`, {
        method,
        headers: {
          authorization: `Bearer ${scopedToken}`,
          ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        },
        ...(body !== undefined ? { body: JSON.stringify(method === 'PATCH' ? { title: 'x' } : body) } : {}),
      });
      const problem = (await res.json()) as { detail?: unknown };
      expect(res.status, `${method} ${template}`).toBe(403);
      expect(res.headers.get('content-type'), `${method} ${template}`).toContain('application/problem+json');
      expect(String(problem.detail), `${method} ${template}`).toContain(ws);
    }
    expect(await workspaceItems(ws)).toEqual(before);

    // Its own workspace works, and what it writes says which token wrote it.
    const own = await api(scopedWorkspace, scopedToken).call('POST', '', {
      schema_name: 'note.v1',
      context: {},
    });
    expect(own.status).toBe(201);
    expect(own.body.created_by).toMatch(/^user:local-[0-9a-f]{8}$/);
  });
});

describe('two workspaces with identical definitions', () => {
  const [wsA, wsB] = [uniqueWorkspace('iso-a'), uniqueWorkspace('iso-b')];

  beforeAll(async () => {
    for (const ws of [wsA, wsB]) {
      const a = api(ws);
      for (const { id, input } of demoDefinitions({}))
        expect((await a.call('PUT', `/${id}`, input)).status).toBe(201);
    }
    // Every definition active in both before the first trigger (a rule applies only to later events).
    await Promise.all(
      [wsA, wsB].flatMap((ws) =>
        demoDefinitions({}).map(({ id }) =>
          eventually(async () => {
            const page = await api(ws).call(
              'GET',
              `?schema_name=definition.status.v1&tag=definition:${id}&view=full`,
            );
            const status = (page.body.items as { context: { state?: string } }[] | undefined)?.[0];
            return status?.context.state === 'active' ? true : undefined;
          }, 45_000),
        ),
      ),
    );
    // Each workspace's own notes and messages, with a field their hints keep from models.
    for (const ws of [wsA, wsB]) {
      await api(ws).call('POST', '', {
        schema_name: 'note.v1',
        tags: ['kept'],
        context: { text: `${ws} note`, secret: `${ws}-note-secret` },
        llm_hints: { exclude: ['secret'] },
      });
    }
    await api(wsB).call('POST', '', {
      schema_name: 'user.message.v1',
      tags: ['user:message'],
      context: { content: 'giraffes browse acacia leaves on the savanna', secret: `${wsB}-message-secret` },
      llm_hints: { exclude: ['secret'] },
    });
  }, 120_000);

  it('lists context views by default and stored records with view=full', async () => {
    const a = api(wsA);
    const views = (await a.call('GET', '?tag=kept')).body.items as { context: Record<string, unknown> }[];
    expect(views.map((v) => v.context)).toEqual([{ text: `${wsA} note` }]);
    const full = (await a.call('GET', '?tag=kept&view=full')).body.items as {
      context: Record<string, unknown>;
    }[];
    expect(full.map((v) => v.context)).toEqual([{ text: `${wsA} note`, secret: `${wsA}-note-secret` }]);
    expect((await a.call('GET', '?tag=kept&view=everything')).status).toBe(400);
  });

  it('routes a message in one workspace to its own agent only, with context from its own workspace only', async () => {
    const a = api(wsA);
    const message = await a.call('POST', '', {
      schema_name: 'user.message.v1',
      tags: ['user:message'],
      context: { content: 'what is 6*7?', secret: `${wsA}-message-secret` },
      llm_hints: { exclude: ['secret'] },
    });
    const thread = `thread:${String(message.body.id)}`;
    const answer = await eventually(async () => {
      const res = await a.call('GET', `?schema_name=agent.response.v1&tag=${thread}&view=full`);
      return (res.body.items as { context: Record<string, unknown> }[])[0];
    }, 45_000);
    expect(JSON.stringify(answer.context)).toContain('42');

    // The context built for A's agent: A's own messages (as context views), nothing of B's.
    const contexts = (await a.call('GET', '?schema_name=agent.context.v1&view=full')).body.items as {
      context: Record<string, unknown>;
    }[];
    const built = JSON.stringify(contexts.map((c) => c.context));
    expect(built).toContain('what is 6*7');
    expect(built).not.toContain('giraffes browse');
    expect(built).not.toContain(wsB);
    expect(built).not.toContain('-secret');

    // Nothing of it reached B: no context, request or answer for A's message there.
    const inB = JSON.stringify(await workspaceItems(wsB));
    expect(inB).not.toContain(String(message.body.id));
    expect(inB).not.toContain('6*7');
  });

  it('answers breadcrumb.search with its own workspace only, as context views', async () => {
    const a = api(wsA);
    await a.call('POST', '', {
      schema_name: 'tool.request.v1',
      context: {
        tool: 'breadcrumb.search',
        input: { schema_name: 'note.v1' },
        requestId: 'search-1',
        requestedBy: 'tester',
      },
    });
    const response = await eventually(async () => {
      const res = await a.call('GET', '?schema_name=tool.response.v1&tag=request:search-1&view=full');
      return (
        res.body.items as { context: { status: string; output?: { items: { context: unknown }[] } } }[]
      )[0];
    }, 30_000);
    expect(response.context.status).toBe('success');
    expect(response.context.output?.items.map((i) => i.context)).toEqual([{ text: `${wsA} note` }]);
    const inB = await api(wsB).call('GET', '?schema_name=tool.response.v1&tag=request:search-1');
    expect(inB.body.items).toEqual([]);
  });

  it('finds by vector search only what its own workspace holds, as context views', async () => {
    const fromA = await eventually(async () => {
      const res = await api(wsA).call('GET', '/search?q=giraffes%20acacia%20savanna&nn=10');
      const items = res.body.items as { id: string; context: Record<string, unknown> }[];
      return items.length > 0 ? items : undefined;
    });
    const b = await localStore().list({ workspace: wsB, schema_name: 'user.message.v1', limit: 10 });
    const idsOfB = new Set(b.items.map((i) => i.id));
    expect(fromA.filter((i) => idsOfB.has(i.id))).toEqual([]);
    const fromB = await eventually(async () => {
      const res = await api(wsB).call('GET', '/search?q=giraffes%20acacia%20savanna&nn=3');
      return (res.body.items as { id: string; context: Record<string, unknown> }[])[0];
    });
    expect(idsOfB.has(fromB.id)).toBe(true);
    expect(fromB.context).toEqual({ content: 'giraffes browse acacia leaves on the savanna' });
  });
});
