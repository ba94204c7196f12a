import { PutItemCommand } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { DynamoBreadcrumbStore } from '#shared/adapters/dynamodb/breadcrumb-store.ts';
import { translateConfig } from '#shared/adapters/dynamodb/items.ts';
import { NotFoundError, VersionConflictError } from '#shared/domain/errors.ts';
import { topology } from '#shared/topology.ts';
import {
  api,
  eventually,
  localDynamoClient,
  localStore,
  settledItems,
  uniqueWorkspace,
} from '../support/local.ts';

interface Recorded {
  command: string;
  input: Record<string, unknown>;
}

/** A store whose DynamoDB client records every command it sends. */
function recordingStore(): { store: DynamoBreadcrumbStore; sent: Recorded[] } {
  const sent: Recorded[] = [];
  const client = DynamoDBDocumentClient.from(localDynamoClient(), translateConfig());
  client.middlewareStack.add(
    (next, context) => async (args) => {
      sent.push({ command: String(context.commandName), input: args.input as Record<string, unknown> });
      return next(args);
    },
    { step: 'initialize', name: 'recordCommands' },
  );
  return { store: localStore(client), sent };
}

const input = (n: number, tags: string[], schema = 'note.text.v1') => ({
  schema_name: schema,
  title: `n${n}`,
  tags,
  context: { n },
});

