import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '#local/aws-env.ts';
import type { LocalStack } from '#local/stack.ts';
import { pooledChecks } from '#shared/adapters/checks/checks.ts';
import type { DynamoBreadcrumbStore } from '#shared/adapters/dynamodb/breadcrumb-store.ts';
import { claimId, DynamoClaims } from '#shared/adapters/dynamodb/claims.ts';
import { LlmRouter } from '#shared/adapters/llm/llm-router.ts';
import { guardedFetch } from '#shared/adapters/network/guarded-fetch.ts';
import { otelTracingOn } from '#shared/adapters/tracing/otel.ts';
import { createAgentKind } from '#shared/core/agents/agent-kind.ts';
import { createApiAgent } from '#shared/core/agents/api-agent.ts';
import { turnOf, turnRecordId } from '#shared/core/agents/context/tool-rounds.ts';
import { createContextAgentKind } from '#shared/core/agents/context/turn.ts';
import type { ExecutorKindImplementation } from '#shared/core/executor/contract.ts';
import { handleDeadLetter } from '#shared/core/executor/dlq.ts';
import { type PipelineDeps, processExecutorMessage } from '#shared/core/executor/pipeline.ts';
import { createToolKind } from '#shared/core/tools/tool-kind.ts';
import {
  type Breadcrumb,
  type CreateBreadcrumbInput,
  CreateBreadcrumbSchema,
} from '#shared/domain/breadcrumb.ts';
import type { Causation } from '#shared/domain/change-event.ts';
import { RetriableError } from '#shared/domain/errors.ts';
import { type Clock, systemClock } from '#shared/ports/breadcrumb-store.ts';
import { silentLog } from '#shared/ports/log.ts';
import { noTracing, type SpanKeys, type Tracing } from '#shared/ports/tracing.ts';
import { builtinTools } from '#shared/tools/builtins.ts';
import { toolCatalog } from '#shared/tools/catalog.ts';
import { createHttpTool } from '#shared/tools/http.ts';
import { topology } from '#shared/topology.ts';
import { messageFor } from '../support/executor-message.ts';
import { faultyIo, throttlingError } from '../support/faults.ts';
import { startHttpServer } from '../support/http-server.ts';
import { eventually, localStore, startStackWithoutExecutors, uniqueWorkspace } from '../support/local.ts';

const LEASE_MS = 60_000;

class ManualClock implements Clock {
  private at = Date.now();
  now(): Date {
    return new Date(this.at);
  }
  advance(ms: number): void {
    this.at += ms;
  }
}

let store: DynamoBreadcrumbStore;
let documentClient: DynamoDBDocumentClient;
let stack: LocalStack;

// Its own stack with no executors running: these tests deliver messages themselves (the shared stack's executors
// would race them for the same triggers).
beforeAll(async () => {
  ({ stack, documentClient } = await startStackWithoutExecutors());
  store = localStore(documentClient);
}, 90_000);

afterAll(async () => {
  await stack?.stop();
});

const tools = toolCatalog(builtinTools);

function deps(overrides: Partial<PipelineDeps> = {}, clock: Clock = new ManualClock()): PipelineDeps {
  const writer = overrides.store ?? store;
  return {
    store,
    claims: new DynamoClaims(topology.table.name, { client: documentClient, clock }),
    leaseMs: LEASE_MS,
    clock,
    implementations: {
      tool: createToolKind({ store: writer, log: silentLog, clock: systemClock, tools }),
    },
    ...overrides,
  };
}

async function put(
  ws: string,
  input: CreateBreadcrumbInput,
  principal = 'user:tester',
  causation?: Causation,
): Promise<Breadcrumb> {
  const { breadcrumb } = await store.create(ws, CreateBreadcrumbSchema.parse(input), {
    principal,
    ...(causation ? { causation } : {}),
  });
  return breadcrumb;
}

async function toolDef(ws: string, context: Record<string, unknown>): Promise<Breadcrumb> {
  return put(ws, { schema_name: 'tool.def.v1', title: String(context.name), context });
}

async function request(
  ws: string,
  tool: string,
  input: unknown,
  requestId: string,
  causation?: Causation,
): Promise<Breadcrumb> {
  return put(
    ws,
    {
      schema_name: 'tool.request.v1',
      tags: [`request:${requestId}`],
      context: { tool, input, requestId, requestedBy: 'agent:helper' },
    },
    'agent:helper',
    causation,
  );
}

function claimKeyOf(def: Breadcrumb, trigger: Breadcrumb) {
  return {
    workspace: def.workspace,
    executor: def.id,
    triggerId: trigger.id,
    triggerVersion: trigger.version,
  };
}

