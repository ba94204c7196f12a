import { describe, expect, it } from 'vitest';
import { api, eventually, localStack, uniqueWorkspace } from '../support/local.ts';

const note = (n: number, tags: string[] = []) => ({
  schema_name: 'note.text.v1',
  title: `note ${n}`,
  tags,
  context: { text: `hello ${n}`, n },
});

describe('HTTP API: breadcrumbs', () => {
  it('creates a breadcrumb at version 1 with a checksum and answers 201', async () => {
    const a = api(uniqueWorkspace());
    const res = await a.call('POST', '', note(1, ['x']));
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      version: 1,
      schema_name: 'note.text.v1',
      tags: ['x'],
      created_by: 'user:local',
    });
    expect(res.body.checksum).toMatch(/^[0-9a-f]{64}$/);
    expect(res.headers.get('etag')).toBe('"1"');
  });

  it('returns the original breadcrumb when the same Idempotency-Key is repeated', async () => {
    const a = api(uniqueWorkspace());
    const first = await a.call('POST', '', note(1), { 'idempotency-key': 'order-42' });
    const second = await a.call('POST', '', note(1), { 'idempotency-key': 'order-42' });
    expect(second.status).toBe(201);
    expect(second.body.id).toBe(first.body.id);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    const listed = await a.call('GET', '?schema_name=note.text.v1');
    expect((listed.body.items as unknown[]).length).toBe(1);
  });

  it('scopes Idempotency-Keys per workspace and refuses a key reused for a different body', async () => {
    const ws = uniqueWorkspace();
    const first = await api(ws).call('POST', '', note(1), { 'idempotency-key': 'k' });
    const elsewhere = await api(uniqueWorkspace()).call('POST', '', note(1), { 'idempotency-key': 'k' });
    expect(elsewhere.body.id).not.toBe(first.body.id);
    const reused = await api(ws).call('POST', '', note(2), { 'idempotency-key': 'k' });
    expect(reused.status).toBe(422);
    expect(reused.headers.get('content-type')).toContain('application/problem+json');
  });

  it('applies instance llm_hints in the context view and keeps the stored record in the full view', async () => {
    const a = api(uniqueWorkspace());
    const created = await a.call('POST', '', {
      schema_name: 'user.profile.v1',
      context: { name: 'Ada', secret: 's3cr3t', address: { city: 'London' } },
      llm_hints: {
        transform: {
          summary: { type: 'template', template: '{{name}} lives in {{address.city}}' },
          city: { type: 'extract', value: '$.address.city' },
          line: { type: 'format', format: '{name} / {address.city}' },
          kind: { type: 'literal', literal: 'profile' },
        },
        mode: 'replace',
      },
    });
    const id = String(created.body.id);
    const view = await a.call('GET', `/${id}`);
    expect(view.body.context).toEqual({
      summary: 'Ada lives in London',
      city: 'London',
      line: 'Ada / London',
      kind: 'profile',
    });
    const full = await a.call('GET', `/${id}/full`);
    expect(full.body.context).toEqual({ name: 'Ada', secret: 's3cr3t', address: { city: 'London' } });
  });

  it('applies schema defaults from schema.def.v1 and lets instance hints win', async () => {
    const a = api(uniqueWorkspace());
    await a.call('POST', '', {
      schema_name: 'schema.def.v1',
      tags: ['defines:user.profile.v1'],
      context: {
        llm_hints: {
          exclude: ['secret'],
          transform: { who: { type: 'literal', literal: 'default' } },
          mode: 'merge',
        },
      },
    });
    const plain = await a.call('POST', '', {
      schema_name: 'user.profile.v1',
      context: { name: 'Ada', secret: 'x' },
    });
    const withHints = await a.call('POST', '', {
      schema_name: 'user.profile.v1',
      context: { name: 'Bob', secret: 'y' },
      llm_hints: { transform: { who: { type: 'format', format: '{name}' } } },
    });
    expect((await a.call('GET', `/${plain.body.id}`)).body.context).toEqual({
      name: 'Ada',
      who: 'default',
    });
    expect((await a.call('GET', `/${withHints.body.id}`)).body.context).toEqual({
      name: 'Bob',
      who: 'Bob',
    });
  });

  it('answers 412 for a stale If-Match and changes nothing', async () => {
    const a = api(uniqueWorkspace());
    const id = String((await a.call('POST', '', note(1))).body.id);
    expect((await a.call('PATCH', `/${id}`, { title: 'v2' }, { 'if-match': '1' })).status).toBe(200);
    const stale = await a.call('PATCH', `/${id}`, { title: 'lost' }, { 'if-match': '1' });
    expect(stale.status).toBe(412);
    const full = await a.call('GET', `/${id}/full`);
    expect(full.body).toMatchObject({ version: 2, title: 'v2' });
    expect(((await a.call('GET', `/${id}/history`)).body.items as unknown[]).length).toBe(2);
  });

  it('keeps history complete and gap-free under 50 concurrent PATCHes with If-Match', async () => {
    const a = api(uniqueWorkspace());
    const id = String((await a.call('POST', '', note(0))).body.id);
    const results = await Promise.all(
      Array.from({ length: 50 }, async (_, i) => {
        const current = await a.call('GET', `/${id}/full`);
        return a.call('PATCH', `/${id}`, { context: { n: i } }, { 'if-match': String(current.body.version) });
      }),
    );
    const ok = results.filter((r) => r.status === 200).length;
    expect(ok).toBeGreaterThan(0);
    expect(results.every((r) => r.status === 200 || r.status === 412)).toBe(true);
    const full = await a.call('GET', `/${id}/full`);
    expect(full.body.version).toBe(1 + ok);
    const versions: number[] = [];
    let cursor: string | null = null;
    do {
      const page = await a.call('GET', `/${id}/history?limit=7${cursor ? `&cursor=${cursor}` : ''}`);
      versions.push(...(page.body.items as { version: number }[]).map((v) => v.version));
      cursor = page.body.next_cursor as string | null;
    } while (cursor);
    expect(versions).toEqual(Array.from({ length: 1 + ok }, (_, i) => 1 + ok - i));
  });

  it('serves any version and answers 404 for a version that does not exist', async () => {
    const a = api(uniqueWorkspace());
    const id = String((await a.call('POST', '', note(1))).body.id);
    await a.call('PATCH', `/${id}`, { context: { text: 'changed' } });
    expect((await a.call('GET', `/${id}/versions/1`)).body.context).toEqual({ text: 'hello 1', n: 1 });
    expect((await a.call('GET', `/${id}/versions/2`)).body.context).toEqual({ text: 'changed' });
    expect((await a.call('GET', `/${id}/versions/3`)).status).toBe(404);
  });

  it('reads a deleted breadcrumb as 404', async () => {
    const a = api(uniqueWorkspace());
    const id = String((await a.call('POST', '', note(1, ['gone']))).body.id);
    expect((await a.call('DELETE', `/${id}`)).status).toBe(204);
    expect((await a.call('GET', `/${id}`)).status).toBe(404);
    expect((await a.call('GET', `/${id}/full`)).status).toBe(404);
    expect((await a.call('GET', `/${id}/history`)).status).toBe(404);
    expect((await a.call('DELETE', `/${id}`)).status).toBe(404);
    expect(((await a.call('GET', '?tag=gone')).body.items as unknown[]).length).toBe(0);
  });

  it('reads an expired breadcrumb as 404 before DynamoDB removes it', async () => {
    const a = api(uniqueWorkspace());
    // Whole seconds: at least 2 s from now, so the first read is before it under any load.
    const expiresAt = Math.floor(Date.now() / 1000) + 3;
    const id = String((await a.call('POST', '', { ...note(1), expires_at: expiresAt })).body.id);
    expect((await a.call('GET', `/${id}`)).status).toBe(200);
    await new Promise((r) => setTimeout(r, Math.max(0, expiresAt * 1000 - Date.now()) + 200));
    expect((await a.call('GET', `/${id}`)).status).toBe(404);
  });

  it('lists by schema, by tag and by both, newest first across pages', async () => {
    const a = api(uniqueWorkspace());
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) {
      const tags = i % 2 === 0 ? ['even', 'all'] : ['odd', 'all'];
      const schema = i < 5 ? 'note.text.v1' : 'note.other.v1';
      ids.push(String((await a.call('POST', '', { ...note(i, tags), schema_name: schema })).body.id));
    }
    const all = async (query: string) => {
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const page = await a.call('GET', `?${query}&limit=2${cursor ? `&cursor=${cursor}` : ''}`);
        expect(page.status).toBe(200);
        seen.push(...(page.body.items as { id: string }[]).map((i) => i.id));
        cursor = page.body.next_cursor as string | null;
      } while (cursor);
      return seen;
    };
    expect(await all('schema_name=note.text.v1')).toEqual(ids.slice(0, 5).reverse());
    // `all` is each note's second tag: listed once the publisher has read the write (README "What reads see of a
    // write"); `even` is the first, listed with the write itself.
    await eventually(async () => ((await all('tag=all')).length === ids.length ? true : undefined));
    expect(await all('tag=all')).toEqual([...ids].reverse());
    expect(await all('schema_name=note.text.v1&tag=even')).toEqual([ids[4], ids[2], ids[0]]);
    // An update moves a breadcrumb to the front: lists are ordered by last write.
    await a.call('PATCH', `/${ids[0]}`, { title: 'touched' });
    expect((await all('tag=even'))[0]).toBe(ids[0]);
  });
});

