/**
 * One contract for every `ExecutorStore` adapter: the same test cases run against DynamoDB Local
 * (test/integration/store-contract.test.ts) and the in-memory store (test/unit/support/memory-store.test.ts),
 * so the fast unit tests built on the in-memory store stand for what DynamoDB does.
 */
import { describe, expect, it } from 'vitest';
import { type CreateBreadcrumbInput, CreateBreadcrumbSchema } from '#shared/domain/breadcrumb.ts';
import {
  BadRequestError,
  IdempotencyKeyReuseError,
  NotFoundError,
  ValidationError,
  VersionConflictError,
} from '#shared/domain/errors.ts';
import type { ExecutorStore } from '#shared/ports/executor-store.ts';

export interface ContractSubject {
  store: ExecutorStore;
  /** A workspace no other test uses. */
  workspace: string;
}

const P = { principal: 'user:contract' };
const input = (raw: CreateBreadcrumbInput) => CreateBreadcrumbSchema.parse(raw);
const note = (n: number, tags: string[] = [], schema = 'note.text.v1') =>
  input({ schema_name: schema, title: `n${n}`, tags, context: { n } });

export function describeStoreContract(
  adapter: string,
  subject: () => Promise<ContractSubject> | ContractSubject,
) {
  describe(`ExecutorStore contract: ${adapter}`, () => {
    describe('create and read', () => {
      it('creates version 1 with checksum, writer, causation, and reads it back', async () => {
        const { store, workspace } = await subject();
        const causation = { caused_by: 'x@1', thread: 'x', hop: 2 };
        const { breadcrumb, replayed } = await store.create(workspace, note(1, ['a']), {
          ...P,
          causation,
        });
        expect(replayed).toBe(false);
        expect(breadcrumb).toMatchObject({
          workspace,
          version: 1,
          created_by: P.principal,
          updated_by: P.principal,
          tags: ['a'],
          context: { n: 1 },
          causation,
        });
        expect(breadcrumb.checksum).toMatch(/^[0-9a-f]{64}$/);
        expect(await store.get(workspace, breadcrumb.id)).toEqual(breadcrumb);
        expect(await store.getVersion(workspace, breadcrumb.id, 1)).toEqual(breadcrumb);
        await expect(store.getVersion(workspace, breadcrumb.id, 2)).rejects.toBeInstanceOf(NotFoundError);
      });

      it('replays a caller-chosen id that exists: the original, nothing written', async () => {
        const { store, workspace } = await subject();
        const first = await store.create(workspace, note(1), { ...P, id: 'chosen-1' });
        const again = await store.create(workspace, note(2), { principal: 'tool:other', id: 'chosen-1' });
        expect(again).toEqual({ breadcrumb: first.breadcrumb, replayed: true });
        expect((await store.history(workspace, 'chosen-1', { limit: 10 })).items).toHaveLength(1);
      });

      it('replays an Idempotency-Key with the same request and refuses it for another', async () => {
        const { store, workspace } = await subject();
        const first = await store.create(workspace, note(1), { ...P, idempotencyKey: 'k1' });
        const again = await store.create(workspace, note(1), { ...P, idempotencyKey: 'k1' });
        expect(again).toEqual({ breadcrumb: first.breadcrumb, replayed: true });
        await expect(store.create(workspace, note(2), { ...P, idempotencyKey: 'k1' })).rejects.toBeInstanceOf(
          IdempotencyKeyReuseError,
        );
      });

      it('keeps workspaces apart', async () => {
        const { store, workspace } = await subject();
        const { breadcrumb } = await store.create(workspace, note(1), P);
        await expect(store.get(`${workspace}-other`, breadcrumb.id)).rejects.toBeInstanceOf(NotFoundError);
        expect(
          (await store.list({ workspace: `${workspace}-other`, schema_name: 'note.text.v1', limit: 5 }))
            .items,
        ).toEqual([]);
      });

      it('reads an expired breadcrumb as gone and lists it nowhere', async () => {
        const { store, workspace } = await subject();
        const { breadcrumb } = await store.create(
          workspace,
          input({ schema_name: 'note.text.v1', tags: ['gone'], context: {}, expires_at: 1_000_000 }),
          P,
        );
        await expect(store.get(workspace, breadcrumb.id)).rejects.toBeInstanceOf(NotFoundError);
        expect((await store.list({ workspace, tag: 'gone', limit: 5 })).items).toEqual([]);
      });

      it('refuses a context nested deeper than DynamoDB allows', async () => {
        const { store, workspace } = await subject();
        let deep: Record<string, unknown> = { leaf: 1 };
        for (let i = 0; i < 32; i++) deep = { d: deep };
        // Not through CreateBreadcrumbSchema (which refuses it too): the store is the last line for every writer.
        const unchecked = { schema_name: 'note.text.v1', title: '', tags: [], context: deep };
        await expect(store.create(workspace, unchecked, P)).rejects.toBeInstanceOf(ValidationError);
      });
    });

    describe('update and delete', () => {
      it('updates with If-Match, keeps history newest first, and refuses a stale version', async () => {
        const { store, workspace } = await subject();
        const { breadcrumb } = await store.create(workspace, note(1, ['a']), P);
        const v2 = await store.update(
          workspace,
          breadcrumb.id,
          { tags: ['b'], context: { n: 2 } },
          { principal: 'agent:x', expectedVersion: 1 },
        );
        expect(v2).toMatchObject({ version: 2, tags: ['b'], updated_by: 'agent:x', created_by: P.principal });
        await expect(
          store.update(workspace, breadcrumb.id, { title: 'x' }, { ...P, expectedVersion: 1 }),
        ).rejects.toBeInstanceOf(VersionConflictError);
        await store.update(workspace, breadcrumb.id, { title: 'three' }, P);
        const first = await store.history(workspace, breadcrumb.id, { limit: 2 });
        expect(first.items.map((v) => v.version)).toEqual([3, 2]);
        const rest = await store.history(workspace, breadcrumb.id, {
          limit: 2,
          cursor: first.next_cursor ?? '',
        });
        expect(rest.items.map((v) => v.version)).toEqual([1]);
        expect(rest.next_cursor).toBeNull();
        expect((await store.list({ workspace, tag: 'a', limit: 5 })).items).toEqual([]);
        expect((await store.list({ workspace, tag: 'b', limit: 5 })).items.map((b) => b.version)).toEqual([
          3,
        ]);
      });

      it('keeps the causation of the last write that gave one', async () => {
        const { store, workspace } = await subject();
        const causation = { caused_by: 'a@1', thread: 'a', hop: 1 };
        const { breadcrumb } = await store.create(workspace, note(1), { ...P, causation });
        const updated = await store.update(workspace, breadcrumb.id, { title: 't' }, P);
        expect(updated.causation).toEqual(causation);
      });

      it('replaces 50 tags with 50 others in one update (tag entries are not part of the write)', async () => {
        const { store, workspace } = await subject();
        const tags = (p: string) => Array.from({ length: 50 }, (_, i) => `${p}${i}`);
        const { breadcrumb } = await store.create(workspace, note(1, tags('a')), P);
        const updated = await store.update(workspace, breadcrumb.id, { tags: tags('b') }, P);
        expect(updated.version).toBe(2);
        expect((await store.get(workspace, breadcrumb.id)).tags).toEqual(tags('b'));
        // Its first tag is listed with the write itself.
        expect((await store.list({ workspace, tag: 'b0', limit: 5 })).items.map((i) => i.id)).toEqual([
          breadcrumb.id,
        ]);
        expect((await store.list({ workspace, tag: 'a0', limit: 5 })).items).toEqual([]);
      });

      it('deletes with If-Match; the id then reads as gone, and stays taken', async () => {
        const { store, workspace } = await subject();
        const { breadcrumb } = await store.create(workspace, note(1, ['d']), { ...P, id: 'to-delete' });
        await expect(store.delete(workspace, 'to-delete', { expectedVersion: 2 })).rejects.toBeInstanceOf(
          VersionConflictError,
        );
        await store.delete(workspace, breadcrumb.id, { expectedVersion: 1 });
        await expect(store.get(workspace, 'to-delete')).rejects.toBeInstanceOf(NotFoundError);
        await expect(store.history(workspace, 'to-delete', { limit: 5 })).rejects.toBeInstanceOf(
          NotFoundError,
        );
        expect((await store.list({ workspace, tag: 'd', limit: 5 })).items).toEqual([]);
        await expect(store.create(workspace, note(2), { ...P, id: 'to-delete' })).rejects.toBeInstanceOf(
          NotFoundError,
        );
      });
    });

    describe('list', () => {
      it('lists by schema, tag, or both, newest write first, in pages', async () => {
        const { store, workspace } = await subject();
        const ids: string[] = [];
        for (let i = 0; i < 7; i++) {
          ids.push((await store.create(workspace, note(i, ['t', `m${i % 2}`]), P)).breadcrumb.id);
        }
        await store.create(workspace, note(99, ['t'], 'other.thing.v1'), P);
        // Updating moves a breadcrumb to the front (a later millisecond: equal times order by id).
        await new Promise((r) => setTimeout(r, 5));
        await store.update(workspace, ids[0] ?? '', { title: 'touched' }, P);
        const all: string[] = [];
        let cursor: string | undefined;
        do {
          const page = await store.list({
            workspace,
            schema_name: 'note.text.v1',
            limit: 3,
            ...(cursor ? { cursor } : {}),
          });
          expect(page.items.length).toBeLessThanOrEqual(3);
          all.push(...page.items.map((b) => b.id));
          cursor = page.next_cursor ?? undefined;
        } while (cursor);
        expect(all).toEqual([ids[0], ...ids.slice(1).reverse()]);
        expect((await store.list({ workspace, tag: 't', limit: 20 })).items).toHaveLength(8);
        // A breadcrumb's further tags may be listed a moment after the write (the stream's delay on DynamoDB).
        const both = await settled(
          () => store.list({ workspace, schema_name: 'note.text.v1', tag: 'm1', limit: 20 }),
          (page) => page.items.length === 3,
        );
        expect(both.items.map((b) => b.context.n)).toEqual([5, 3, 1]);
      });

      it('refuses a listing without schema or tag, and a cursor of another listing', async () => {
        const { store, workspace } = await subject();
        for (let i = 0; i < 3; i++) await store.create(workspace, note(i, ['x']), P);
        await expect(store.list({ workspace, limit: 5 })).rejects.toBeInstanceOf(BadRequestError);
        const page = await store.list({ workspace, tag: 'x', limit: 1 });
        await expect(
          store.list({ workspace, schema_name: 'note.text.v1', limit: 1, cursor: page.next_cursor ?? '' }),
        ).rejects.toBeInstanceOf(BadRequestError);
        await expect(
          store.list({ workspace, tag: 'x', limit: 1, cursor: 'garbage!' }),
        ).rejects.toBeInstanceOf(BadRequestError);
      });
    });

    describe('list past what it cannot hand out', () => {
      /** Writes `n` breadcrumbs at once (25 at a time), each newer than whatever was written before the call. */
      const many = async (
        store: ExecutorStore,
        workspace: string,
        n: number,
        make: (i: number) => ReturnType<typeof note>,
      ) => {
        for (let i = 0; i < n; i += 25) {
          await Promise.all(
            Array.from({ length: Math.min(25, n - i) }, (_, j) => store.create(workspace, make(i + j), P)),
          );
        }
      };
      const expired = (i: number, tags: string[], schema = 'note.text.v1') =>
        input({ schema_name: schema, title: `x${i}`, tags, context: { i }, expires_at: 1_000_000 });

      it('finds the one live breadcrumb under 200 newer expired ones: by schema, by tag', async () => {
        const { store, workspace } = await subject();
        const { breadcrumb: live } = await store.create(workspace, note(1, ['busy']), P);
        await new Promise((r) => setTimeout(r, 5));
        await many(store, workspace, 200, (i) => expired(i, ['busy']));
        const bySchema = await store.list({ workspace, schema_name: 'note.text.v1', limit: 1 });
        expect(bySchema.items.map((b) => b.id)).toEqual([live.id]);
        expect(bySchema.read_bound).toBeUndefined();
        const byTag = await store.list({ workspace, tag: 'busy', limit: 1 });
        expect(byTag.items.map((b) => b.id)).toEqual([live.id]);
        expect(byTag.read_bound).toBeUndefined();
      });

      it('finds it in a schema × tag merge under 200 newer breadcrumbs of another schema and 200 expired ones', async () => {
        const { store, workspace } = await subject();
        const { breadcrumb: live } = await store.create(workspace, note(1, ['first', 'busy']), P);
        await new Promise((r) => setTimeout(r, 5));
        await many(store, workspace, 200, (i) => note(i, ['first', 'busy'], 'other.thing.v1'));
        await many(store, workspace, 200, (i) => expired(i, ['first', 'busy']));
        // `busy` is a further tag: its entries are tag items, which may trail the write (the stream's delay).
        const page = await settled(
          () => store.list({ workspace, schema_name: 'note.text.v1', tag: 'busy', limit: 1 }),
          (p) => p.items.length === 1,
        );
        expect(page.items.map((b) => b.id)).toEqual([live.id]);
        expect(page.read_bound).toBeUndefined();
      });
    });

    describe('context views', () => {
      it('applies instance hints over schema defaults from schema.def.v1; the full view stays stored', async () => {
        const { store, workspace } = await subject();
        await store.create(
          workspace,
          input({
            schema_name: 'schema.def.v1',
            tags: ['defines:person.v1'],
            context: { llm_hints: { exclude: ['secret'] } },
          }),
          P,
        );
        const plain = await store.create(
          workspace,
          input({ schema_name: 'person.v1', context: { name: 'Ada', secret: 's3' } }),
          P,
        );
        const hinted = await store.create(
          workspace,
          input({
            schema_name: 'person.v1',
            context: { name: 'Bob', secret: 'x' },
            llm_hints: { transform: { who: { type: 'format', format: '{name}' } } },
          }),
          P,
        );
        expect((await store.getContextView(workspace, plain.breadcrumb.id)).context).toEqual({ name: 'Ada' });
        expect((await store.getContextView(workspace, hinted.breadcrumb.id)).context).toEqual({ who: 'Bob' });
        const views = await store.contextViews(workspace, [plain.breadcrumb, hinted.breadcrumb]);
        expect(views.map((v) => v.context)).toEqual([{ name: 'Ada' }, { who: 'Bob' }]);
        expect((await store.get(workspace, plain.breadcrumb.id)).context).toEqual({
          name: 'Ada',
          secret: 's3',
        });
      });
    });

    describe('upsert', () => {
      it('creates, then writes nothing for the same content, then replaces what differs', async () => {
        const { store, workspace } = await subject();
        const created = await store.upsert(workspace, 'up-1', note(1, ['a']), P);
        expect(created.outcome).toBe('created');
        const same = await store.upsert(workspace, 'up-1', note(1, ['a']), { principal: 'agent:other' });
        expect(same).toEqual({ breadcrumb: created.breadcrumb, outcome: 'unchanged' });
        const changed = await store.upsert(workspace, 'up-1', note(2, ['b']), { principal: 'agent:other' });
        expect(changed.outcome).toBe('updated');
        expect(changed.breadcrumb).toMatchObject({ version: 2, tags: ['b'], updated_by: 'agent:other' });
        expect((await store.history(workspace, 'up-1', { limit: 10 })).items).toHaveLength(2);
      });

      it('honours If-Match and If-None-Match, and never changes the schema', async () => {
        const { store, workspace } = await subject();
        await store.upsert(workspace, 'up-2', note(1), P);
        await expect(
          store.upsert(workspace, 'up-2', note(2), { ...P, expectedVersion: 3 }),
        ).rejects.toBeInstanceOf(VersionConflictError);
        await expect(
          store.upsert(workspace, 'up-2', note(2), { ...P, createOnly: true }),
        ).rejects.toBeInstanceOf(VersionConflictError);
        await expect(
          store.upsert(workspace, 'up-2', note(2, [], 'other.thing.v1'), P),
        ).rejects.toBeInstanceOf(ValidationError);
        await expect(
          store.upsert(workspace, 'up-missing', note(1), { ...P, expectedVersion: 1 }),
        ).rejects.toBeInstanceOf(NotFoundError);
        const ok = await store.upsert(workspace, 'up-2', note(2), { ...P, expectedVersion: 1 });
        expect(ok).toMatchObject({ outcome: 'updated', breadcrumb: { version: 2 } });
      });

      it('keeps history linear when writers race: every distinct content lands once', async () => {
        const { store, workspace } = await subject();
        await store.upsert(workspace, 'up-3', note(0), P);
        const results = await Promise.all(
          [1, 2, 3, 4].map((n) => store.upsert(workspace, 'up-3', note(n), P)),
        );
        expect(results.every((r) => r.outcome === 'updated')).toBe(true);
        const history = (await store.history(workspace, 'up-3', { limit: 10 })).items;
        expect(history.map((v) => v.version)).toEqual([5, 4, 3, 2, 1]);
        expect(new Set(history.map((v) => v.context.n))).toEqual(new Set([0, 1, 2, 3, 4]));
      });

      it('clears hints and expiry that the new content leaves out (a replace, not a patch)', async () => {
        const { store, workspace } = await subject();
        await store.upsert(
          workspace,
          'up-4',
          input({ schema_name: 'note.text.v1', context: { a: 1 }, llm_hints: { exclude: ['a'] } }),
          P,
        );
        const replaced = await store.upsert(
          workspace,
          'up-4',
          input({ schema_name: 'note.text.v1', context: { a: 1 } }),
          P,
        );
        expect(replaced.outcome).toBe('updated');
        expect(replaced.breadcrumb.llm_hints).toBeUndefined();
      });
    });
  });
}

/** `read()` once `done` holds of it, or its last answer after 15 s (the assertion after it then fails). */
async function settled<T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > deadline) return value;
    await new Promise((r) => setTimeout(r, 50));
  }
}
