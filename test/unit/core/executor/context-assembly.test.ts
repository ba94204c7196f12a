import { describe, expect, it } from 'vitest';
import { assembleContext } from '#shared/core/executor/context-assembly.ts';
import type { Breadcrumb, ContextView } from '#shared/domain/breadcrumb.ts';
import { type Selector, type SelectorInput, SelectorSchema } from '#shared/domain/selector.ts';
import type { ListQuery } from '#shared/ports/breadcrumb-store.ts';
import type { ExecutorStore } from '#shared/ports/executor-store.ts';
import type { VectorSearch } from '#shared/ports/vector-search.ts';
import { InMemoryBreadcrumbStore } from '../../../support/memory/breadcrumb-store.ts';

function crumb(id: string, schema: string, tags: string[], context: Record<string, unknown>): Breadcrumb {
  return {
    id,
    workspace: 'ws',
    schema_name: schema,
    title: id,
    tags,
    context,
    version: 1,
    checksum: 'x',
    created_at: '2026-01-01T00:00:00.000Z',
    updated_at: '2026-01-01T00:00:00.000Z',
    created_by: 'user:a',
    updated_by: 'user:a',
  };
}

const view = (b: Breadcrumb): ContextView => ({
  id: b.id,
  schema_name: b.schema_name,
  title: b.title,
  tags: b.tags,
  version: b.version,
  updated_at: b.updated_at,
  // A context view with hints applied: marks that views, not raw records, were used.
  context: { ...b.context, viewed: true },
});

/** Newest first: the order of `records`. */
function fakeStore(records: Breadcrumb[], failing: string[] = []): ExecutorStore & { queries: ListQuery[] } {
  const queries: ListQuery[] = [];
  return {
    queries,
    async list(query: ListQuery) {
      queries.push(query);
      if (query.schema_name && failing.includes(query.schema_name)) throw new Error('DynamoDB is on fire');
      const items = records.filter(
        (r) =>
          (query.schema_name === undefined || r.schema_name === query.schema_name) &&
          (query.tag === undefined || r.tags.includes(query.tag)),
      );
      return { items: items.slice(0, query.limit), next_cursor: null };
    },
    async contextViews(_ws: string, rs: readonly Breadcrumb[]) {
      return rs.map(view);
    },
  } as unknown as ExecutorStore & { queries: ListQuery[] };
}

const sel = (s: SelectorInput): Selector => SelectorSchema.parse(s);
const trigger = crumb('t1', 'user.message.v1', [], { content: 'hello there' });

async function assemble(selectors: SelectorInput[], store: ExecutorStore, vectorSearch?: VectorSearch) {
  return assembleContext(
    { workspace: 'ws', trigger, triggerView: view(trigger), selectors: selectors.map(sel) },
    { store, vectorSearch },
  );
}

