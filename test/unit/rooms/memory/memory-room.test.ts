/**
 * The memory room through the executor pipeline (the harness: in-memory store and claims, a clock the test moves),
 * with a scripted memory model and the real recall path — the local embedder, the usearch engine scoped by actor,
 * `searchSimilar`. The scripted model reads the transcript it is given the way a careful extractor would ("my X is
 * Y" → a fact of key X; "forget my X" → a retraction; "I prefer Y for X" → a preference), and also proposes what an
 * assistant turn claims ("your X is Y"), as a careless model might: the deterministic check must refuse that.
 */
import { describe, expect, it } from 'vitest';
import { LocalEmbedder } from '#shared/adapters/embeddings/local-embedder.ts';
import { UsearchVectorEngine } from '#shared/adapters/vectors/usearch-engine.ts';
import type { PipelineDeps } from '#shared/core/executor/pipeline.ts';
import { indexEmbedding, searchSimilar, type VectorSearchDeps } from '#shared/core/stream/vector-search.ts';
import type { Breadcrumb } from '#shared/domain/breadcrumb.ts';
import type { EmbeddingIndex, StoredEmbedding } from '#shared/ports/embeddings.ts';
import type { LlmClient, LlmRequest } from '#shared/ports/llm.ts';
import { silentLog } from '#shared/ports/log.ts';
import { createMemoryKind } from '#shared/rooms/memory/extraction.ts';
import {
  MEMORY_ERROR_SCHEMA,
  MEMORY_EXTRACTION_SCHEMA,
  MEMORY_RECORD_SCHEMA,
  MemoryRecordSchema,
} from '#shared/rooms/memory/protocol.ts';
import { recall } from '#shared/rooms/memory/recall.ts';
import { actorRecords } from '#shared/rooms/memory/records.ts';
import { Harness } from '../../../support/executor-harness.ts';

/** The scripted memory model. */
class ScriptedMemoryModel implements LlmClient {
  calls = 0;
  constructor(private readonly broken = false) {}

  async generate(request: LlmRequest) {
    this.calls++;
    const content = request.messages[0]?.role === 'user' ? request.messages[0].content : '';
    if (this.broken)
      return {
        text: 'I think they like cats.',
        toolCalls: [],
        finishReason: 'stop' as const,
        usage: { inputTokens: 10, outputTokens: 5 },
        model: 'scripted/broken',
      };
    const known = new Map<string, string>();
    for (const m of content.matchAll(/^- \[record ([^\]]+)\] ([^:]+): /gm)) known.set(m[2] ?? '', m[1] ?? '');
    const proposals: Record<string, unknown>[] = [];
    const summary = request.system.includes('one short summary');
    const said: string[] = [];
    const saidIds: string[] = [];
    for (const m of content.matchAll(/^\[turn ([^\]]+)\] (person|assistant): (.*)$/gm)) {
      const [, id = '', who, text = ''] = m;
      if (who === 'person') {
        said.push(text);
        saidIds.push(id);
      }
      const fact = /^(?:my|your) ([a-z ]+?) is (.+?)\.?$/i.exec(text);
      const pref = /^I prefer (.+?) for ([a-z ]+?)\.?$/i.exec(text);
      const forget = /^forget my ([a-z ]+?)\.?$/i.exec(text);
      if (fact)
        proposals.push({ op: 'add', key: fact[1], text: `${fact[1]} is ${fact[2]}`, source_turns: [id] });
      else if (pref)
        proposals.push({
          op: 'add',
          key: pref[2],
          text: `prefers ${pref[1]} for ${pref[2]}`,
          source_turns: [id],
        });
      else if (forget) {
        const key = (forget[1] ?? '').replace(/ /g, '_');
        proposals.push({ op: 'retract', target: known.get(key), source_turns: [id] });
      }
    }
    const answer = summary
      ? {
          proposals: said.length
            ? [
                {
                  op: 'add',
                  key: 'summary',
                  text: `talked about: ${said.join(' / ')}`,
                  source_turns: saidIds,
                },
              ]
            : [],
        }
      : { proposals };
    return {
      text: JSON.stringify(answer),
      toolCalls: [],
      finishReason: 'stop' as const,
      usage: { inputTokens: 10, outputTokens: 5 },
      model: 'scripted/memory',
    };
  }
}

class MemoryIndex implements EmbeddingIndex {
  readonly items = new Map<string, StoredEmbedding>();
  async put(workspace: string, e: StoredEmbedding) {
    const k = `${workspace}/${e.id}`;
    const old = this.items.get(k);
    if (old && old.version > e.version) return false;
    this.items.set(k, e);
    return true;
  }
  async get(workspace: string, id: string) {
    return this.items.get(`${workspace}/${id}`);
  }
  async remove(workspace: string, id: string) {
    this.items.delete(`${workspace}/${id}`);
  }
}

