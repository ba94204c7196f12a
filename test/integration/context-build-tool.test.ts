/**
 * The `context.build` built-in tool through the local stack: a `tool.def.v1` naming it, a `tool.request.v1` with
 * sources, and the `tool.response.v1` the tool executor writes — the sources fetched from the request's own
 * workspace as context views (recent, latest, tagged, vector near the query), `formatted_context` as `## <key>`
 * sections cut to `max_tokens`, and `token_estimate`. A request that cannot be fetched (a source naming nothing to
 * fetch by, an unknown method, a vector source without a query, no sources) is answered with an error naming it.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { api, eventually, uniqueWorkspace } from '../support/local.ts';

interface ToolAnswer {
  status: string;
  output?: { sources: Record<string, unknown>; formatted_context: string; token_estimate: number };
  error?: string;
}

const ws = uniqueWorkspace('ctx-build');
const other = uniqueWorkspace('ctx-build-other');
let requests = 0;

/** Writes a tool.request.v1 for context.build into `ws` and waits for its answer. */
async function build(input: unknown): Promise<ToolAnswer> {
  const requestId = `build-${++requests}`;
  const written = await api(ws).call('POST', '', {
    schema_name: 'tool.request.v1',
    context: { tool: 'context.build', input, requestId, requestedBy: 'tester' },
  });
  expect(written.status).toBe(201);
  const answer = await eventually(async () => {
    const res = await api(ws).call('GET', `?schema_name=tool.response.v1&tag=request:${requestId}&view=full`);
    return (res.body.items as { context: ToolAnswer }[] | undefined)?.[0];
  }, 30_000);
  return answer.context;
}

beforeAll(async () => {
  for (const w of [ws, other]) {
    const put = await api(w).call('PUT', '/tool-context-build', {
      schema_name: 'tool.def.v1',
      context: { name: 'context.build', implementation: 'context.build' },
    });
    expect(put.status).toBe(201);
  }
  await eventually(async () => {
    const page = await api(ws).call(
      'GET',
      '?schema_name=definition.status.v1&tag=definition:tool-context-build&view=full',
    );
    const status = (page.body.items as { context: { state?: string } }[] | undefined)?.[0];
    return status?.context.state === 'active' ? true : undefined;
  }, 45_000);
  for (const [i, text] of [
    'zebras graze on open grassland',
    'the quarterly report is due friday',
  ].entries()) {
    await api(ws).call('POST', '', {
      schema_name: 'note.v1',
      tags: ['kept', ...(i === 0 ? ['animals'] : [])],
      context: { text, secret: `hidden-${i}` },
      llm_hints: { exclude: ['secret'] },
    });
  }
  // Another workspace's note, near the same query: never in this workspace's context.
  await api(other).call('POST', '', {
    schema_name: 'note.v1',
    tags: ['kept', 'animals'],
    context: { text: 'zebras and wildebeest graze the grassland together' },
  });
}, 120_000);

describe('the context.build tool', () => {
  it('answers with the sources it was asked for, as context views of its own workspace, formatted', async () => {
    const answer = await eventually(async () => {
      const a = await build({
        query: 'zebras on the grassland',
        sources: [
          { schema_name: 'note.v1', method: 'recent', limit: 5, key: 'notes' },
          { schema_name: 'note.v1', method: 'latest', key: 'newest' },
          { method: 'tagged', all_tags: ['animals'], key: 'animals' },
          { schema_name: 'note.v1', method: 'vector', nn: 1, key: 'nearest' },
        ],
      });
      // The vector index trails the write: ask again until it holds the notes.
      const nearest = a.output?.sources.nearest;
      return Array.isArray(nearest) && nearest.length > 0 ? a : undefined;
    }, 45_000);
    expect(answer.status).toBe('success');
    const { sources, formatted_context, token_estimate } = answer.output ?? ({} as never);
    expect(sources.notes).toEqual([
      { text: 'the quarterly report is due friday' },
      { text: 'zebras graze on open grassland' },
    ]);
    expect(sources.newest).toEqual({ text: 'the quarterly report is due friday' });
    expect(sources.animals).toEqual([{ text: 'zebras graze on open grassland' }]);
    expect(sources.nearest).toEqual([{ text: 'zebras graze on open grassland' }]);
    expect(formatted_context).toMatch(/^## notes\n/);
    for (const key of ['## newest', '## animals', '## nearest']) expect(formatted_context).toContain(key);
    expect(token_estimate).toBe(Math.ceil(formatted_context.length / 4));
    expect(JSON.stringify(answer)).not.toContain('hidden-');
    expect(JSON.stringify(answer)).not.toContain('wildebeest');
  });

  it('cuts the formatted context to max_tokens', async () => {
    const answer = await build({
      sources: [{ schema_name: 'note.v1', method: 'recent', key: 'notes' }],
      max_tokens: 12,
    });
    expect(answer.status).toBe('success');
    expect(answer.output?.formatted_context.length).toBeLessThanOrEqual(48);
    expect(answer.output?.formatted_context).toContain('(truncated to the token budget)');
    expect(answer.output?.sources.notes).toHaveLength(2);
  });

  it.each([
    [{ sources: [] }, 'invalid input for context.build: input.sources'],
    [{ sources: [{ method: 'everything', schema_name: 'note.v1' }] }, 'sources[0]: method expected one of'],
    [
      { sources: [{ method: 'recent' }] },
      'sources[0]: a recent source needs schema_name, all_tags or a single',
    ],
    [
      { sources: [{ schema_name: 'note.v1', method: 'recent' }, { method: 'vector' }] },
      'sources[1]: a vector source needs the text it is near to in "query"',
    ],
    [{ query: 'x' }, "invalid input for context.build: input: must have required property 'sources'"],
  ])('answers %j with an error naming what is wrong', async (input, message) => {
    const answer = await build(input);
    expect(answer.status).toBe('error');
    expect(answer.error).toContain(message);
    expect(answer.output).toBeUndefined();
  });
});