describe('assembleContext', () => {
  const records = [
    crumb('p3', 'browser.page.context.v1', ['tab:2'], { url: 'c', lang: 'de' }),
    crumb('p2', 'browser.page.context.v1', ['tab:1'], { url: 'b', lang: 'en' }),
    crumb('p1', 'browser.page.context.v1', ['tab:1'], { url: 'a', lang: 'en' }),
    crumb('r1', 'tool.response.v1', ['x'], { n: 1 }),
  ];

  it('fetches latest as one context view, recent as a list, event_data as the trigger, keyed as in the seeds', async () => {
    const ctx = await assemble(
      [
        { schema_name: 'browser.page.context.v1', fetch: 'latest' },
        { schema_name: 'tool.response.v1', fetch: { method: 'recent', limit: 5 } },
        { schema_name: 'user.message.v1', role: 'context', fetch: 'event_data', key: 'message' },
      ],
      fakeStore(records),
    );
    expect(ctx).toEqual({
      trigger: { content: 'hello there', viewed: true },
      browser_context: { url: 'c', lang: 'de', viewed: true },
      tool_results: [{ n: 1, viewed: true }],
      message: { content: 'hello there', viewed: true },
    });
  });

  it("applies the selector's tags and context_match", async () => {
    const ctx = await assemble(
      [
        { schema_name: 'browser.page.context.v1', any_tags: ['tab:1'], fetch: 'latest', key: 'tab1' },
        {
          schema_name: 'browser.page.context.v1',
          context_match: [{ path: '$.lang', op: 'eq', value: 'en' }],
          fetch: { method: 'recent', limit: 5 },
          key: 'english',
        },
        { schema_name: 'browser.page.context.v1', all_tags: ['tab:9'], fetch: 'latest', key: 'none' },
      ],
      fakeStore(records),
    );
    expect(ctx.tab1).toEqual({ url: 'b', lang: 'en', viewed: true });
    expect(ctx.english).toEqual([
      { url: 'b', lang: 'en', viewed: true },
      { url: 'a', lang: 'en', viewed: true },
    ]);
    expect(ctx.none).toBeNull();
  });

  it('reports a failing source under its key instead of dropping it, and fetches the rest', async () => {
    const ctx = await assemble(
      [
        { schema_name: 'browser.page.context.v1', fetch: 'latest' },
        { schema_name: 'tool.response.v1', fetch: 'recent' },
        { schema_name: 'memory.v1', fetch: { method: 'vector', nn: 3 } },
      ],
      fakeStore(records, ['browser.page.context.v1']),
    );
    expect(ctx.browser_context).toEqual({ error: expect.stringContaining('DynamoDB is on fire') });
    expect(ctx.memory_v1).toEqual({ error: expect.stringContaining('vector search is not available') });
    expect(ctx.tool_results).toEqual([{ n: 1, viewed: true }]);
  });

  it("asks the vector search for the trigger's text and keeps the nearest matches", async () => {
    const asked: unknown[] = [];
    const vectorSearch: VectorSearch = {
      async search(query) {
        asked.push(query);
        return [
          { id: 'm1', score: 0.9, breadcrumb: view(crumb('m1', 'memory.v1', ['keep'], { text: 'one' })) },
          { id: 'm2', score: 0.8, breadcrumb: view(crumb('m2', 'memory.v1', [], { text: 'two' })) },
        ];
      },
    };
    const ctx = await assemble(
      [{ schema_name: 'memory.v1', any_tags: ['keep'], fetch: { method: 'vector', nn: 1 } }],
      fakeStore([]),
      vectorSearch,
    );
    expect(asked).toEqual([
      { workspace: 'ws', schemaName: 'memory.v1', text: 'hello there', nn: 3, excludeIds: ['t1'] },
    ]);
    expect(ctx.memory_v1).toEqual([{ text: 'one', viewed: true }]);
  });

  describe('past what a listing cannot hand out', () => {
    const P = { principal: 'user:a' };
    /** One live note, then `expired` newer notes that TTL has not removed yet. */
    async function buried(expired: number, readBound?: number) {
      const store = new InMemoryBreadcrumbStore(readBound !== undefined ? { readBound } : {});
      const { breadcrumb: live } = await store.create(
        'ws',
        { schema_name: 'note.v1', title: 'live', tags: ['busy'], context: { live: true } },
        P,
      );
      await new Promise((r) => setTimeout(r, 2));
      for (let i = 0; i < expired; i++) {
        await store.create(
          'ws',
          { schema_name: 'note.v1', title: `x${i}`, tags: ['busy'], context: { i }, expires_at: 1_000_000 },
          P,
        );
      }
      return { store, live };
    }

    it('finds the live breadcrumb under 200 newer expired ones, by schema and by schema × tag', async () => {
      const { store } = await buried(200);
      const ctx = await assemble(
        [
          { schema_name: 'note.v1', fetch: 'latest', key: 'bySchema' },
          { schema_name: 'note.v1', all_tags: ['busy'], fetch: 'latest', key: 'byTag' },
          {
            schema_name: 'note.v1',
            all_tags: ['busy'],
            fetch: { method: 'recent', limit: 3 },
            key: 'recent',
          },
        ],
        store,
      );
      expect(ctx.bySchema).toEqual({ live: true });
      expect(ctx.byTag).toEqual({ live: true });
      expect(ctx.recent).toEqual([{ live: true }]);
    });

    it('goes on from a page that stopped at the read bound, and says so when its own bound stops it', async () => {
      // Each listing call reads 30 entries at most: the live note lies past three calls, within the four allowed.
      const within = await buried(100, 30);
      expect(await assemble([{ schema_name: 'note.v1', fetch: 'latest' }], within.store)).toMatchObject({
        note_v1: { live: true },
      });
      // Past four calls: not `null` (nothing there) but an error naming the bound.
      const past = await buried(200, 30);
      const ctx = await assemble([{ schema_name: 'note.v1', fetch: 'latest' }], past.store);
      expect(ctx.note_v1).toEqual({ error: expect.stringContaining('read bound') });
    });
  });
});