describe('DynamoBreadcrumbStore on DynamoDB Local', () => {
  it('reads every list path with bounded Queries and no Scan', async () => {
    const ws = uniqueWorkspace();
    const { store, sent } = recordingStore();
    for (let i = 0; i < 12; i++) {
      await store.create(ws, input(i, ['t', `t${i % 3}`]), { principal: 'user:test' });
    }
    for (const query of [
      { schema_name: 'note.text.v1' },
      { tag: 't' },
      { schema_name: 'note.text.v1', tag: 't' },
    ]) {
      sent.length = 0;
      let cursor: string | undefined;
      let pages = 0;
      let total = 0;
      do {
        const page = await store.list({ workspace: ws, ...query, limit: 5, ...(cursor ? { cursor } : {}) });
        expect(page.items.length).toBeLessThanOrEqual(5);
        total += page.items.length;
        cursor = page.next_cursor ?? undefined;
        pages++;
      } while (cursor);
      expect(total).toBe(12);
      const commands = sent.map((s) => s.command);
      expect(commands).not.toContain('ScanCommand');
      for (const s of sent) {
        if (s.command === 'QueryCommand') {
          // By schema and tag, the tag's entries are read in pages of 50 and other schemas skipped.
          expect(s.input.Limit).toBe(query.schema_name && query.tag ? 50 : 5);
          // By schema: gsi1. By tag: the heads listed under it (gsi2) and its tag items (gsi1).
          expect(query.tag ? ['gsi1', 'gsi2'] : ['gsi1']).toContain(s.input.IndexName);
          expect(s.input.FilterExpression).toBeUndefined();
          expect(s.input.KeyConditionExpression).toBe('#pk = :pk');
        } else {
          expect(s.command).toBe('BatchGetItemCommand');
          const keys =
            (s.input.RequestItems as Record<string, { Keys: unknown[] }>)[topology.table.name]?.Keys ?? [];
          expect(keys.length).toBeLessThanOrEqual(5);
        }
      }
      // One Query per page and source (a source read to its end is not read again); tag listings add one
      // BatchGetItem per page.
      const queries = commands.filter((c) => c === 'QueryCommand').length;
      if (query.tag) expect(queries).toBeLessThanOrEqual(2 * pages);
      else expect(queries).toBe(pages);
    }
  });

  it('lists by schema and tag from the tag entries alone, skipping other schemas, in order, losing none', async () => {
    const ws = uniqueWorkspace();
    const { store, sent } = recordingStore();
    // Interleaved: 7 notes among 130 breadcrumbs of another schema under the same tag, so pages have to skip
    // entries, stop inside a read page, and go on past a read budget.
    const notes: string[] = [];
    for (let i = 0; i < 137; i++) {
      const schema = i % 20 === 3 ? 'note.text.v1' : 'other.thing.v1';
      const { breadcrumb } = await store.create(ws, input(i, ['shared', `i${i}`], schema), {
        principal: 'user:test',
      });
      if (schema === 'note.text.v1') notes.push(breadcrumb.id);
    }
    const expected = [...notes].reverse();
    for (const limit of [1, 2, 3, 7, 20]) {
      sent.length = 0;
      const seen: string[] = [];
      let cursor: string | undefined;
      do {
        const page = await store.list({
          workspace: ws,
          schema_name: 'note.text.v1',
          tag: 'shared',
          limit,
          ...(cursor ? { cursor } : {}),
        });
        expect(page.items.length).toBeLessThanOrEqual(limit);
        for (const item of page.items) expect(item.schema_name).toBe('note.text.v1');
        seen.push(...page.items.map((i) => i.id));
        cursor = page.next_cursor ?? undefined;
      } while (cursor);
      expect(seen).toEqual(expected);
      // Only the heads of matching entries are read.
      const headsRead = sent
        .filter((s) => s.command === 'BatchGetItemCommand')
        .reduce(
          (n, s) =>
            n +
            ((s.input.RequestItems as Record<string, { Keys: unknown[] }>)[topology.table.name]?.Keys
              .length ?? 0),
          0,
        );
      expect(headsRead).toBe(notes.length);
    }
    // The other schema, listed the same way, comes back whole too.
    const others = await store.list({
      workspace: ws,
      schema_name: 'other.thing.v1',
      tag: 'shared',
      limit: 100,
    });
    expect(others.items).toHaveLength(100);
    expect(others.next_cursor).not.toBeNull();
  });

  it('still lists tag entries written before they carried their schema (checked on the head)', async () => {
    const ws = uniqueWorkspace();
    const store = localStore();
    const ddb = DynamoDBDocumentClient.from(localDynamoClient(), translateConfig());
    const { breadcrumb } = await store.create(ws, input(1, ['legacy']), { principal: 'user:test' });
    const other = await store.create(ws, input(2, ['legacy'], 'other.thing.v1'), { principal: 'user:test' });
    // Rewrite both as the earliest layout wrote them: heads not listed by tag themselves, and a tag item without
    // schema_name, with the schema+tag index keys set.
    for (const b of [breadcrumb, other.breadcrumb]) {
      const { Item: head } = await ddb.send(
        new GetCommand({ TableName: topology.table.name, Key: { id: b.id, workspace: ws } }),
      );
      const { gsi2pk: _pk, gsi2sk: _sk, layout: _layout, ...legacyHead } = head ?? {};
      await ddb.send(new PutCommand({ TableName: topology.table.name, Item: legacyHead }));
      await ddb.send(
        new PutCommand({
          TableName: topology.table.name,
          Item: {
            id: `${b.id}#t#legacy`,
            workspace: ws,
            kind: 'tag',
            ref: b.id,
            gsi1pk: `${ws}#t#legacy`,
            gsi1sk: `${b.updated_at}#${b.id}`,
            gsi2pk: `${ws}#st#${b.schema_name}#legacy`,
            gsi2sk: `${b.updated_at}#${b.id}`,
          },
        }),
      );
    }
    const page = await store.list({ workspace: ws, schema_name: 'note.text.v1', tag: 'legacy', limit: 10 });
    expect(page.items.map((i) => i.id)).toEqual([breadcrumb.id]);
  });

  it('updates with two single-item writes: the superseded version, then the head under its version condition', async () => {
    const ws = uniqueWorkspace();
    const { store, sent } = recordingStore();
    const { breadcrumb } = await store.create(ws, input(1, ['a']), { principal: 'user:test' });
    sent.length = 0;
    await store.update(ws, breadcrumb.id, { tags: ['b'] }, { principal: 'user:test', expectedVersion: 1 });
    const writes = sent.filter((s) => s.command !== 'GetItemCommand');
    expect(writes.map((w) => w.command)).toEqual(['PutItemCommand', 'PutItemCommand']);
    const [version, head] = writes.map(
      (w) => w.input as { ConditionExpression?: string; Item?: { id?: string; kind?: string } },
    );
    expect(version?.Item).toMatchObject({ id: `${breadcrumb.id}#v#0000000001`, kind: 'version' });
    expect(head?.Item).toMatchObject({ id: breadcrumb.id, kind: 'breadcrumb', version: 2 });
    expect(head?.ConditionExpression).toContain('version = :expected');
    await expect(
      store.update(ws, breadcrumb.id, { title: 'x' }, { principal: 'user:test', expectedVersion: 1 }),
    ).rejects.toBeInstanceOf(VersionConflictError);
    expect((await store.list({ workspace: ws, tag: 'a', limit: 10 })).items).toEqual([]);
    expect((await store.list({ workspace: ws, tag: 'b', limit: 10 })).items.map((i) => i.version)).toEqual([
      2,
    ]);
  });

  it('leaves a breadcrumb as it was when a writer dies between the superseded version and the head', async () => {
    const ws = uniqueWorkspace();
    const client = DynamoDBDocumentClient.from(localDynamoClient(), translateConfig());
    let die = true;
    client.middlewareStack.add(
      (next) => async (args) => {
        const input = args.input as { Item?: { kind?: string } };
        if (die && input.Item?.kind === 'breadcrumb' && (input.Item as { version?: number }).version === 2) {
          die = false;
          throw new Error('the writer died');
        }
        return next(args);
      },
      { step: 'initialize', name: 'dieBeforeHead' },
    );
    const store = localStore(client);
    const { breadcrumb } = await store.create(ws, input(1, ['a']), { principal: 'user:test' });
    await expect(
      store.update(ws, breadcrumb.id, { title: 'lost' }, { principal: 'user:test' }),
    ).rejects.toThrow('the writer died');
    // The version item of v1 was written; it is the same record the head holds, so nothing reads differently.
    expect(await store.get(ws, breadcrumb.id)).toEqual(breadcrumb);
    expect((await store.history(ws, breadcrumb.id, { limit: 10 })).items).toEqual([breadcrumb]);
    // The retry writes the same version item again and the head after it.
    const updated = await store.update(ws, breadcrumb.id, { title: 'kept' }, { principal: 'user:test' });
    expect(updated.version).toBe(2);
    const history = await store.history(ws, breadcrumb.id, { limit: 10 });
    expect(history.items.map((r) => [r.version, r.title])).toEqual([
      [2, 'kept'],
      [1, breadcrumb.title],
    ]);
  });

  it('stops at its read bound with a short page that says so, and goes on from its cursor to what lies past it', async () => {
    const ws = uniqueWorkspace();
    const base = localStore();
    const { breadcrumb: live } = await base.create(ws, input(0, ['busy']), { principal: 'user:test' });
    await new Promise((r) => setTimeout(r, 5));
    for (let i = 0; i < 60; i += 20) {
      await Promise.all(
        Array.from({ length: 20 }, (_, j) =>
          base.create(ws, { ...input(i + j, ['busy']), expires_at: 1_000_000 }, { principal: 'user:test' }),
        ),
      );
    }
    const store = new DynamoBreadcrumbStore({
      tableName: topology.table.name,
      client: DynamoDBDocumentClient.from(localDynamoClient(), translateConfig()),
      listReadBound: 25,
    });
    for (const query of [{ schema_name: 'note.text.v1' }, { tag: 'busy' }]) {
      const first = await store.list({ workspace: ws, ...query, limit: 1 });
      expect(first.items).toEqual([]);
      expect(first.read_bound).toEqual({ entries_read: 25, bound: 25 });
      expect(first.next_cursor).not.toBeNull();
      let page = first;
      let calls = 1;
      while (page.items.length === 0 && page.next_cursor !== null && calls < 10) {
        page = await store.list({ workspace: ws, ...query, limit: 1, cursor: page.next_cursor });
        calls++;
      }
      expect(page.items.map((b) => b.id)).toEqual([live.id]);
      expect(calls).toBe(3);
    }
  });

  it('lists a routing tag through the threads of its carriers, reading a bounded amount however they are spread', async () => {
    // Attack: someone tags 150 breadcrumbs in 30 threads with one request tag, to make its listing read every thread.
    const ws = uniqueWorkspace();
    const { store, sent } = recordingStore();
    const tag = 'request:spread';
    for (let i = 0; i < 150; i++) {
      const thread = `t${i % 30}`;
      await store.create(ws, input(i, [tag, 'x']), {
        principal: 'user:test',
        causation: { caused_by: `${thread}@1`, thread, hop: 1 },
      });
    }
    // An inheritor: an output that copies the tag from its trigger has no entry of its own, and is listed too (its
    // thread is among the 20 whose carriers are newest: the bound on what such a listing reads).
    const { breadcrumb: inheritor } = await store.create(ws, input(999, [tag]), {
      principal: 'tool:echo',
      causation: { caused_by: 'x@1', thread: 't29', hop: 2 },
      causeTags: [tag],
    });
    const seen = new Set<string>();
    let cursor: string | undefined;
    let pages = 0;
    do {
      sent.length = 0;
      const page = await store.list({ workspace: ws, tag, limit: 25, ...(cursor ? { cursor } : {}) });
      for (const item of page.items) seen.add(item.id);
      // Per page: anchors (2 Queries of ≤ 100 and one BatchGetItem of ≤ 100 heads), ≤ 20 threads, the merge's own
      // reads (≤ 500 entries), one BatchGetItem of the page's heads.
      const queries = sent.filter((s) => s.command === 'QueryCommand');
      expect(queries.length).toBeLessThanOrEqual(2 + 20 + 2 + 20);
      for (const q of queries) expect(Number(q.input.Limit)).toBeLessThanOrEqual(100);
      expect(sent.filter((s) => s.command === 'BatchGetItemCommand').length).toBeLessThanOrEqual(3);
      cursor = page.next_cursor ?? undefined;
      pages++;
    } while (cursor && pages < 20);
    expect(seen.size).toBe(151);
    expect(seen).toContain(inheritor.id);
  });

  it('lists an answer under request:<its cause> through the cause, with no entry of its own', async () => {
    const ws = uniqueWorkspace();
    const store = localStore();
    const ddb = DynamoDBDocumentClient.from(localDynamoClient(), translateConfig());
    const { breadcrumb: cause } = await store.create(ws, input(1, ['ask']), {
      principal: 'user:test',
      causation: { caused_by: 'root@1', thread: 'root', hop: 1 },
    });
    const { breadcrumb: answer } = await store.create(ws, input(2, [`request:${cause.id}`]), {
      principal: 'tool:echo',
      id: 'answer-1',
      causation: { caused_by: `${cause.id}@1`, thread: 'root', hop: 2 },
    });
    const { Item } = await ddb.send(
      new GetCommand({ TableName: topology.table.name, Key: { id: answer.id, workspace: ws } }),
    );
    expect(Item?.gsi2pk).toBeUndefined();
    // Stored as positions in `tags`.
    expect(Item?.inherited).toEqual([0]);
    const page = await store.list({ workspace: ws, tag: `request:${cause.id}`, limit: 10 });
    expect(page.items.map((i) => i.id)).toEqual([answer.id]);
  });

  it('lists runs where they started, by every tag a run carries, run:<its id> read by id', async () => {
    const ws = uniqueWorkspace();
    const store = localStore();
    const ddb = DynamoDBDocumentClient.from(localDynamoClient(), translateConfig());
    const runInput = (id: string, status: string) => ({
      schema_name: 'workflow.run.v1',
      title: `${id}: ${status}`,
      tags: ['workflow:w', `run:${id}`, `run-status:${status}`, `run-status:w:${status}`],
      context: { status },
    });
    const causation = { caused_by: 'req@1', thread: 'req', hop: 1 };
    await store.create(ws, runInput('run-a', 'running'), { principal: 'workflow:w', id: 'run-a', causation });
    await store.create(ws, runInput('run-b', 'running'), { principal: 'workflow:w', id: 'run-b', causation });
    // What the run wrote inherits run:run-a from the run.
    await store.create(ws, input(1, ['run:run-a', 'step:s0']), {
      principal: 'workflow:w',
      id: 'run-a.s0.1',
      causation: { caused_by: 'run-a@1', thread: 'req', hop: 2 },
      causeTags: ['run:run-a'],
    });
    // run-a moves on and ends: listed where it started (after run-b), under its new status only.
    await store.update(ws, 'run-a', runInput('run-a', 'running'), { principal: 'workflow:w' });
    await store.update(ws, 'run-a', runInput('run-a', 'succeeded'), { principal: 'workflow:w' });
    await settledItems(ws, ddb);
    const ids = async (query: { tag?: string; schema_name?: string }) =>
      (await store.list({ workspace: ws, limit: 10, ...query })).items.map((i) => i.id);
    expect(await ids({ schema_name: 'workflow.run.v1' })).toEqual(['run-b', 'run-a']);
    expect(await ids({ tag: 'workflow:w' })).toEqual(['run-b', 'run-a']);
    expect(await ids({ tag: 'run-status:succeeded' })).toEqual(['run-a']);
    expect(await ids({ tag: 'run-status:w:running' })).toEqual(['run-b']);
    expect((await ids({ tag: 'run:run-a' })).sort()).toEqual(['run-a', 'run-a.s0.1']);
    const { Item } = await ddb.send(
      new GetCommand({ TableName: topology.table.name, Key: { id: 'run-a#t#run:run-a', workspace: ws } }),
    );
    expect(Item).toBeUndefined();
  });

  it('lists what names the request that started its thread through that thread, with no entry of its own', async () => {
    const ws = uniqueWorkspace();
    const store = localStore();
    const ddb = DynamoDBDocumentClient.from(localDynamoClient(), translateConfig());
    const { breadcrumb: request } = await store.create(ws, input(1, []), { principal: 'user:test' });
    const { breadcrumb: result } = await store.create(ws, input(2, [`request:${request.id}`, 'workflow:w']), {
      principal: 'workflow:w',
      causation: { caused_by: 'tool-x@1', thread: request.id, hop: 3 },
    });
    const { Item } = await ddb.send(
      new GetCommand({ TableName: topology.table.name, Key: { id: result.id, workspace: ws } }),
    );
    expect(Item?.gsi2pk).toBe(`${ws}#t#workflow:w`);
    const page = await store.list({ workspace: ws, tag: `request:${request.id}`, limit: 10 });
    expect(page.items.map((i) => i.id)).toEqual([result.id]);
  });

  it('replaces a deleted breadcrumb (PUT, crumbs apply) with its next version, its history kept', async () => {
    const ws = uniqueWorkspace();
    const store = localStore();
    const principal = { principal: 'user:ann' };
    await store.upsert(ws, 'agent-x', input(1, ['a']), principal);
    await store.delete(ws, 'agent-x', principal);
    // An executor's create under the id stays a replay of what was written there; a replacement brings it back.
    await expect(store.create(ws, input(9, []), { ...principal, id: 'agent-x' })).rejects.toThrow(
      NotFoundError,
    );
    const again = await store.upsert(ws, 'agent-x', input(2, ['b']), principal);
    expect(again).toMatchObject({ outcome: 'created', breadcrumb: { version: 2, title: 'n2', tags: ['b'] } });
    expect(
      (await store.history(ws, 'agent-x', { limit: 10 })).items.map((v) => [v.version, v.title]),
    ).toEqual([
      [2, 'n2'],
      [1, 'n1'],
    ]);
    expect((await store.list({ workspace: ws, tag: 'b', limit: 5 })).items.map((i) => i.id)).toEqual([
      'agent-x',
    ]);
  });

  it("builds an update from the caller's copy without reading, and still refuses one written over a change", async () => {
    const ws = uniqueWorkspace();
    const { store, sent } = recordingStore();
    const { breadcrumb } = await store.create(ws, input(1, ['a']), { principal: 'user:test' });
    sent.length = 0;
    const v2 = await store.update(
      ws,
      breadcrumb.id,
      { title: 'two' },
      { principal: 'user:test', expectedVersion: 1, current: breadcrumb, causeTags: [] },
    );
    expect(sent.map((s) => s.command)).toEqual(['PutItemCommand', 'PutItemCommand']);
    expect(v2.version).toBe(2);
    // Someone else writes v3; a writer still holding v2 cannot write over it.
    await store.update(ws, breadcrumb.id, { title: 'three' }, { principal: 'user:other' });
    await expect(
      store.update(
        ws,
        breadcrumb.id,
        { title: 'stale' },
        { principal: 'user:test', expectedVersion: 2, current: v2, causeTags: [] },
      ),
    ).rejects.toBeInstanceOf(VersionConflictError);
    expect((await store.get(ws, breadcrumb.id)).title).toBe('three');
  });

  it("never lists another workspace's breadcrumbs, whatever a tag listing's cursor names", async () => {
    // Attack: team-b forges a cursor whose sources name team-a's thread and positions.
    const store = localStore();
    const a = uniqueWorkspace();
    const b = uniqueWorkspace();
    const causation = { caused_by: 'root@1', thread: 'shared-thread', hop: 1 };
    for (let i = 0; i < 3; i++) {
      await store.create(a, input(i, ['request:same', 'thread:shared-thread']), {
        principal: 'user:a',
        causation,
      });
    }
    const { breadcrumb: own } = await store.create(b, input(9, ['request:same']), {
      principal: 'user:b',
      causation,
    });
    const forged = (tag: string) =>
      Buffer.from(
        JSON.stringify({
          tag,
          p: { h: 'start', t: 'start', 'th:shared-thread': ['anything', '9999'], 'th:other': 'start' },
        }),
      ).toString('base64url');
    for (const tag of ['request:same', 'thread:shared-thread']) {
      for (const cursor of [undefined, forged(tag)]) {
        const page = await store.list({ workspace: b, tag, limit: 50, ...(cursor ? { cursor } : {}) });
        for (const item of page.items) expect(item.workspace).toBe(b);
        if (tag === 'request:same' && cursor === undefined)
          expect(page.items.map((i) => i.id)).toEqual([own.id]);
      }
    }
  });

  it('answers a caller-chosen id that already exists with the original (executor responses)', async () => {
    const ws = uniqueWorkspace();
    const store = localStore();
    const first = await store.create(ws, input(1, []), { principal: 'tool:echo', id: 'resp-1' });
    const again = await store.create(ws, input(2, []), { principal: 'tool:echo', id: 'resp-1' });
    expect(first.replayed).toBe(false);
    expect(again.replayed).toBe(true);
    expect(again.breadcrumb.context).toEqual({ n: 1 });
  });

  it('throws NotFoundError for a breadcrumb of another workspace', async () => {
    const store = localStore();
    const { breadcrumb } = await store.create(uniqueWorkspace(), input(1, []), { principal: 'user:test' });
    await expect(store.get(uniqueWorkspace(), breadcrumb.id)).rejects.toBeInstanceOf(NotFoundError);
  });
});

