/**
 * The OpenTelemetry side of tracing, in memory: the trace context crumbs carries on items and events (a write's
 * `traceparent`, continued by the publisher, continued by the executor), plain puts and malformed contexts starting
 * traces of their own, and the GenAI spans of model and tool calls — content only when turned on, and then only
 * what the masking hook returns.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { marshall } from '@aws-sdk/util-dynamodb';
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import type { DynamoDBRecord } from 'aws-lambda';
import { describe, expect, it, vi } from 'vitest';
import { headItem, toRecord, unmarshallImage } from '#shared/adapters/dynamodb/items.ts';
import { headersFromSecret, otelTracingFromEnv, otelTracingOn } from '#shared/adapters/tracing/otel.ts';
import { contextOf, traceparentOf } from '#shared/adapters/tracing/otel-context.ts';
import { inModelCallSpan, inToolSpan } from '#shared/core/model-calls/genai-spans.ts';
import { publishStreamBatch } from '#shared/core/stream/publisher.ts';
import type { Breadcrumb } from '#shared/domain/breadcrumb.ts';
import { callRecord } from '#shared/domain/llm-usage.ts';
import type { BusEntry, EventBus } from '#shared/ports/event-bus.ts';
import type { LlmRequest, LlmResponse } from '#shared/ports/llm.ts';

function memoryTracing() {
  const exporter = new InMemorySpanExporter();
  const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
  const tracing = otelTracingOn(provider.getTracer('test'));
  return { tracing, spans: () => exporter.getFinishedSpans() };
}

const KEYS = { workspace: 'ws', breadcrumbId: 'b1', triggerVersion: 1, thread: 't', definitionId: 'd' };

const record = (overrides: Partial<Breadcrumb> = {}): Breadcrumb => ({
  id: 'b1',
  workspace: 'ws',
  schema_name: 'note.text.v1',
  title: 't',
  tags: [],
  context: { text: 'hi' },
  version: 1,
  checksum: 'c',
  created_at: '2026-01-01T00:00:00.000Z',
  updated_at: '2026-01-01T00:00:00.000Z',
  created_by: 'user:x',
  updated_by: 'user:x',
  ...overrides,
});

let sequence = 1;
function insert(image: Record<string, unknown>): DynamoDBRecord {
  sequence++;
  return {
    eventName: 'INSERT',
    dynamodb: {
      SequenceNumber: String(sequence),
      NewImage: marshall(image, { removeUndefinedValues: true }) as never,
    },
  };
}

function bus() {
  const put: BusEntry[] = [];
  const b: EventBus = {
    async put(entries) {
      put.push(...entries);
      return { results: entries.map(() => ({ eventId: 'e' })) };
    },
  };
  return { bus: b, put };
}

const adopter = {
  adopt: vi.fn(async () => undefined),
  rejectPlainPut: vi.fn(async () => undefined),
  discardPlainPut: vi.fn(async () => undefined),
};

const TRACE_ID = /^00-([0-9a-f]{32})-([0-9a-f]{16})-0[01]$/;

describe('trace context on items and events', () => {
  it('stamps the writing span on the head item, and nothing outside a span', async () => {
    const { tracing } = memoryTracing();
    expect(headItem(record(), 'w1').traceparent).toBeUndefined();
    let inside: string | undefined;
    let traceId: string | undefined;
    await tracing.span('write', KEYS, async (span) => {
      traceId = span.traceId;
      inside = headItem(record(), 'w1').traceparent as string | undefined;
    });
    expect(inside).toMatch(TRACE_ID);
    expect(inside?.split('-')[1]).toBe(traceId);
    // It is the item's, never the record's: reading the item back leaves it out.
    const image = marshall(
      { ...headItem(record(), 'w1'), traceparent: inside },
      { removeUndefinedValues: true },
    );
    expect(toRecord(unmarshallImage(image))).not.toHaveProperty('traceparent');
  });

  it('continues the write in the publisher and hands the publisher span on in the event', async () => {
    const { tracing, spans } = memoryTracing();
    let written: string | undefined;
    await tracing.span('write', KEYS, async () => {
      written = traceparentOf();
    });
    const { bus: b, put } = bus();
    await publishStreamBatch(
      [
        insert({ ...headItem(record({ id: 'traced' }), 'w1'), traceparent: written }),
        insert(headItem(record({ id: 'plain' }), 'w2')),
        insert({ ...headItem(record({ id: 'forged' }), 'w3'), traceparent: '00-zz-not-a-context' }),
      ],
      { bus: b, adopter, tracing },
    );
    const [traced, plain, forged] = put.map((e) => e.detail.traceparent as string);
    const [, writeTrace, writeSpan] = TRACE_ID.exec(written!)!;
    const [, tracedTrace] = TRACE_ID.exec(traced!)!;
    expect(tracedTrace).toBe(writeTrace);
    const publishSpans = spans().filter((s) => s.name === 'publish note.text.v1');
    expect(publishSpans).toHaveLength(3);
    expect(publishSpans[0]!.parentSpanContext?.spanId).toBe(writeSpan);
    // A write without a context (a plain put, tracing off) or with a malformed one starts a trace of its own.
    for (const other of [plain, forged]) {
      expect(other).toMatch(TRACE_ID);
      expect(TRACE_ID.exec(other!)![1]).not.toBe(writeTrace);
    }
    expect(publishSpans[1]!.parentSpanContext).toBeUndefined();
    expect(publishSpans[2]!.parentSpanContext).toBeUndefined();
    expect(publishSpans[0]!.attributes).toMatchObject({
      'crumbs.breadcrumb_id': 'traced',
      'crumbs.workspace': 'ws',
    });
  });

  it('continues the event in the executor span', async () => {
    const { tracing, spans } = memoryTracing();
    const parent = tracing.start('publish');
    await tracing.span('tool trigger', KEYS, async () => undefined, { parent: parent.traceparent });
    parent.end();
    const executor = spans().find((s) => s.name === 'tool trigger')!;
    expect(executor.spanContext().traceId).toBe(parent.traceId);
    expect(executor.attributes).toMatchObject({ 'crumbs.breadcrumb_id': 'b1', 'crumbs.definition_id': 'd' });
    expect(contextOf('garbage')).toBe(contextOf(undefined));
  });

  it('records nothing and writes no context when no endpoint is set', () => {
    expect(otelTracingFromEnv('crumbs-x', {})).toBeUndefined();
    expect(otelTracingFromEnv('crumbs-x', { CRUMBS_OTLP_ENDPOINT: 'none' })).toBeUndefined();
    expect(() => otelTracingFromEnv('crumbs-x', { CRUMBS_OTLP_ENDPOINT: 'ftp://x' })).toThrow(/http/);
    expect(() => otelTracingFromEnv('crumbs-x', { CRUMBS_OTLP_ENDPOINT: 'xray' })).toThrow(/AWS_REGION/);
  });
});

const REQUEST: LlmRequest = {
  model: 'bedrock/anthropic.claude-3-5-haiku-20241022-v1:0',
  system: 'Be brief.',
  messages: [{ role: 'user', content: 'my card is 4111 1111 1111 1111' }],
  maxOutputTokens: 100,
};
const RESPONSE: LlmResponse = {
  text: 'noted 4111 1111 1111 1111',
  toolCalls: [{ id: 'call-1', name: 'lookup', input: { q: 1 } }],
  finishReason: 'tool-calls',
  usage: { inputTokens: 12, outputTokens: 7 },
  model: 'bedrock/anthropic.claude-3-5-haiku-20241022-v1:0',
};

async function modelCall(content: Parameters<typeof inModelCallSpan>[1]) {
  const { tracing, spans } = memoryTracing();
  await tracing.span('agent trigger', KEYS, () =>
    inModelCallSpan(REQUEST, content, async () => ({
      response: RESPONSE,
      record: callRecord(RESPONSE.model, RESPONSE.usage, {}),
    })),
  );
  return spans().find((s) => s.name.startsWith('chat '))!;
}

describe('GenAI spans (semantic conventions v1.37.0)', () => {
  it('describes a model call: operation, provider, models, finish reason and the recorded tokens', async () => {
    const chat = await modelCall(undefined);
    expect(chat.name).toBe('chat anthropic.claude-3-5-haiku-20241022-v1:0');
    expect(chat.attributes).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'aws.bedrock',
      'gen_ai.request.model': 'anthropic.claude-3-5-haiku-20241022-v1:0',
      'gen_ai.request.max_tokens': 100,
      'gen_ai.response.model': 'anthropic.claude-3-5-haiku-20241022-v1:0',
      'gen_ai.response.finish_reasons': ['tool_call'],
      'gen_ai.usage.input_tokens': 12,
      'gen_ai.usage.output_tokens': 7,
    });
    expect(JSON.stringify(chat.attributes)).not.toContain('4111');
  });

  it('records prompt and completion only when turned on, and then what the mask returns', async () => {
    const captured = await modelCall({ capture: true });
    expect(JSON.parse(String(captured.attributes['gen_ai.input.messages']))).toEqual([
      { role: 'user', parts: [{ type: 'text', content: 'my card is 4111 1111 1111 1111' }] },
    ]);
    expect(JSON.parse(String(captured.attributes['gen_ai.output.messages']))).toEqual([
      {
        role: 'assistant',
        parts: [
          { type: 'text', content: 'noted 4111 1111 1111 1111' },
          { type: 'tool_call', id: 'call-1', name: 'lookup', arguments: { q: 1 } },
        ],
        finish_reason: 'tool_call',
      },
    ]);
    expect(JSON.parse(String(captured.attributes['gen_ai.system_instructions']))).toEqual([
      { type: 'text', content: 'Be brief.' },
    ]);

    const masked = await modelCall({
      capture: true,
      mask: (content) => JSON.parse(JSON.stringify(content).replaceAll('4111 1111 1111 1111', '[card]')),
    });
    expect(JSON.stringify(masked.attributes)).not.toContain('4111');
    expect(String(masked.attributes['gen_ai.input.messages'])).toContain('[card]');

    const withheld = await modelCall({ capture: true, mask: () => undefined });
    expect(withheld.attributes['gen_ai.input.messages']).toBeUndefined();
    expect(withheld.attributes['gen_ai.output.messages']).toBeUndefined();
  });

  it('marks a failed call and a failed tool', async () => {
    const { tracing, spans } = memoryTracing();
    await tracing
      .span('agent trigger', KEYS, () =>
        inModelCallSpan(REQUEST, undefined, async () => {
          throw new TypeError('provider down');
        }),
      )
      .catch(() => undefined);
    await tracing
      .span('tool trigger', KEYS, () =>
        inToolSpan({ name: 'http', callId: 'r-1' }, async () => {
          throw new Error('refused');
        }),
      )
      .catch(() => undefined);
    const chat = spans().find((s) => s.name.startsWith('chat '))!;
    expect(chat.status.code).toBe(2);
    expect(chat.attributes['error.type']).toBe('TypeError');
    const tool = spans().find((s) => s.name === 'execute_tool http')!;
    expect(tool.status.code).toBe(2);
    expect(tool.attributes).toMatchObject({ 'gen_ai.tool.name': 'http', 'gen_ai.tool.call.id': 'r-1' });
    expect(tool.parentSpanContext?.spanId).toBe(
      spans()
        .find((s) => s.name === 'tool trigger')!
        .spanContext().spanId,
    );
  });

  it('makes no span outside a traced invocation', async () => {
    const response = await inModelCallSpan(REQUEST, { capture: true }, async () => ({
      response: RESPONSE,
      record: callRecord(RESPONSE.model, RESPONSE.usage, {}),
    }));
    expect(response).toBe(RESPONSE);
  });
});

describe('OTLP headers from a Secrets Manager secret', () => {
  it('reads them with the request the SDK client sends, and refuses a secret that is not an object', async () => {
    const seen: {
      target: string | undefined;
      type: string | undefined;
      body: string;
      auth: string | undefined;
    }[] = [];
    let answer = JSON.stringify({ 'X-Honeycomb-Team': 'abc', ignored: 1 });
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => {
        body += c.toString();
      });
      req.on('end', () => {
        seen.push({
          target: req.headers['x-amz-target'] as string | undefined,
          type: req.headers['content-type'],
          body,
          auth: req.headers.authorization,
        });
        res.writeHead(200, { 'content-type': 'application/x-amz-json-1.1' });
        res.end(
          JSON.stringify({
            ARN: 'arn:aws:secretsmanager:eu-west-1:1:secret:h',
            Name: 'h',
            SecretString: answer,
          }),
        );
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    const env = {
      AWS_REGION: 'eu-west-1',
      AWS_ACCESS_KEY_ID: 'AKID',
      AWS_SECRET_ACCESS_KEY: 'secret',
      AWS_ENDPOINT_URL_SECRETS_MANAGER: endpoint,
    };
    try {
      expect(await headersFromSecret('crumbs/otlp-headers', env)).toEqual({ 'x-honeycomb-team': 'abc' });
      const sdk = new SecretsManagerClient({
        endpoint,
        region: 'eu-west-1',
        credentials: { accessKeyId: 'AKID', secretAccessKey: 'secret' },
      });
      await sdk.send(new GetSecretValueCommand({ SecretId: 'crumbs/otlp-headers' }));
      sdk.destroy();
      const [ours, theirs] = seen;
      expect(ours!.target).toBe(theirs!.target);
      expect(ours!.type).toBe(theirs!.type);
      expect(JSON.parse(ours!.body)).toEqual(JSON.parse(theirs!.body));
      expect(ours!.auth).toMatch(/Credential=AKID\/\d{8}\/eu-west-1\/secretsmanager\/aws4_request/);
      answer = '["not", "an", "object"]';
      await expect(headersFromSecret('crumbs/otlp-headers', env)).rejects.toThrow(
        /JSON object of OTLP headers/,
      );
    } finally {
      server.close();
    }
  });
});
