/**
 * The metrics the handlers emit, read as CloudWatch reads them: the EMF lines Powertools writes to stdout. A real
 * handler (the dashboard's files, which needs no table) and the executors' batch metrics through the SQS handler
 * skeleton; and no "No application metrics to publish" warning on any invocation, with metrics on (Lambda) or
 * off (`crumbs dev` sets POWERTOOLS_METRICS_DISABLED).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Context, SQSEvent, SQSRecord } from 'aws-lambda';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { HttpEvent } from '#shared/core/api/http.ts';
import type { ProcessOutcome } from '#shared/core/executor/pipeline.ts';
import { ENV, METRICS_NAMESPACE } from '#shared/topology.ts';
import { proxyEvent } from '../../support/proxy-event.ts';

const context = {
  functionName: 'crumbs-test',
  functionVersion: '$LATEST',
  invokedFunctionArn: 'arn:aws:lambda:eu-west-1:123456789012:function:crumbs-test',
  memoryLimitInMB: '256',
  awsRequestId: 'req-1',
  logGroupName: '/aws/lambda/crumbs-test',
  logStreamName: 'stream',
  callbackWaitsForEmptyEventLoop: false,
  getRemainingTimeInMillis: () => 30_000,
  done: () => undefined,
  fail: () => undefined,
  succeed: () => undefined,
} as Context;

interface Emf {
  _aws: { CloudWatchMetrics: { Namespace: string; Dimensions: string[][]; Metrics: { Name: string }[] }[] };
  [key: string]: unknown;
}

let written: string[] = [];
beforeEach(() => {
  written = [];
  const keep = (chunk: unknown) => {
    written.push(String(chunk));
    return true;
  };
  vi.spyOn(process.stdout, 'write').mockImplementation(keep);
  vi.spyOn(process.stderr, 'write').mockImplementation(keep);
  vi.resetModules();
});
afterEach(() => {
  vi.restoreAllMocks();
  vi.unstubAllEnvs();
});

/** The EMF documents written, but the cold start's (its own document, by function name). */
function emf(): Emf[] {
  return written
    .flatMap((chunk) => chunk.split('\n'))
    .filter((line) => line.startsWith('{') && line.includes('CloudWatchMetrics'))
    .map((line) => JSON.parse(line) as Emf)
    .filter((doc) => !('ColdStart' in doc));
}

const warned = () => written.some((chunk) => chunk.includes('No application metrics to publish'));

/** A GET of the dashboard's files as the REST front door hands it over (a proxy integration's event). */
function uiEvent(path: string): HttpEvent {
  return proxyEvent({ method: 'GET', path });
}

function uiDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'crumbs-ui-'));
  writeFileSync(join(dir, 'index.html'), '<!doctype html><title>crumbs</title>');
  return dir;
}

describe('handler metrics (EMF)', () => {
  it("the dashboard's handler says on each answer whether it was a client or server error", async () => {
    vi.stubEnv(ENV.uiDir, uiDir());
    vi.stubEnv('POWERTOOLS_METRICS_DISABLED', 'false');
    const { handler } = await import('#functions/ui/handler.ts');
    const ok = await handler(uiEvent('/ui/'), context);
    const missing = await handler(uiEvent('/ui/assets/nothing-here.js'), context);
    expect([ok.statusCode, missing.statusCode]).toEqual([200, 404]);
    const docs = emf();
    expect(docs).toHaveLength(2);
    for (const doc of docs) {
      const [directive] = doc._aws.CloudWatchMetrics;
      expect(directive?.Namespace).toBe(METRICS_NAMESPACE);
      expect(directive?.Dimensions).toEqual([['service']]);
      expect(directive?.Metrics.map((m) => m.Name).sort()).toEqual(['ClientErrors', 'ServerErrors']);
      expect(doc.service).toBe('crumbs-ui');
    }
    expect(docs.map((d) => [d.ClientErrors, d.ServerErrors])).toEqual([
      [0, 0],
      [1, 0],
    ]);
    expect(warned()).toBe(false);
  });

  it('warns of no empty metrics locally, where crumbs dev turns them off', async () => {
    vi.stubEnv(ENV.uiDir, uiDir());
    vi.stubEnv('POWERTOOLS_METRICS_DISABLED', 'true');
    const { handler } = await import('#functions/ui/handler.ts');
    expect((await handler(uiEvent('/ui/'), context)).statusCode).toBe(200);
    expect(emf()).toEqual([]);
    expect(warned()).toBe(false);
  });

  it("an executor's batch: triggers, failures, loop stops and the answers' model tokens and cost", async () => {
    vi.stubEnv('POWERTOOLS_METRICS_DISABLED', 'false');
    const { powertools } = await import('#functions/wiring/powertools.ts');
    const { sqsHandler } = await import('#functions/wiring/sqs-handler.ts');
    const { measureExecutorBatch } = await import('#functions/wiring/metrics.ts');
    const usage = (input: number, output: number, cost: number) => ({
      input_tokens: input,
      output_tokens: output,
      cost_nusd: cost,
    });
    const outcomes: Record<string, ProcessOutcome> = {
      a: { status: 'responded', outputIds: ['o1'], modelUsage: usage(1_000, 200, 1_500_000) },
      b: { status: 'errored', outputIds: ['o2'], error: 'x', modelUsage: usage(500, 0, 500_000) },
      c: { status: 'loop-stopped', outputIds: ['o3'] },
      d: { status: 'skipped', reason: 'a duplicate' },
    };
    const handler = sqsHandler(powertools('crumbs-executor-test', []), {
      queue: { visibilityTimeoutSeconds: 60, maxReceiveCount: 5 },
      handle: async (record) => outcomes[record.body] as ProcessOutcome,
      measure: measureExecutorBatch,
    });
    const records = Object.keys(outcomes).map(
      (body, i) =>
        ({ messageId: `m${i}`, body, attributes: {}, messageAttributes: {} }) as unknown as SQSRecord,
    );
    expect(await handler({ Records: records } as SQSEvent, context)).toEqual({ batchItemFailures: [] });
    const [doc] = emf();
    expect(doc?.service).toBe('crumbs-executor-test');
    expect(doc?._aws.CloudWatchMetrics[0]?.Namespace).toBe(METRICS_NAMESPACE);
    expect({
      Triggers: doc?.Triggers,
      TriggersFailed: doc?.TriggersFailed,
      LoopStops: doc?.LoopStops,
      ModelInputTokens: doc?.ModelInputTokens,
      ModelOutputTokens: doc?.ModelOutputTokens,
      ModelCostUsd: doc?.ModelCostUsd,
    }).toEqual({
      Triggers: 4,
      TriggersFailed: 0,
      LoopStops: 1,
      ModelInputTokens: 1_500,
      ModelOutputTokens: 200,
      ModelCostUsd: 0.002,
    });
    expect(warned()).toBe(false);
  });
});