async function responses(ws: string, requestId: string): Promise<Breadcrumb[]> {
  return (
    await store.list({
      workspace: ws,
      schema_name: 'tool.response.v1',
      tag: `request:${requestId}`,
      limit: 20,
    })
  ).items;
}

describe('executor pipeline on DynamoDB Local', () => {
  it('answers a tool request with a tool.response.v1 carrying causation and the request tag', async () => {
    const ws = uniqueWorkspace('exec');
    const def = await toolDef(ws, { name: 'calculator' });
    const trigger = await request(ws, 'calculator', { expression: '17*23' }, 'r1');

    const outcome = await processExecutorMessage(messageFor(def, trigger), deps());

    expect(outcome.status).toBe('responded');
    const [response, ...others] = await responses(ws, 'r1');
    expect(others).toEqual([]);
    expect(response?.context).toMatchObject({
      request_id: 'r1',
      tool: 'calculator',
      status: 'success',
      output: { result: 391 },
      requestedBy: 'agent:helper',
    });
    expect(response?.tags).toEqual(expect.arrayContaining(['request:r1', 'tool:response']));
    expect(response?.created_by).toBe('tool:calculator');
    expect(response?.causation).toEqual({ caused_by: `${trigger.id}@1`, thread: trigger.id, hop: 1 });
  });

  it('takes a trigger its event carries whole from the event: no read, the same view a read gives', async () => {
    const ws = uniqueWorkspace('exec');
    await put(ws, {
      schema_name: 'schema.def.v1',
      tags: ['defines:tool.request.v1'],
      context: { llm_hints: { exclude: ['$.input.secret'], mode: 'merge' } },
    });
    const fromEvent = await toolDef(ws, { name: 'echo' });
    const fromRead = await toolDef(ws, { name: 'echo' });
    const trigger = await request(ws, 'echo', { shown: 1, secret: 2 }, 'r-whole');
    const reads: string[] = [];
    const counted = Object.create(store) as DynamoBreadcrumbStore;
    counted.getVersionWithView = async (...args) => {
      if (args[1] === trigger.id) reads.push('getVersionWithView');
      return store.getVersionWithView(...args);
    };
    counted.getVersion = async (...args) => {
      if (args[1] === trigger.id) reads.push('getVersion');
      return store.getVersion(...args);
    };
    const seen: unknown[] = [];
    const recording: ExecutorKindImplementation<unknown> = {
      async execute({ trigger: given }) {
        seen.push(given);
        return { outputs: [{ schema_name: 'test.answer.v1', context: {} }] };
      },
      errorOutput: ({ error }) => ({ schema_name: 'test.error.v1', context: { error } }),
    };
    const withRecording = deps({ store: counted, implementations: { tool: recording } });
    const carried = messageFor(fromEvent, trigger);
    const {
      context: _,
      words: _w,
      words_truncated: _t,
      created_at: _c,
      ...routing
    } = messageFor(fromRead, trigger).event.detail;
    const omitted = {
      ...messageFor(fromRead, trigger),
      event: { ...carried.event, detail: { ...routing, context_omitted: true } },
    };

    expect((await processExecutorMessage(carried, withRecording)).status).toBe('responded');
    expect(reads).toEqual([]);
    expect((await processExecutorMessage(omitted, withRecording)).status).toBe('responded');
    expect(reads).toEqual(['getVersionWithView']);
    expect(seen).toHaveLength(2);
    expect(seen[0]).toEqual(seen[1]);
    expect(seen[0]).toMatchObject({ id: trigger.id, context: { input: { shown: 1 } } });
    expect(JSON.stringify(seen[0])).not.toContain('secret');
  });

  it("takes a trigger view's schema hints from the store's cache only while they are younger than the bound", async () => {
    const ws = uniqueWorkspace('exec');
    const executorStore = localStore(documentClient);
    const trigger = await request(ws, 'echo', { shown: 1, secret: 2 }, 'r-hints');
    const view = async (maxAgeMs: number) =>
      JSON.stringify((await executorStore.contextViewsWithin(ws, [trigger], maxAgeMs))[0]?.context);
    expect(await view(0)).toContain('secret');

    // Another instance (the API's) defines hints for the schema; this store has not seen the write.
    await put(ws, {
      schema_name: 'schema.def.v1',
      tags: ['defines:tool.request.v1'],
      context: { llm_hints: { exclude: ['$.input.secret'], mode: 'merge' } },
    });

    expect(await view(60_000)).toContain('secret');
    expect(await view(0)).not.toContain('secret');
    expect(await view(60_000)).not.toContain('secret');
  });

  it('traces each trigger and each dead letter as one span keyed by breadcrumb, thread and definition', async () => {
    const ws = uniqueWorkspace('exec');
    const def = await toolDef(ws, { name: 'echo' });
    const causation = { caused_by: 'u-root@2', thread: 'u-root', hop: 1 };
    const trigger = await request(ws, 'echo', { a: 1 }, 'r-traced', causation);
    const spans: { name: string; keys: SpanKeys }[] = [];
    const tracing: Tracing = {
      ...noTracing,
      span: (name, keys, work) => {
        spans.push({ name, keys });
        return work({ traceId: undefined });
      },
    };

    expect((await processExecutorMessage(messageFor(def, trigger), deps({ tracing }))).status).toBe(
      'responded',
    );
    await handleDeadLetter(messageFor(def, trigger), { store, tracing });

    const keys = {
      workspace: ws,
      breadcrumbId: trigger.id,
      triggerVersion: 1,
      thread: 'u-root',
      definitionId: def.id,
    };
    expect(spans).toEqual([
      { name: 'tool trigger', keys },
      { name: 'dead letter', keys },
    ]);
  });

  it('continues the event trace, stamps its outputs with it and logs its trace id (OpenTelemetry)', async () => {
    const ws = uniqueWorkspace('exec');
    const def = await toolDef(ws, { name: 'echo' });
    const trigger = await request(ws, 'echo', { a: 1 }, 'r-otel');
    const exporter = new InMemorySpanExporter();
    const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
    const tracing = otelTracingOn(provider.getTracer('test'));
    const publisher = tracing.start('publish tool.request.v1');
    const message = messageFor(def, trigger);
    message.event.detail.traceparent = publisher.traceparent;
    const lines: { message: string; keys: Record<string, unknown> }[] = [];
    const log = {
      ...silentLog,
      info: (m: string, ...extra: Record<string, unknown>[]) =>
        lines.push({ message: m, keys: Object.assign({}, ...extra) }),
    };
    const outcome = await processExecutorMessage(message, deps({ tracing, log }));
    publisher.end();
    expect(outcome.status).toBe('responded');
    const executor = exporter.getFinishedSpans().find((s) => s.name === 'tool trigger')!;
    expect(executor.spanContext().traceId).toBe(publisher.traceId);
    expect(lines.find((l) => l.message === 'responded')?.keys.trace_id).toBe(publisher.traceId);
    const tool = exporter.getFinishedSpans().find((s) => s.name === 'execute_tool echo')!;
    expect(tool.parentSpanContext?.spanId).toBe(executor.spanContext().spanId);
    // The response's head carries the executor span's context for the publisher; the record does not.
    const outputId = (outcome as { outputIds: string[] }).outputIds[0]!;
    const head = await documentClient.send(
      new GetCommand({ TableName: topology.table.name, Key: { id: outputId, workspace: ws } }),
    );
    expect(head.Item?.traceparent).toBe(`00-${publisher.traceId}-${executor.spanContext().spanId}-01`);
    expect(await store.get(ws, outputId)).not.toHaveProperty('traceparent');
  });

  it('writes exactly one response when the same message is delivered three times', async () => {
    const ws = uniqueWorkspace('exec');
    const def = await toolDef(ws, { name: 'echo' });
    const trigger = await request(ws, 'echo', { hello: 'world' }, 'r-dup');
    const message = messageFor(def, trigger);
    const d = deps();

    const settled = await Promise.allSettled([1, 2, 3].map(() => processExecutorMessage(message, d)));
    // Deliveries that met a live claim failed retriably; SQS would deliver them again.
    for (const s of settled) if (s.status === 'rejected') expect(s.reason).toBeInstanceOf(RetriableError);
    const redelivered = await Promise.all(
      settled.filter((s) => s.status === 'rejected').map(() => processExecutorMessage(message, d)),
    );
    for (const o of redelivered) expect(o).toEqual({ status: 'skipped', reason: 'already answered' });
    expect(await processExecutorMessage(message, d)).toEqual({
      status: 'skipped',
      reason: 'already answered',
    });

    const found = await responses(ws, 'r-dup');
    expect(found).toHaveLength(1);
    expect(found[0]?.context).toMatchObject({ status: 'success', output: { hello: 'world' } });
  });

  it('writes exactly one response when the executor dies between execute and respond', async () => {
    const ws = uniqueWorkspace('exec');
    const def = await toolDef(ws, { name: 'echo' });
    const trigger = await request(ws, 'echo', {}, 'r-crash');
    const message = messageFor(def, trigger);
    const clock = new ManualClock();

    let executions = 0;
    const counting: ExecutorKindImplementation<unknown> = {
      async execute() {
        executions++;
        return {
          outputs: [
            { schema_name: 'test.answer.v1', tags: ['request:r-crash'], context: { execution: executions } },
          ],
        };
      },
      errorOutput: ({ error }) => ({ schema_name: 'test.answer.v1', context: { error } }),
    };
    // The first worker hangs after execute, before its write reaches the table: it has "died" holding the claim.
    let revive!: () => void;
    const frozen = new Promise<void>((resolve) => {
      revive = resolve;
    });
    const dyingStore = Object.create(store) as DynamoBreadcrumbStore;
    dyingStore.create = async (...args) => {
      await frozen;
      return store.create(...args);
    };
    const first = processExecutorMessage(
      message,
      deps({ store: dyingStore, implementations: { tool: counting } }, clock),
    );
    await eventually(async () => (executions === 1 ? true : undefined));

    // A redelivery while the lease is live waits (fails retriably) instead of running a second time.
    await expect(
      processExecutorMessage(message, deps({ implementations: { tool: counting } }, clock)),
    ).rejects.toBeInstanceOf(RetriableError);
    expect(executions).toBe(1);

    // After the lease runs out, the next delivery takes over and answers.
    clock.advance(LEASE_MS + 1);
    const second = await processExecutorMessage(
      message,
      deps({ implementations: { tool: counting } }, clock),
    );
    expect(second.status).toBe('responded');
    expect(executions).toBe(2);

    // The zombie wakes up and writes under the same deterministic id: nothing new appears.
    revive();
    const late = await first;
    expect(late).toEqual(second);
    const answers = (await store.list({ workspace: ws, schema_name: 'test.answer.v1', limit: 10 })).items;
    expect(answers).toHaveLength(1);
    expect(answers[0]?.context).toEqual({ execution: 2 });
    expect(
      await processExecutorMessage(message, deps({ implementations: { tool: counting } }, clock)),
    ).toEqual({
      status: 'skipped',
      reason: 'already answered',
    });
  });

  it("continues an agent's turn once when the worker dies between its answer and its conversation", async () => {
    const ws = uniqueWorkspace('exec');
    const calculator = await toolDef(ws, { name: 'calculator', implementation: 'calculator' });
    const agent = await put(ws, {
      schema_name: 'agent.def.v1',
      context: {
        agent_id: 'helper',
        model: 'offline/crumbs',
        tools: ['calculator'],
        subscriptions: {
          selectors: [
            { schema_name: 'user.message.v1', role: 'trigger' },
            {
              schema_name: 'tool.response.v1',
              role: 'trigger',
              context_match: [{ path: '$.requestedBy', op: 'eq', value: 'helper' }],
            },
          ],
        },
      },
    });
    const message = await put(ws, { schema_name: 'user.message.v1', context: { message: 'what is 17*23?' } });
    const clock = new ManualClock();
    const withAgent = (writer: DynamoBreadcrumbStore, claims = deps({}, clock).claims): PipelineDeps =>
      deps(
        {
          store: writer,
          claims,
          implementations: {
            tool: createToolKind({ store: writer, log: silentLog, clock: systemClock, tools }),
            agent: createContextAgentKind({ store: writer, llm: new LlmRouter({ env: {} }) }),
          },
        },
        clock,
      );
    const healthy = withAgent(store);
    const asked = await processExecutorMessage(messageFor(agent, message), healthy);
    if (asked.status !== 'responded') throw new Error(`expected the request, got ${JSON.stringify(asked)}`);
    const request = await store.get(ws, asked.outputIds[0] ?? '');
    expect(request.context.conversation).toMatchObject({ status: 'waiting-for-tools' });
    const answered = await processExecutorMessage(messageFor(calculator, request), healthy);
    if (answered.status !== 'responded')
      throw new Error(`expected the response, got ${JSON.stringify(answered)}`);
    const response = await store.get(ws, answered.outputIds[0] ?? '');

    // The continuation writes the agent's answer, then dies before the turn's conversation is written.
    const io = faultyIo({ store, claims: healthy.claims }, (_n, op) =>
      op === 'store.upsert' ? 'die-before' : 'ok',
    );
    const continuation = messageFor(agent, response);
    void processExecutorMessage(continuation, withAgent(io.store as DynamoBreadcrumbStore, io.claims));
    await io.died;
    const answers = async () =>
      (await store.list({ workspace: ws, schema_name: 'agent.response.v1', limit: 10 })).items;
    expect(await answers()).toHaveLength(1);

    // After the lease, the next delivery continues from the request again: the same answer, and the conversation.
    await expect(processExecutorMessage(continuation, healthy)).rejects.toBeInstanceOf(RetriableError);
    clock.advance(LEASE_MS + 1);
    expect((await processExecutorMessage(continuation, healthy)).status).toBe('responded');
    const [answer, ...more] = await answers();
    expect(more).toEqual([]);
    expect(answer?.context).toMatchObject({ message: '17*23 = 391 (offline model)', tool_rounds: 1 });
    const conversation = await store.get(ws, turnRecordId('helper', turnOf(message)));
    expect(conversation.context).toMatchObject({ status: 'answered', round: 1 });
    expect(conversation.version).toBe(1);
    expect((await processExecutorMessage(continuation, healthy)).status).toBe('skipped');
  });

  it('answers once when the worker dies right after claiming', async () => {
    const ws = uniqueWorkspace('exec');
    const def = await toolDef(ws, { name: 'echo' });
    const trigger = await request(ws, 'echo', { die: 'acquire' }, 'r-acquire');
    const message = messageFor(def, trigger);
    const clock = new ManualClock();
    const healthy = deps({}, clock);
    const io = faultyIo({ store, claims: healthy.claims }, (_n, op) =>
      op === 'claims.acquire' ? 'die-after' : 'ok',
    );
    void processExecutorMessage(message, { ...healthy, store: io.store, claims: io.claims });
    await io.died;

    // The dead worker's claim holds off the next delivery until its lease runs out.
    await expect(processExecutorMessage(message, healthy)).rejects.toBeInstanceOf(RetriableError);
    clock.advance(LEASE_MS + 1);
    expect((await processExecutorMessage(message, healthy)).status).toBe('responded');

    const found = await responses(ws, 'r-acquire');
    expect(found).toHaveLength(1);
    expect(found[0]?.context).toMatchObject({ status: 'success', output: { die: 'acquire' } });
  });

  it('answers once when the worker dies right after the response: the answer is the claim completion', async () => {
    const ws = uniqueWorkspace('exec');
    const def = await toolDef(ws, { name: 'echo' });
    const trigger = await request(ws, 'echo', { die: 'respond' }, 'r-respond');
    const message = messageFor(def, trigger);
    const clock = new ManualClock();
    const healthy = deps({}, clock);
    const io = faultyIo({ store, claims: healthy.claims }, (_n, op) =>
      op === 'store.create' ? 'die-after' : 'ok',
    );
    void processExecutorMessage(message, { ...healthy, store: io.store, claims: io.claims });
    await io.died;
    // A tool answers once: no write marks its claim done, the answer under its derived id does.
    expect(io.calls).not.toContain('claims.complete');

    // The redelivery, under the dead worker's live lease, finds the answer and stops: no second execution.
    expect(await processExecutorMessage(message, healthy)).toEqual({
      status: 'skipped',
      reason: 'already answered',
    });
    // After the lease, a worker taking the claim over finds it too, and marks the claim done.
    clock.advance(LEASE_MS + 1);
    expect(await processExecutorMessage(message, healthy)).toEqual({
      status: 'skipped',
      reason: 'already answered',
    });
    const claimItem = await documentClient.send(
      new GetCommand({
        TableName: topology.table.name,
        Key: { id: claimId(claimKeyOf(def, trigger)), workspace: ws },
      }),
    );
    expect(claimItem.Item?.state).toBe('done');
    const found = await responses(ws, 'r-respond');
    expect(found).toHaveLength(1);
    expect(found[0]?.context).toMatchObject({ status: 'success', output: { die: 'respond' } });
  });

  it('runs again when a worker died before answering, once the lease is over', async () => {
    const ws = uniqueWorkspace('exec');
    const def = await toolDef(ws, { name: 'echo' });
    const trigger = await request(ws, 'echo', { die: 'execute' }, 'r-before');
    const message = messageFor(def, trigger);
    const clock = new ManualClock();
    const healthy = deps({}, clock);
    const io = faultyIo({ store, claims: healthy.claims }, (_n, op) =>
      op === 'store.create' ? 'die-before' : 'ok',
    );
    void processExecutorMessage(message, { ...healthy, store: io.store, claims: io.claims });
    await io.died;
    expect(await responses(ws, 'r-before')).toHaveLength(0);
    // No answer yet: the claim's live lease holds the redelivery back, and the worker after it answers.
    await expect(processExecutorMessage(message, healthy)).rejects.toBeInstanceOf(RetriableError);
    clock.advance(LEASE_MS + 1);
    expect((await processExecutorMessage(message, healthy)).status).toBe('responded');
    expect(await processExecutorMessage(message, healthy)).toEqual({
      status: 'skipped',
      reason: 'already answered',
    });
    expect(await responses(ws, 'r-before')).toHaveLength(1);
  });

  it('retries a response write DynamoDB throttled, and answers once with the real answer', async () => {
    const ws = uniqueWorkspace('exec');
    const def = await toolDef(ws, { name: 'echo' });
    const trigger = await request(ws, 'echo', { n: 1 }, 'r-throttled');
    const message = messageFor(def, trigger);
    // A document client whose first PutItem of a breadcrumb (the response write) is throttled, as DynamoDB does.
    const throttled = DynamoDBDocumentClient.from(
      new DynamoDBClient({
        endpoint: stack.endpoints.dynamodb,
        region: LOCAL_REGION,
        credentials: LOCAL_CREDENTIALS,
      }),
      { marshallOptions: { removeUndefinedValues: true } },
    );
    let writes = 0;
    throttled.middlewareStack.add(
      (next, context) => async (args) => {
        const item = (args.input as { Item?: { kind?: string } }).Item;
        if (context.commandName === 'PutItemCommand' && item?.kind === 'breadcrumb' && writes++ === 0)
          throw throttlingError();
        return next(args);
      },
      { step: 'initialize', name: 'throttleFirstWrite' },
    );
    const throttledStore = localStore(throttled);
    const clock = new ManualClock();

    const first = await processExecutorMessage(message, deps({ store: throttledStore }, clock)).catch(
      (error: unknown) => error,
    );
    expect(first).toBeInstanceOf(RetriableError);
    // The claim was released: the redelivery runs at once.
    expect((await processExecutorMessage(message, deps({ store: throttledStore }, clock))).status).toBe(
      'responded',
    );

    const found = await responses(ws, 'r-throttled');
    expect(found).toHaveLength(1);
    expect(found[0]?.context).toMatchObject({ status: 'success', output: { n: 1 } });
  });

  it('answers status "error" with the validation message when the input fails its schema', async () => {
    const ws = uniqueWorkspace('exec');
    const def = await toolDef(ws, {
      name: 'calculator',
      input_schema: {
        type: 'object',
        properties: { expression: { type: 'string' } },
        required: ['expression'],
      },
    });
    const trigger = await request(ws, 'calculator', { expression: 42 }, 'r-bad');

    const outcome = await processExecutorMessage(messageFor(def, trigger), deps());

    expect(outcome.status).toBe('responded');
    const [response] = await responses(ws, 'r-bad');
    expect(response?.context).toMatchObject({ status: 'error', request_id: 'r-bad', tool: 'calculator' });
    expect(String(response?.context.error)).toContain('input.expression: must be string');
    expect(response?.context).not.toHaveProperty('output');
  });

  it('writes one system.loop_stopped.v1 instead of executing past the hop limit', async () => {
    const ws = uniqueWorkspace('exec');
    const def = await toolDef(ws, { name: 'echo', hop_limit: 3 });
    const trigger = await request(ws, 'echo', {}, 'r-loop', {
      caused_by: 'earlier@1',
      thread: 'thread-1',
      hop: 3,
    });
    const message = messageFor(def, trigger);

    const outcomes = [
      await processExecutorMessage(message, deps()),
      await processExecutorMessage(message, deps()),
    ];

    expect(outcomes.map((o) => o.status)).toEqual(['loop-stopped', 'loop-stopped']);
    expect(await responses(ws, 'r-loop')).toEqual([]);
    const stopped = (await store.list({ workspace: ws, schema_name: 'system.loop_stopped.v1', limit: 10 }))
      .items;
    expect(stopped).toHaveLength(1);
    expect(stopped[0]?.context).toMatchObject({
      trigger_id: trigger.id,
      hop: 3,
      hop_limit: 3,
      thread: 'thread-1',
    });
    expect(stopped[0]?.causation).toEqual({ caused_by: `${trigger.id}@1`, thread: 'thread-1', hop: 4 });
  });

  it('skips a trigger the definition does not select once the stored breadcrumb is checked', async () => {
    const ws = uniqueWorkspace('exec');
    const def = await toolDef(ws, { name: 'echo' });
    const trigger = await request(ws, 'calculator', {}, 'r-other');

    const outcome = await processExecutorMessage(messageFor(def, trigger), deps());

    expect(outcome.status).toBe('skipped');
    expect(await responses(ws, 'r-other')).toEqual([]);
  });

  it("skips its own update of another writer's trigger, and runs on another writer's update of its own", async () => {
    const ws = uniqueWorkspace('exec');
    const def = await toolDef(ws, { name: 'echo' });
    const context = (requestId: string, n: number) => ({
      tool: 'echo',
      input: { n },
      requestId,
      requestedBy: 'agent:helper',
    });

    // Created by agent:helper, then updated by the echo tool itself: its own write.
    const theirs = await request(ws, 'echo', { n: 1 }, 'r-theirs');
    const ownUpdate = await store.update(
      ws,
      theirs.id,
      { context: context('r-theirs', 2) },
      { principal: 'tool:echo' },
    );
    expect((await processExecutorMessage(messageFor(def, ownUpdate), deps())).status).toBe('skipped');
    expect(await responses(ws, 'r-theirs')).toEqual([]);

    // Created by the echo tool, then updated by agent:helper: a trigger.
    const mine = await put(
      ws,
      { schema_name: 'tool.request.v1', tags: ['request:r-mine'], context: context('r-mine', 1) },
      'tool:echo',
    );
    expect((await processExecutorMessage(messageFor(def, mine), deps())).status).toBe('skipped');
    const theirUpdate = await store.update(
      ws,
      mine.id,
      { context: context('r-mine', 3) },
      { principal: 'agent:helper' },
    );
    expect((await processExecutorMessage(messageFor(def, theirUpdate), deps())).status).toBe('responded');
    const [response, ...others] = await responses(ws, 'r-mine');
    expect(others).toEqual([]);
    expect(response?.context).toMatchObject({ status: 'success' });
    expect(response?.causation?.caused_by).toBe(`${mine.id}@${theirUpdate.version}`);
  });

  it('answers a dead-lettered message with an error response under the response id, once', async () => {
    const ws = uniqueWorkspace('exec');
    const def = await toolDef(ws, { name: 'echo' });
    const trigger = await request(ws, 'echo', { a: 1 }, 'r-dlq');
    const message = messageFor(def, trigger);

    const outcome = await handleDeadLetter(JSON.parse(JSON.stringify(message)), { store });

    expect(outcome.status).toBe('answered');
    const [response, ...others] = await responses(ws, 'r-dlq');
    expect(others).toEqual([]);
    expect(response?.context).toMatchObject({
      status: 'error',
      request_id: 'r-dlq',
      requestedBy: 'agent:helper',
    });
    expect(String(response?.context.error)).toContain('gave up');
    // A late successful run lands on the same id: still one response.
    await processExecutorMessage(message, deps());
    await handleDeadLetter(message, { store });
    expect(await responses(ws, 'r-dlq')).toHaveLength(1);
  });
});