function setup(model: LlmClient = new ScriptedMemoryModel()) {
  const h = new Harness();
  const vectors: VectorSearchDeps = {
    store: h.store,
    index: new MemoryIndex(),
    engine: new UsearchVectorEngine(),
    embedder: new LocalEmbedder(),
  };
  const deps = (): PipelineDeps =>
    h.deps({
      implementations: {
        memory: createMemoryKind({ store: h.store, llm: model, clock: h.clock, log: silentLog }) as never,
      },
    });
  /** Plays the indexer: every memory record's current version embedded (and removed ones dropped). */
  async function index() {
    for (const r of await h.list(MEMORY_RECORD_SCHEMA))
      await indexEmbedding(vectors, r, { embeds: () => true });
  }
  async function say(def: Breadcrumb, actor: string, session: string, message: string) {
    const turn = await h.put(
      { schema_name: 'user.message.v1', context: { message, conversation_id: session } },
      `user:${actor}`,
    );
    await h.deliverUntilHandled(def, turn, deps);
    await index();
    return turn;
  }
  async function assistant(def: Breadcrumb, session: string, text: string) {
    const turn = await h.put(
      { schema_name: 'agent.response.v1', context: { response_text: text, conversation_id: session } },
      'agent:helper',
    );
    await h.deliverUntilHandled(def, turn, deps);
    return turn;
  }
  async function finish(def: Breadcrumb, session: string) {
    const request = await h.put(
      { schema_name: 'memory.extract.v1', context: { memory_id: 'm', session } },
      'user:system',
    );
    await h.deliverUntilHandled(def, request, deps);
    await index();
  }
  const search = { search: (q: Parameters<typeof searchSimilar>[1]) => searchSimilar(vectors, q) };
  const recallFor = (actor: string, text: string, topK = 5) =>
    recall(
      { store: h.store, vectorSearch: search },
      { workspace: h.workspace, actor, text, use: { use: ['m'], top_k: topK, min_score: 0 } },
    );
  const define = (context: Record<string, unknown>) =>
    h.put({ schema_name: 'memory.def.v1', context: { memory_id: 'm', ...context } }, 'user:admin');
  return { h, say, assistant, finish, recallFor, define, index, vectors };
}

