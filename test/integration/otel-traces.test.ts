/**
 * OpenTelemetry end to end, as `crumbs dev --otlp-endpoint URL` runs it: a local stack of its own sends its spans
 * to a small OTLP/HTTP receiver on loopback. One agent turn with a tool call (the scripted model calls `echo` once,
 * then answers) is one trace, rooted at the HTTP request that wrote the user's message: the write → publisher →
 * executor chain of every breadcrumb of the thread as parents, two `chat` spans in the GenAI conventions whose token
 * counts are the `llm_usage` records the turn wrote, and one `execute_tool echo` span. Prompts are not on the spans
 * (content capture is off by default).
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '#local/aws-env.ts';
import { type LocalStack, startLocalStack } from '#local/stack.ts';
import { topology } from '#shared/topology.ts';
import { FAKE_USAGE, type FakeOpenAi, startFakeOpenAi } from '../support/fake-openai.ts';
import { eventually, uniqueWorkspace } from '../support/local.ts';
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from '../support/otlp-receiver.ts';

const TOKEN = 'otel-token';
const ws = uniqueWorkspace('otel');

let stack: LocalStack;
let receiver: OtlpReceiver;
let model: FakeOpenAi;

beforeAll(async () => {
  receiver = await startOtlpReceiver();
  model = await startFakeOpenAi();
  process.env.OPENAI_COMPATIBLE_BASE_URL = model.baseUrl;
  stack = await startLocalStack({
    apiPort: 0,
    dynamodbPort: 0,
    sqsPort: 0,
    eventbridgePort: 0,
    schedulerPort: 0,
    token: TOKEN,
    seedDemo: false,
    otlpEndpoint: receiver.url,
    // The scripted model server is on loopback.
    allowPrivateNetwork: true,
  });
}, 120_000);

afterAll(async () => {
  await stack?.stop();
  await model?.stop();
  await receiver?.close();
});

async function call(method: string, path: string, body?: unknown) {
  const res = await fetch(`${stack.endpoints.api}/v1/workspaces/${ws}${path}`, {
    method,
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  expect(res.status, await res.clone().text()).toBeLessThan(300);
  return (await res.json()) as Record<string, unknown> & { context: Record<string, unknown> };
}

async function list(schema: string, tag: string) {
  const page = (await call(
    'GET',
    `/breadcrumbs?schema_name=${schema}&tag=${encodeURIComponent(tag)}&view=full&limit=20`,
  )) as unknown as { items: { id: string; context: Record<string, unknown> }[] };
  return page.items;
}

async function apply(id: string, schema_name: string, context: Record<string, unknown>) {
  const written = await call('PUT', `/breadcrumbs/${id}`, { schema_name, title: id, tags: [], context });
  await eventually(async () => {
    const [status] = await list('definition.status.v1', `definition:${id}`);
    const s = status?.context;
    return s && Number(s.definition_version) >= Number(written.version) && s.state === 'active'
      ? s
      : undefined;
  }, 30_000);
}

const str = (v: unknown) => (typeof v === 'string' ? v : undefined);

describe('OpenTelemetry traces of an agent turn', () => {
  it('sends one trace per request, with GenAI spans whose token counts are the usage records', async () => {
    await apply('tool-echo', 'tool.def.v1', { name: 'echo', implementation: 'echo' });
    await apply('agent-traced', 'agent.def.v1', {
      agent_id: 'traced',
      system_prompt: 'Work.',
      model: 'openai-compatible/rounds-1-echo',
      tools: ['echo'],
      subscriptions: {
        selectors: [
          { schema_name: 'user.message.v1', role: 'trigger', all_tags: ['to:traced'] },
          {
            schema_name: 'tool.response.v1',
            role: 'trigger',
            context_match: [{ path: '$.requestedBy', op: 'eq', value: 'traced' }],
          },
        ],
      },
    });
    const asked = await call('POST', '/breadcrumbs', {
      schema_name: 'user.message.v1',
      title: 'job',
      tags: ['to:traced'],
      context: { message: 'the secret job' },
    });
    const thread = String(asked.id);
    const [answer] = await eventually(async () => {
      const items = await list('agent.response.v1', `thread:${thread}`);
      return items.length > 0 ? items : undefined;
    }, 60_000);
    expect(answer!.context).toMatchObject({ tool_rounds: 1 });

    const inThread = (s: ReceivedSpan): boolean => {
      const root = receiver.spans.find((r) => r.attributes['crumbs.breadcrumb_id'] === thread);
      return root !== undefined && s.traceId === root.traceId;
    };
    // Every span of the thread has arrived once the answer's publish span has (it is the last hop).
    const spans = await eventually(async () => {
      const publishedAnswer = receiver.spans.find(
        (s) => s.name === 'publish agent.response.v1' && s.attributes['crumbs.thread'] === thread,
      );
      const chats = receiver.spans.filter((s) => s.name.startsWith('chat ') && inThread(s));
      return publishedAnswer && chats.length === 2 ? receiver.spans : undefined;
    }, 30_000);

    // One trace: the request that wrote the message is its root, and every span of the thread is in it.
    const published = spans.find(
      (s) => s.name === 'publish user.message.v1' && s.attributes['crumbs.breadcrumb_id'] === thread,
    )!;
    const traceId = published.traceId;
    const trace = spans.filter((s) => s.traceId === traceId);
    const byId = new Map(trace.map((s) => [s.spanId, s]));
    const roots = trace.filter((s) => s.parentSpanId === undefined);
    expect(roots.map((s) => [s.name, s.service])).toEqual([['HTTP POST', 'crumbs-api']]);
    for (const s of trace) if (s.parentSpanId !== undefined) expect(byId.has(s.parentSpanId)).toBe(true);
    const threadSpans = spans.filter((s) => s.attributes['crumbs.thread'] === thread);
    expect(new Set(threadSpans.map((s) => s.traceId))).toEqual(new Set([traceId]));

    // The path of each breadcrumb: write → publisher → executor, the causation chain as parents.
    // Each hop at least once (a redelivery under load, or a request's claim rewriting its head, adds a span of the
    // same kinds, never another kind).
    const count = (names: string[]) =>
      names.reduce<Record<string, number>>((c, n) => Object.assign(c, { [n]: (c[n] ?? 0) + 1 }), {});
    const expected = count([
      'HTTP POST',
      'publish user.message.v1',
      'agent trigger',
      'chat rounds-1-echo',
      'publish tool.request.v1',
      'tool trigger',
      'execute_tool echo',
      'publish tool.response.v1',
      'agent trigger',
      'chat rounds-1-echo',
      'publish agent.response.v1',
    ]);
    const seen = count(trace.map((s) => s.name));
    expect(Object.keys(seen).sort()).toEqual(Object.keys(expected).sort());
    for (const [name, n] of Object.entries(expected)) expect(seen[name], name).toBeGreaterThanOrEqual(n);
    expect(seen['HTTP POST']).toBe(1);
    const parentName = (s: ReceivedSpan) => byId.get(s.parentSpanId ?? '')?.name;
    expect(parentName(published)).toBe('HTTP POST');
    const toolTrigger = trace.find((s) => s.name === 'tool trigger')!;
    expect(parentName(toolTrigger)).toBe('publish tool.request.v1');
    expect(toolTrigger.service).toBe('crumbs-executor-tool');
    expect(toolTrigger.attributes).toMatchObject({ 'messaging.system': 'aws_sqs', 'crumbs.workspace': ws });
    const requestPublished = trace.find((s) => s.name === 'publish tool.request.v1')!;
    expect(parentName(requestPublished)).toBe('agent trigger');
    expect(requestPublished.attributes['crumbs.caused_by']).toBe(`${thread}@1`);

    // Model calls in the GenAI conventions; their token counts are the usage records the turn wrote.
    const chats = trace.filter((s) => s.name.startsWith('chat '));
    for (const chat of chats) {
      expect(parentName(chat)).toBe('agent trigger');
      expect(chat.kind).toBe(3); // CLIENT
      expect(chat.attributes).toMatchObject({
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': 'openai',
        'gen_ai.request.model': 'rounds-1-echo',
        'gen_ai.response.model': 'rounds-1-echo',
        'gen_ai.usage.input_tokens': FAKE_USAGE.input,
        'gen_ai.usage.output_tokens': FAKE_USAGE.output,
      });
      expect(chat.attributes['gen_ai.input.messages']).toBeUndefined();
      expect(JSON.stringify(chat.attributes)).not.toContain('secret job');
    }
    expect(chats.map((c) => c.attributes['gen_ai.response.finish_reasons']).sort()).toEqual([
      ['stop'],
      ['tool_call'],
    ]);
    const records = [
      ...(await list('tool.request.v1', `thread:${thread}`)),
      ...(await list('agent.conversation.v1', `thread:${thread}`)),
      answer!,
    ].flatMap(
      (b) =>
        (b.context.llm_usage as { calls: { input_tokens: number; output_tokens: number }[] } | undefined)
          ?.calls ?? [],
    );
    expect(records).toHaveLength(2);
    const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
    expect(sum(chats.map((c) => Number(c.attributes['gen_ai.usage.input_tokens'])))).toBe(
      sum(records.map((r) => r.input_tokens)),
    );
    expect(sum(chats.map((c) => Number(c.attributes['gen_ai.usage.output_tokens'])))).toBe(
      sum(records.map((r) => r.output_tokens)),
    );

    // The tool's execution, under the tool kind's trigger, with the request it answers as its call id.
    const tool = trace.find((s) => s.name === 'execute_tool echo')!;
    expect(parentName(tool)).toBe('tool trigger');
    const [request] = await list('tool.request.v1', `thread:${thread}`);
    expect(tool.attributes).toMatchObject({
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'echo',
      'gen_ai.tool.call.id': str(request!.context.requestId),
    });

    // The definitions written before are traces of their own.
    const definitionWrite = spans.find(
      (s) => s.name === 'publish agent.def.v1' && s.attributes['crumbs.breadcrumb_id'] === 'agent-traced',
    );
    expect(definitionWrite?.traceId).toBeDefined();
    expect(definitionWrite?.traceId).not.toBe(traceId);
  }, 120_000);

  it("lets no writer join another's trace: a request's traceparent header and a plain put's attribute start their own", async () => {
    const foreign = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    const res = await fetch(`${stack.endpoints.api}/v1/workspaces/${ws}/breadcrumbs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', traceparent: foreign },
      body: JSON.stringify({ schema_name: 'note.text.v1', title: 'n', tags: [], context: { text: 'hi' } }),
    });
    expect(res.status).toBe(201);
    const viaApi = String(((await res.json()) as { id: string }).id);
    const documents = DynamoDBDocumentClient.from(
      new DynamoDBClient({
        endpoint: stack.endpoints.dynamodb,
        region: LOCAL_REGION,
        credentials: LOCAL_CREDENTIALS,
      }),
    );
    await documents.send(
      new PutCommand({
        TableName: topology.table.name,
        Item: {
          id: 'plain-traced',
          workspace: ws,
          schema_name: 'note.text.v1',
          context: { text: 'x' },
          traceparent: foreign,
        },
      }),
    );
    const published = await eventually(async () => {
      const spans = receiver.spans.filter(
        (s) =>
          s.name === 'publish note.text.v1' &&
          [viaApi, 'plain-traced'].includes(String(s.attributes['crumbs.breadcrumb_id'])),
      );
      return spans.length === 2 ? spans : undefined;
    }, 30_000);
    for (const span of published) expect(span.traceId).not.toBe('0af7651916cd43dd8448eb211c80319c');
    const request = receiver.spans.find(
      (s) =>
        s.name === 'HTTP POST' &&
        s.traceId === published.find((p) => p.attributes['crumbs.breadcrumb_id'] === viaApi)!.traceId,
    )!;
    expect(request.parentSpanId).toBeUndefined();
    expect(
      published.find((p) => p.attributes['crumbs.breadcrumb_id'] === 'plain-traced')!.parentSpanId,
    ).toBeUndefined();
  }, 60_000);
});