describe('plain puts', () => {
  it("adopts a put over a deleted breadcrumb's id after its last version, keeping its history", async () => {
    const ws = uniqueWorkspace();
    const store = localStore();
    const ddb = DynamoDBDocumentClient.from(localDynamoClient(), translateConfig());
    await store.create(ws, input(1, ['a']), { principal: 'user:test', id: 'reused' });
    await store.update(ws, 'reused', { title: 'second' }, { principal: 'user:test' });
    await store.delete(ws, 'reused', { principal: 'user:test' });
    await ddb.send(
      new PutCommand({
        TableName: topology.table.name,
        Item: { id: 'reused', workspace: ws, schema_name: 'note.text.v1', context: { again: true } },
      }),
    );
    const adopted = await eventually(async () => {
      try {
        return await store.get(ws, 'reused');
      } catch {
        return undefined;
      }
    });
    expect(adopted.version).toBe(3);
    const history = await store.history(ws, 'reused', { limit: 10 });
    expect(history.items.map((r) => [r.version, r.title])).toEqual([
      [3, ''],
      [2, 'second'],
      [1, 'n1'],
    ]);
  });

  it('adopts an item written straight into the table: listed, versioned, readable', async () => {
    const ws = uniqueWorkspace();
    const ddb = localDynamoClient();
    await ddb.send(
      new PutItemCommand({
        TableName: topology.table.name,
        Item: {
          id: { S: 'my-note' },
          workspace: { S: ws },
          schema_name: { S: 'note.text.v1' },
          title: { S: 'written by hand' },
          tags: { L: [{ S: 'manual' }] },
          context: { M: { text: { S: 'hello' } } },
        },
      }),
    );
    const a = api(ws);
    const adopted = await eventually(async () => {
      const res = await a.call('GET', '/my-note/full');
      return res.status === 200 ? res.body : undefined;
    });
    expect(adopted).toMatchObject({
      id: 'my-note',
      version: 1,
      created_by: 'user:plain-put',
      tags: ['manual'],
    });
    expect(((await a.call('GET', '?tag=manual')).body.items as { id: string }[]).map((i) => i.id)).toEqual([
      'my-note',
    ]);

    // Putting the item again (as a console edit or a second put-item would) makes version 2.
    await ddb.send(
      new PutItemCommand({
        TableName: topology.table.name,
        Item: {
          id: { S: 'my-note' },
          workspace: { S: ws },
          schema_name: { S: 'note.text.v1' },
          context: { M: { text: { S: 'changed' } } },
        },
      }),
    );
    const v2 = await eventually(async () => {
      const res = await a.call('GET', '/my-note/full');
      return res.body.version === 2 ? res.body : undefined;
    });
    expect(v2).toMatchObject({ context: { text: 'changed' }, tags: [] });
    expect(
      ((await a.call('GET', '/my-note/history')).body.items as { version: number }[]).map((v) => v.version),
    ).toEqual([2, 1]);
    expect(((await a.call('GET', '?tag=manual')).body.items as unknown[]).length).toBe(0);
  });

  it('annotates an invalid plain put with ingest_errors and does not adopt it', async () => {
    const ws = uniqueWorkspace();
    const ddb = localDynamoClient();
    await ddb.send(
      new PutItemCommand({
        TableName: topology.table.name,
        Item: {
          id: { S: 'broken' },
          workspace: { S: ws },
          schema_name: { S: 'Not Valid' },
          context: { S: 'nope' },
        },
      }),
    );
    const { GetItemCommand } = await import('@aws-sdk/client-dynamodb');
    const item = await eventually(async () => {
      const out = await ddb.send(
        new GetItemCommand({
          TableName: topology.table.name,
          Key: { id: { S: 'broken' }, workspace: { S: ws } },
        }),
      );
      return out.Item?.ingest_errors ? out.Item : undefined;
    });
    const paths = (item.ingest_errors?.L ?? []).map((e) => e.M?.path?.S);
    expect(paths).toEqual(expect.arrayContaining(['schema_name', 'context']));
    expect((await api(ws).call('GET', '/broken')).status).toBe(404);
  });
});
