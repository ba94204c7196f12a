/**
 * Exactly once for runs against real DynamoDB (a local stack of its own, executors off: the test delivers every
 * message itself): each message delivered three times in a shuffled order, some deliveries crashing after the run
 * was written and before its requests were, and answers to one run processed concurrently; also through two
 * long-lived workers whose drivers keep the runs they wrote. The run ends as it would with one orderly delivery,
 * the parallel and the map join once, every request is written once.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalStack } from '#local/stack.ts';
import type { DynamoBreadcrumbStore } from '#shared/adapters/dynamodb/breadcrumb-store.ts';
import { DynamoClaims } from '#shared/adapters/dynamodb/claims.ts';
import { clearDefinitionCache } from '#shared/core/executor/definition-cache.ts';
import { type PipelineDeps, processExecutorMessage } from '#shared/core/executor/pipeline.ts';
import type { Run } from '#shared/core/orchestration/run.ts';
import { createWorkflowKind } from '#shared/core/orchestration/workflow-kind.ts';
import { createToolKind } from '#shared/core/tools/tool-kind.ts';
import { type Breadcrumb, CreateBreadcrumbSchema } from '#shared/domain/breadcrumb.ts';
import { RetriableError } from '#shared/domain/errors.ts';
import { systemClock } from '#shared/ports/breadcrumb-store.ts';
import type { ExecutorStore } from '#shared/ports/executor-store.ts';
import { silentLog } from '#shared/ports/log.ts';
import { builtinTools } from '#shared/tools/builtins.ts';
import { toolCatalog } from '#shared/tools/catalog.ts';
import { topology } from '#shared/topology.ts';
import { messageFor } from '../support/executor-message.ts';
import { localStore, startStackWithoutExecutors, uniqueWorkspace } from '../support/local.ts';

let stack: LocalStack;
let documentClient: DynamoDBDocumentClient;
let store: DynamoBreadcrumbStore;

beforeAll(async () => {
  ({ stack, documentClient } = await startStackWithoutExecutors());
  store = localStore(documentClient);
}, 90_000);

afterAll(async () => {
  await stack?.stop();
});

const tools = toolCatalog(builtinTools);
const timers = { set: async () => undefined, cancel: async () => undefined };

function deps(writer: ExecutorStore = store): PipelineDeps {
  return {
    store: writer,
    claims: new DynamoClaims(topology.table.name, { client: documentClient }),
    leaseMs: 60_000,
    implementations: {
      tool: createToolKind({ store: writer, log: silentLog, clock: systemClock, tools }),
      workflow: createWorkflowKind({ store: writer, log: silentLog, clock: systemClock, timers }),
    },
  };
}

/** A store that crashes once on creating this run's requests or result: after the run write, before its effects. */
function crashingOnce(): ExecutorStore {
  let crashed = false;
  return Object.create(store, {
    create: {
      value: async (...args: Parameters<ExecutorStore['create']>) => {
        const schema = args[1].schema_name;
        if (!crashed && (schema === 'tool.request.v1' || schema === 'workflow.result.v1')) {
          crashed = true;
          throw new RetriableError('injected crash after the run write');
        }
        return store.create(...args);
      },
    },
  });
}

function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const fanOut = {
  workflow_id: 'fan',
  steps: [
    { id: 'first', tool: 'echo', input: { v: 1 } },
    {
      id: 'p',
      parallel: [
        { id: 'l', tool: 'echo', input: { side: 'L' } },
        { id: 'r', tool: 'echo', input: { side: 'R' } },
      ],
    },
    {
      id: 'm',
      map: {
        items: '=[1,2,3,4,5,6]',
        max_concurrency: 3,
        step: { id: 'one', tool: 'echo', input: { n: '=item' } },
      },
    },
    { id: 'last', tool: 'echo', input: { p: '=steps.p', m: '=steps.m' } },
  ],
  output: '=steps.last',
};