describe('HTTP API: bad input', () => {
  const ws = uniqueWorkspace();

  it.each([
    ['malformed JSON', '{"schema_name":', 400],
    ['a JSON array', '[]', 422],
    ['a bad schema name', { schema_name: 'Not Valid', context: {} }, 422],
    [
      'too many tags',
      { schema_name: 'a.b.v1', context: {}, tags: Array.from({ length: 51 }, (_, i) => `t${i}`) },
      422,
    ],
    ['a long tag', { schema_name: 'a.b.v1', context: {}, tags: ['x'.repeat(129)] }, 422],
    ['a long title', { schema_name: 'a.b.v1', context: {}, title: 'x'.repeat(513) }, 422],
    ['a context that is not an object', { schema_name: 'a.b.v1', context: 'text' }, 422],
    ['an unknown field', { schema_name: 'a.b.v1', context: {}, colour: 'red' }, 422],
    [
      'a bad transform rule',
      { schema_name: 'a.b.v1', context: {}, llm_hints: { transform: { x: { type: 'eval' } } } },
      422,
    ],
  ])('answers problem+json and creates nothing for %s', async (_name, body, status) => {
    const res = await api(ws).call('POST', '', body);
    expect(res.status).toBe(status);
    expect(res.headers.get('content-type')).toContain('application/problem+json');
    expect(res.body).toMatchObject({ status, title: expect.any(String), detail: expect.any(String) });
    if (status === 422) expect((res.body.errors as { path: string }[]).length).toBeGreaterThan(0);
  });

  it('names each bad field with its path', async () => {
    const res = await api(ws).call('POST', '', { schema_name: 'x', context: {}, tags: ['ok', ''] });
    expect((res.body.errors as { path: string }[]).map((e) => e.path).sort()).toEqual([
      'schema_name',
      'tags[1]',
    ]);
  });

  it('keeps a context over 350 KB (spilled to the blob store) and answers 413 for a body over 5.5 MB', async () => {
    const big = await api(ws).call('POST', '', {
      schema_name: 'a.b.v1',
      context: { blob: 'x'.repeat(360 * 1024) },
    });
    expect(big.status).toBe(201);
    const read = await api(ws).call('GET', `/${String(big.body.id)}`);
    expect((read.body.context as { blob: string }).blob).toHaveLength(360 * 1024);
    const huge = await api(ws).call('POST', '', {
      schema_name: 'a.b.v1',
      context: { blob: 'x'.repeat(6 * 1024 * 1024) },
    });
    expect(huge.status).toBe(413);
    expect(JSON.stringify(huge.body)).toContain('5.5 MB');
  });

  it('answers 404 for unknown routes, 405 for unknown methods, 401 without a token', async () => {
    const { api: endpoint } = localStack();
    expect((await api(ws).call('GET', '/x/y/z')).status).toBe(404);
    const put = await api(ws).call('PUT', '', { a: 1 });
    expect(put.status).toBe(405);
    expect(put.headers.get('allow')).toContain('POST');
    expect((await fetch(`${endpoint}/v1/workspaces/${ws}/breadcrumbs?tag=a`)).status).toBe(401);
    const wrong = await fetch(`${endpoint}/v1/workspaces/${ws}/breadcrumbs?tag=a`, {
      headers: { authorization: 'Bearer nope' },
    });
    expect(wrong.status).toBe(401);
  });

  it('answers 400 for a bad If-Match, limit or cursor, and 400 for a list without filters', async () => {
    const a = api(ws);
    const id = String((await a.call('POST', '', note(1))).body.id);
    expect((await a.call('PATCH', `/${id}`, { title: 'x' }, { 'if-match': 'abc' })).status).toBe(400);
    expect((await a.call('GET', '?tag=a&limit=0')).status).toBe(400);
    expect((await a.call('GET', '?tag=a&limit=1000')).status).toBe(400);
    expect((await a.call('GET', '?tag=a&cursor=garbage')).status).toBe(400);
    const otherCursor = Buffer.from(JSON.stringify({ gsi1pk: 'other#t#a' })).toString('base64url');
    expect((await a.call('GET', `?tag=a&cursor=${otherCursor}`)).status).toBe(400);
    expect((await a.call('GET', '')).status).toBe(400);
    expect((await a.call('PATCH', `/${id}`, {})).status).toBe(422);
    expect((await a.call('GET', `/${id}/full`)).body.version).toBe(1);
  });

  it('reports health without a token', async () => {
    const res = await fetch(`${localStack().api}/health`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { status: string; local: Record<string, string> };
    expect(body.status).toBe('ok');
    expect(body.local.dynamodb).toBe(localStack().dynamodb);
    expect(body.local.sqs).toBe(localStack().sqs);
  });
});

describe('HTTP API: PUT with a chosen id', () => {
  it('creates with the id, replaces on the next PUT, and does nothing for an identical PUT', async () => {
    const a = api(uniqueWorkspace());
    const body = { schema_name: 'tool.def.v1', title: 'echo', tags: ['tool'], context: { name: 'echo' } };
    const created = await a.call('PUT', '/tool-echo', body);
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ id: 'tool-echo', version: 1 });
    const same = await a.call('PUT', '/tool-echo', body);
    expect(same.status).toBe(200);
    expect(same.body.version).toBe(1);
    const changed = await a.call('PUT', '/tool-echo', {
      ...body,
      context: { name: 'echo', description: 'x' },
    });
    expect(changed.body.version).toBe(2);
    expect((await a.call('PUT', '/tool-echo', { ...body, schema_name: 'agent.def.v1' })).status).toBe(422);
    expect((await a.call('PUT', '/tool-echo', body, { 'if-none-match': '*' })).status).toBe(412);
    expect((await a.call('PUT', '/bad%23id', body)).status).toBe(422);
  });
});
