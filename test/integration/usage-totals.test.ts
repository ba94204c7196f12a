/**
 * Usage totals on DynamoDB Local through the publisher: a stream batch's `llm_usage` records are added once per
 * counter; the same batch handed over again adds nothing, a redelivery that reaches further adds only what is new,
 * a person's write claiming usage counts nothing, and each workspace reads only its own totals.
 */
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';
import { describe, expect, it, vi } from 'vitest';
import { headItem } from '#shared/adapters/dynamodb/items.ts';
import { DynamoUsageTotals } from '#shared/adapters/dynamodb/usage-totals.ts';
import { readUsage } from '#shared/core/api/usage-routes.ts';
import { publishStreamBatch } from '#shared/core/stream/publisher.ts';
import type { Breadcrumb } from '#shared/domain/breadcrumb.ts';
import type { LlmUsageRecord } from '#shared/domain/llm-usage.ts';
import type { EventBus } from '#shared/ports/event-bus.ts';
import { topology } from '#shared/topology.ts';
import { localDynamoClient, uniqueWorkspace } from '../support/local.ts';

const doc = () =>
  DynamoDBDocumentClient.from(localDynamoClient(), { marshallOptions: { removeUndefinedValues: true } });
const totals = new DynamoUsageTotals(topology.table.name, doc());
const bus: EventBus = { put: async (entries) => ({ results: entries.map(() => ({ eventId: 'e' })) }) };
const adopter = {
  adopt: vi.fn(async () => undefined),
  rejectPlainPut: vi.fn(async () => undefined),
  discardPlainPut: vi.fn(async () => undefined),
};
const publish = (records: DynamoDBRecord[]) => publishStreamBatch(records, { bus, adopter, usage: totals });

const DAY = '2026-11-20';
let sequence = 10_000;
let n = 0;

function answer(ws: string, usage: LlmUsageRecord, writer = `agent:${usage.agent_id}`): DynamoDBRecord {
  const id = `ans-${++n}`;
  const record: Breadcrumb = {
    id,
    workspace: ws,
    schema_name: 'agent.response.v1',
    title: 't',
    tags: ['agent:response'],
    context: { message: 'hi', llm_usage: usage },
    version: 1,
    checksum: 'c',
    created_at: `${DAY}T10:15:00.000Z`,
    updated_at: `${DAY}T10:15:00.000Z`,
    created_by: writer,
    updated_by: writer,
  };
  return {
    eventName: 'INSERT',
    dynamodb: {
      SequenceNumber: String(++sequence),
      NewImage: marshall(headItem(record, `w-${id}`), { removeUndefinedValues: true }) as never,
    },
  };
}

const call = (input: number, output: number, cached: number, cost?: number) => ({
  model: 'openai/gpt-4o-mini',
  input_tokens: input,
  output_tokens: output,
  cached_tokens: cached,
  ...(cost !== undefined ? { cost_nusd: cost } : {}),
});

const range = { from: DAY, to: DAY };

describe('usage totals from the stream', () => {
  it('adds each write once, whatever batches hand it over again', async () => {
    const ws = uniqueWorkspace('usage');
    const a = answer(ws, {
      agent_id: 'helper',
      request_id: 'r1',
      run_id: 'run-1',
      thread: 't1',
      calls: [call(100, 20, 40, 1500), call(50, 10, 0, 700)],
    });
    const b = answer(ws, { agent_id: 'helper', request_id: 'r2', thread: 't2', calls: [call(7, 3, 0)] });
    const c = answer(ws, {
      agent_id: 'writer',
      request_id: 'r3',
      run_id: 'run-1',
      thread: 't1',
      calls: [call(1, 1, 0, 9)],
    });

    expect((await publish([a, b])).batchItemFailures).toEqual([]);
    // The same batch again (a crash after the counters were added), then a redelivery reaching further.
    expect((await publish([a, b])).batchItemFailures).toEqual([]);
    expect((await publish([b, c])).batchItemFailures).toEqual([]);

    const day = await readUsage(totals, ws, { by: 'day', ...range });
    expect(day.items).toEqual([
      expect.objectContaining({
        key: DAY,
        calls: 4,
        input_tokens: 158,
        output_tokens: 34,
        cached_tokens: 40,
        cost_nusd: 2209,
        unpriced_calls: 1,
      }),
    ]);
    expect(day.totals.cost_usd).toBeCloseTo(2209e-9, 15);
    const agents = await readUsage(totals, ws, { by: 'agent', ...range });
    expect(agents.items.map((i) => [i.key, i.calls, i.cost_nusd])).toEqual([
      ['helper', 3, 2200],
      ['writer', 1, 9],
    ]);
    const runs = await readUsage(totals, ws, { by: 'run', ...range });
    expect(runs.items.map((i) => [i.key, i.calls, i.input_tokens])).toEqual([['run-1', 3, 151]]);
    const threads = await readUsage(totals, ws, { by: 'thread', ...range });
    expect(threads.items.map((i) => [i.key, i.calls])).toEqual([
      ['t1', 3],
      ['t2', 1],
    ]);
  });

  it('counts nothing a person wrote, and shows no workspace the usage of another', async () => {
    const ws = uniqueWorkspace('usage-own');
    const other = uniqueWorkspace('usage-other');
    await publish([
      answer(ws, { agent_id: 'helper', calls: [call(10, 5, 0, 100)] }),
      answer(ws, { agent_id: 'helper', calls: [call(1_000_000, 0, 0, 999_999)] }, 'user:mallory'),
      answer(other, { agent_id: 'spy', calls: [call(3, 3, 0, 3)] }),
    ]);
    const mine = await readUsage(totals, ws, { by: 'agent', ...range });
    expect(mine.items.map((i) => [i.key, i.calls, i.input_tokens])).toEqual([['helper', 1, 10]]);
    const theirs = await readUsage(totals, other, { by: 'agent', ...range });
    expect(theirs.items.map((i) => i.key)).toEqual(['spy']);
  });

  it('adds concurrent batches into one counter without losing any', async () => {
    const ws = uniqueWorkspace('usage-race');
    const batches = Array.from({ length: 6 }, () => [
      answer(ws, { agent_id: 'helper', calls: [call(2, 1, 0, 10)] }),
      answer(ws, { agent_id: 'helper', calls: [call(2, 1, 0, 10)] }),
    ]);
    await Promise.all(batches.map((b) => publish(b)));
    await Promise.all(batches.map((b) => publish(b)));
    const day = await readUsage(totals, ws, { by: 'day', ...range });
    expect(day.totals).toMatchObject({ calls: 12, input_tokens: 24, output_tokens: 12, cost_nusd: 120 });
  });
});