async function setUp(ws: string): Promise<{ tool: Breadcrumb; workflow: Breadcrumb; request: Breadcrumb }> {
  const put = async (schema_name: string, context: Record<string, unknown>) =>
    (await store.create(ws, CreateBreadcrumbSchema.parse({ schema_name, context }), { principal: 'user:t' }))
      .breadcrumb;
  const tool = await put('tool.def.v1', { name: 'echo', implementation: 'echo' });
  const workflow = await put('workflow.def.v1', fanOut);
  const request = await put('workflow.request.v1', { workflow: 'fan', input: {} });
  return { tool, workflow, request };
}

async function tagged(ws: string, schema: string, runId: string): Promise<Breadcrumb[]> {
  return (await store.list({ workspace: ws, schema_name: schema, tag: `run:${runId}`, limit: 100 })).items;
}

describe('workflow runs under at-least-once delivery (DynamoDB)', () => {
  it('ends the same with every message delivered three times, shuffled, and crashes after run writes', async () => {
    clearDefinitionCache();
    const ws = uniqueWorkspace('deliver');
    const { tool, workflow, request } = await setUp(ws);
    const runId = `run-${request.id}`;
    const random = prng(20261123);
    const pool: Array<[Breadcrumb, Breadcrumb]> = [
      [workflow, request],
      [workflow, request],
      [workflow, request],
    ];
    const seen = new Set<string>();
    let crashes = 0;
    let joins = 0;
    while (pool.length > 0) {
      const [pair] = pool.splice(Math.floor(random() * pool.length), 1);
      if (pair === undefined) break;
      const before = (await tagged(ws, 'workflow.run.v1', runId))[0]?.context as Run | undefined;
      const crash = random() < 0.2;
      try {
        await processExecutorMessage(messageFor(pair[0], pair[1]), deps(crash ? crashingOnce() : store));
      } catch (error) {
        if (!(error instanceof RetriableError)) throw error;
        crashes++;
        pool.push(pair); // SQS delivers it again
      }
      const after = (await tagged(ws, 'workflow.run.v1', runId))[0]?.context as Run | undefined;
      for (const id of ['p', 'm']) {
        if (before?.steps[id]?.status !== 'succeeded' && after?.steps[id]?.status === 'succeeded') joins++;
      }
      for (const req of await tagged(ws, 'tool.request.v1', runId)) {
        if (seen.has(req.id)) continue;
        seen.add(req.id);
        for (let i = 0; i < 3; i++) pool.push([tool, req]);
      }
      for (const res of await tagged(ws, 'tool.response.v1', runId)) {
        if (seen.has(res.id)) continue;
        seen.add(res.id);
        for (let i = 0; i < 3; i++) pool.push([workflow, res]);
      }
    }
    const run = (await store.get(ws, runId)).context as unknown as Run;
    expect(run.status).toBe('succeeded');
    expect(run.output).toEqual({
      p: { l: { side: 'L' }, r: { side: 'R' } },
      m: [1, 2, 3, 4, 5, 6].map((n) => ({ n })),
    });
    expect(joins).toBe(2);
    expect(crashes).toBeGreaterThan(0);
    // 1 + 2 + 6 + 1 requests, each written once; one result.
    expect(await tagged(ws, 'tool.request.v1', runId)).toHaveLength(10);
    const results = await store.list({ workspace: ws, schema_name: 'workflow.result.v1', limit: 10 });
    expect(results.items).toHaveLength(1);
    expect(Object.values(run.steps).every((s) => s.attempts === 1)).toBe(true);
  });

  it('joins once when the answers of a parallel are processed at the same time', async () => {
    clearDefinitionCache();
    const ws = uniqueWorkspace('race');
    const { tool, workflow, request } = await setUp(ws);
    const runId = `run-${request.id}`;
    await processExecutorMessage(messageFor(workflow, request), deps());
    const [first] = await tagged(ws, 'tool.request.v1', runId);
    if (first === undefined) throw new Error('no first request');
    await processExecutorMessage(messageFor(tool, first), deps());
    const [firstAnswer] = await tagged(ws, 'tool.response.v1', runId);
    if (firstAnswer === undefined) throw new Error('no answer');
    await processExecutorMessage(messageFor(workflow, firstAnswer), deps());
    const branches = (await tagged(ws, 'tool.request.v1', runId)).filter((r) => r.id !== first.id);
    expect(branches).toHaveLength(2);
    await Promise.all(branches.map((b) => processExecutorMessage(messageFor(tool, b), deps())));
    const answers = (await tagged(ws, 'tool.response.v1', runId)).filter((a) => a.id !== firstAnswer.id);
    await Promise.all(answers.map((a) => processExecutorMessage(messageFor(workflow, a), deps())));
    const run = (await store.get(ws, runId)).context as unknown as Run;
    expect(run.steps.p).toMatchObject({
      status: 'succeeded',
      output: { l: { side: 'L' }, r: { side: 'R' } },
    });
    // The map's first three items started once.
    expect(
      (await tagged(ws, 'tool.request.v1', runId)).filter((r) => r.tags.some((t) => t.startsWith('step:m['))),
    ).toHaveLength(3);
  });
  it('ends the same when two long-lived workers, each keeping the runs it wrote, share the shuffled deliveries and crash', async () => {
    clearDefinitionCache();
    const ws = uniqueWorkspace('keep');
    const { tool, workflow, request } = await setUp(ws);
    const runId = `run-${request.id}`;
    const random = prng(20261126);
    // Each worker is one container: its executor kinds (and their run driver) live across deliveries. A crash is
    // armed for one delivery and hits its first request or result write, after the run write.
    const workers = [0, 1].map(() => {
      let armed = false;
      const writer: ExecutorStore = Object.create(store, {
        create: {
          value: async (...args: Parameters<ExecutorStore['create']>) => {
            const schema = args[1].schema_name;
            if (armed && (schema === 'tool.request.v1' || schema === 'workflow.result.v1')) {
              armed = false;
              throw new RetriableError('injected crash after the run write');
            }
            return store.create(...args);
          },
        },
      });
      return { deps: deps(writer), arm: (on: boolean) => (armed = on) };
    });
    const pool: Array<[Breadcrumb, Breadcrumb]> = [
      [workflow, request],
      [workflow, request],
      [workflow, request],
    ];
    const seen = new Set<string>();
    let crashes = 0;
    while (pool.length > 0) {
      const [pair] = pool.splice(Math.floor(random() * pool.length), 1);
      if (pair === undefined) break;
      const worker = workers[random() < 0.5 ? 0 : 1] as (typeof workers)[number];
      worker.arm(random() < 0.2);
      try {
        await processExecutorMessage(messageFor(pair[0], pair[1]), worker.deps);
      } catch (error) {
        if (!(error instanceof RetriableError)) throw error;
        crashes++;
        pool.push(pair);
      }
      worker.arm(false);
      for (const schema of ['tool.request.v1', 'tool.response.v1']) {
        for (const b of await tagged(ws, schema, runId)) {
          if (seen.has(b.id)) continue;
          seen.add(b.id);
          for (let i = 0; i < 3; i++) pool.push([schema === 'tool.request.v1' ? tool : workflow, b]);
        }
      }
    }
    const run = (await store.get(ws, runId)).context as unknown as Run;
    expect(run.status).toBe('succeeded');
    expect(run.output).toEqual({
      p: { l: { side: 'L' }, r: { side: 'R' } },
      m: [1, 2, 3, 4, 5, 6].map((n) => ({ n })),
    });
    expect(crashes).toBeGreaterThan(0);
    expect(await tagged(ws, 'tool.request.v1', runId)).toHaveLength(10);
    const results = await store.list({ workspace: ws, schema_name: 'workflow.result.v1', limit: 10 });
    expect(results.items).toHaveLength(1);
    expect(Object.values(run.steps).every((s) => s.attempts === 1)).toBe(true);
  });
});