describe('the memory room', () => {
  it('recalls a preference stated in one session in a later one of the same person, never another person’s (1,000 queries)', async () => {
    const { say, recallFor, define } = setup();
    const def = await define({ strategy: 'preferences' });
    await say(def, 'alice', 's1', 'I prefer metric units for units.');
    await say(def, 'bob', 's2', 'I prefer imperial units for units.');
    await say(def, 'alice', 's1', 'I prefer French for language.');
    await say(def, 'bob', 's2', 'I prefer terse answers for tone.');

    const later = await recallFor('alice', 'which units should the recipe use?');
    expect(later.mode).toBe('vector');
    expect(later.records.map((r) => r.text)).toContain('prefers metric units for units');

    const words = [
      'units',
      'metric',
      'imperial',
      'language',
      'French',
      'tone',
      'terse',
      'recipe',
      'weather',
      'answers',
    ];
    let seed = 7;
    const next = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed;
    };
    let hits = 0;
    for (let i = 0; i < 1000; i++) {
      const actor = next() % 2 === 0 ? 'alice' : 'bob';
      const text = Array.from({ length: 1 + (next() % 4) }, () => words[next() % words.length]).join(' ');
      const found = await recallFor(actor, text);
      hits += found.records.length;
      for (const r of found.records) {
        expect(r.text).not.toBe(
          actor === 'alice' ? 'prefers imperial units for units' : 'prefers metric units for units',
        );
        expect(r.text).not.toMatch(actor === 'alice' ? /terse/ : /French/);
      }
    }
    expect(hits).toBeGreaterThan(1000);
  });

  it('of 10 facts and 5 contradictions over 20 sessions, recall gives the latest value each time; history keeps the old', async () => {
    const { h, say, recallFor, define } = setup();
    const def = await define({ strategy: 'facts' });
    const facts = ['order', 'city', 'pet', 'car', 'team', 'phone', 'bank', 'school', 'doctor', 'gym'];
    const latest = new Map<string, string>();
    for (let s = 0; s < 10; s++) {
      const key = facts[s] ?? '';
      await say(def, 'carol', `session-${s}`, `my ${key} is ${key}-value-${s}`);
      latest.set(key, `${key}-value-${s}`);
    }
    for (let s = 10; s < 20; s++) {
      // Sessions 10..14 contradict five facts; 15..19 talk about something else.
      if (s < 15) {
        const key = facts[s - 10] ?? '';
        await say(def, 'carol', `session-${s}`, `my ${key} is ${key}-changed-${s}`);
        latest.set(key, `${key}-changed-${s}`);
      } else await say(def, 'carol', `session-${s}`, 'hello again, how are you');
      for (const [key, value] of latest) {
        const found = await recallFor('carol', `what is my ${key}`, 10);
        const about = found.records.filter((r) => r.key === key);
        expect(
          about.map((r) => r.text),
          `${key} after session ${s}`,
        ).toEqual([`${key} is ${value}`]);
      }
    }
    const records = await actorRecords(h.store, h.workspace, 'carol', 'm', 100);
    expect(records).toHaveLength(10);
    const order = records.find((r) => r.memory.key === 'order');
    expect(order?.record.version).toBe(2);
    const history = await h.store.history(h.workspace, order?.record.id ?? '', { limit: 10 });
    expect(history.items.map((v) => MemoryRecordSchema.parse(v.context).text)).toContain(
      'order is order-value-0',
    );
  });

  it('never stores a claim made only by the assistant, and small talk leaves nothing', async () => {
    const { h, say, assistant, define } = setup();
    const def = await define({
      strategy: 'facts',
      sources: [{ schema_name: 'user.message.v1' }, { schema_name: 'agent.response.v1' }],
      batch: { every_turns: 2 },
    });
    await assistant(def, 's', 'your home city is Atlantis');
    await say(def, 'dave', 's', 'thanks, nice weather today');
    await say(def, 'dave', 's', 'ok bye');
    expect(await h.list(MEMORY_RECORD_SCHEMA)).toEqual([]);
    const outcomes = await h.list(MEMORY_EXTRACTION_SCHEMA);
    expect(outcomes.map((o) => (o.context as { status: string }).status).sort()).toEqual([
      'extracted',
      'nothing',
      'pending',
    ]);
  });

  it('batches: nothing is extracted until every_turns of the person wait, then once', async () => {
    const model = new ScriptedMemoryModel();
    const { h, say, define } = setup(model);
    const def = await define({ strategy: 'facts', batch: { every_turns: 3 } });
    await say(def, 'erin', 's', 'my dog is Rex');
    await say(def, 'erin', 's', 'my cat is Tom');
    expect(model.calls).toBe(0);
    await say(def, 'erin', 's', 'my fish is Nemo');
    expect(model.calls).toBe(1);
    expect((await h.list(MEMORY_RECORD_SCHEMA)).length).toBe(3);
  });

  it('a retraction removes the record', async () => {
    const { h, say, define } = setup();
    const def = await define({ strategy: 'facts' });
    await say(def, 'fay', 's', 'my locker is 42');
    expect((await h.list(MEMORY_RECORD_SCHEMA)).length).toBe(1);
    await say(def, 'fay', 's2', 'forget my locker');
    expect(await h.list(MEMORY_RECORD_SCHEMA)).toEqual([]);
  });

  it('a summary strategy writes one summary per finished session', async () => {
    const { h, say, finish, define } = setup();
    const def = await define({ strategy: 'summaries' });
    await say(def, 'gus', 'a', 'I need a refund for order A-17');
    await say(def, 'gus', 'a', 'it arrived broken');
    expect(await h.list(MEMORY_RECORD_SCHEMA)).toEqual([]);
    await finish(def, 'a');
    await say(def, 'gus', 'b', 'what are your opening hours');
    await finish(def, 'b');
    await finish(def, 'b');
    const summaries = (await h.list(MEMORY_RECORD_SCHEMA)).map((r) => MemoryRecordSchema.parse(r.context));
    expect(summaries.map((s) => s.session).sort()).toEqual(['a', 'b']);
    expect(summaries.find((s) => s.session === 'a')?.text).toBe(
      'talked about: I need a refund for order A-17 / it arrived broken',
    );
  });

  it('a model answer that is not proposals leaves an error record and no memory', async () => {
    const { h, say, define } = setup(new ScriptedMemoryModel(true));
    const def = await define({ strategy: 'facts' });
    await say(def, 'hal', 's', 'my order is B-2');
    expect(await h.list(MEMORY_RECORD_SCHEMA)).toEqual([]);
    expect((await h.list(MEMORY_ERROR_SCHEMA)).length).toBe(1);
  });
});