/**
 * A partner that honours `Idempotency-Key` as the IETF draft describes: the first request under a key is applied
 * and its answer kept; a request repeating the key gets that answer again and changes nothing.
 */
async function idempotentPartner(answer: (n: number) => number = () => 200) {
  const applied = new Map<string, string>();
  let effects = 0;
  const server = await startHttpServer((req, res) => {
    const key = req.headers['idempotency-key'];
    const status = answer(server.requests.length);
    res.setHeader('content-type', 'application/json');
    // A read changes nothing.
    if (req.method === 'GET') {
      res.end(JSON.stringify({ charges: effects }));
      return;
    }
    if (typeof key === 'string' && applied.has(key)) {
      res.end(applied.get(key));
      return;
    }
    res.statusCode = status;
    const body = JSON.stringify({ charged: status === 200 ? ++effects : null });
    if (status === 200 && typeof key === 'string') applied.set(key, body);
    res.end(body);
  });
  return {
    server,
    effects: () => effects,
    keys: () => server.requests.map((r) => r.headers['idempotency-key']),
  };
}

describe('Idempotency-Key on outgoing requests, on DynamoDB Local', () => {
  const httpTools = toolCatalog([createHttpTool({ allowPrivateNetwork: true })]);
  const httpDeps = (clock: Clock, writer: DynamoBreadcrumbStore = store) =>
    deps(
      {
        // The pipeline writes the answer through this store: a worker that dies before its answer lands dies here.
        store: writer,
        implementations: {
          tool: createToolKind({ store: writer, log: silentLog, clock: systemClock, tools: httpTools }),
        },
      },
      clock,
    );

  it('sends the same key when a worker takes over the claim of one that died after the call', async () => {
    const partner = await idempotentPartner();
    try {
      const ws = uniqueWorkspace('idem');
      const def = await toolDef(ws, {
        name: 'charge',
        implementation: 'http',
        config: { allowed_hosts: ['127.0.0.1'], allow_private: true },
      });
      const input = { method: 'POST', url: `${partner.server.url}/charges`, body: { amount: 5 } };
      const trigger = await request(ws, 'charge', input, 'r-charge');
      const message = messageFor(def, trigger);
      const clock = new ManualClock();
      // The first worker makes the call, then dies before its answer reaches the table, holding the claim.
      let revive!: () => void;
      const frozen = new Promise<void>((resolve) => {
        revive = resolve;
      });
      const dyingStore = Object.create(store) as DynamoBreadcrumbStore;
      dyingStore.create = async (...args) => {
        await frozen;
        return store.create(...args);
      };
      const first = processExecutorMessage(message, httpDeps(clock, dyingStore));
      await eventually(async () => (partner.server.requests.length === 1 ? true : undefined));
      // Past its lease, the redelivery takes the claim over and sends the request again.
      clock.advance(LEASE_MS + 1);
      expect((await processExecutorMessage(message, httpDeps(clock))).status).toBe('responded');
      revive();
      await first;

      expect(partner.server.requests).toHaveLength(2);
      const [key, again] = partner.keys();
      expect(key).toMatch(/^"crumbs-[0-9a-f]{32}"$/);
      expect(again).toBe(key);
      // The partner applied the charge once, and the one answer carries its result.
      expect(partner.effects()).toBe(1);
      const [response, ...others] = await responses(ws, 'r-charge');
      expect(others).toEqual([]);
      expect(response?.context).toMatchObject({
        status: 'success',
        output: { status: 200, body: { charged: 1 } },
      });

      // Another request is another effect: another key. A GET carries none.
      const second = await request(ws, 'charge', input, 'r-charge-2');
      await processExecutorMessage(messageFor(def, second), httpDeps(clock));
      const read = await request(ws, 'charge', { url: `${partner.server.url}/charges` }, 'r-read');
      await processExecutorMessage(messageFor(def, read), httpDeps(clock));
      const keys = partner.keys();
      expect(keys[2]).toMatch(/^"crumbs-[0-9a-f]{32}"$/);
      expect(keys[2]).not.toBe(key);
      expect(keys[3]).toBeUndefined();
      expect(partner.effects()).toBe(2);
    } finally {
      await partner.server.close();
    }
  });

  it("sends an api agent's request again under the same key when the partner's 503 makes it redelivered", async () => {
    // The partner is busy at the first attempt: the queue brings the request back, which the partner applies.
    const partner = await idempotentPartner((n) => (n === 1 ? 503 : 200));
    try {
      const ws = uniqueWorkspace('idem');
      const agent = await put(ws, {
        schema_name: 'agent.def.v1',
        context: {
          agent_id: 'biller',
          type: 'api',
          transport: {
            kind: 'api',
            api: { endpoint: `${partner.server.url}/invoices`, method: 'POST', allowed_hosts: ['127.0.0.1'] },
          },
        },
      });
      const trigger = await put(ws, {
        schema_name: 'agent.request.v1',
        context: { agent: 'biller', input: { amount: 7 }, request_id: 'r-bill' },
      });
      const guarded = guardedFetch({ allowPrivate: () => true });
      const agentDeps = deps({
        implementations: {
          agent: createAgentKind({
            types: {
              api: createApiAgent({
                fetchFor: (allowedHosts, maxResponseBytes) =>
                  guarded.within({ allowedHosts, maxResponseBytes }),
                secrets: { get: async () => undefined } as never,
                checks: pooledChecks(undefined),
              }),
            },
            store,
            clock: systemClock,
          }),
        },
      });
      const message = messageFor(agent, trigger);
      await expect(processExecutorMessage(message, agentDeps)).rejects.toBeInstanceOf(RetriableError);
      expect((await processExecutorMessage(message, agentDeps)).status).toBe('responded');
      const [key, again] = partner.keys();
      expect(key).toMatch(/^"crumbs-[0-9a-f]{32}"$/);
      expect(again).toBe(key);
      const answers = await eventually(async () => {
        const { items } = await store.list({
          workspace: ws,
          schema_name: 'agent.response.v1',
          tag: 'request:r-bill',
          limit: 20,
        });
        return items.length > 0 ? items : undefined;
      });
      expect(answers).toHaveLength(1);
      expect(answers[0]?.context).toMatchObject({ status: 'success', output: { charged: 1 } });
    } finally {
      await partner.server.close();
    }
  });
});
