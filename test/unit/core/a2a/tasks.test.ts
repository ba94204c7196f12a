/**
 * A2A tasks on the API over an in-memory store, with the SDK's client (its fetch handed straight to the endpoint's
 * handler, a streamed body passed on as it is produced), where nothing runs until the test writes what an agent
 * would: a task whose request waits on an approval is input-required, saying what is asked; a follow-up message
 * "approve" answers it through the approvals API as the caller (working again), anything else is InvalidParams
 * naming what was expected, and a caller that is not a person cannot approve; `sendMessageStream` gets the task,
 * its status updates and artifacts in order, ending with the final state; the deltas hook merges model output in.
 */
import { ClientFactory, DefaultAgentCardResolver, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import { describe, expect, it } from 'vitest';
import { createA2aHttp } from '#shared/core/a2a/http.ts';
import type { DeltaSource } from '#shared/core/a2a/stream.ts';
import type { Caller } from '#shared/core/api/http.ts';
import { activeDefinition, inMemoryApi } from '../../../support/memory/api.ts';

const WS = 'ws';
const ann: Caller = { principal: 'user:ann', workspaces: [WS] };
const bot: Caller = { principal: 'service:bot', workspaces: [WS] };

async function setup(deltas?: DeltaSource) {
  const { store, api } = inMemoryApi();
  const a2a = createA2aHttp({
    api,
    baseUrl: 'http://a2a.test',
    answerWithinMs: 200,
    pollMs: { first: 20, max: 50 },
    streamPollMs: 20,
    streamWithinMs: 5_000,
    ...(deltas ? { deltas } : {}),
  });
  await activeDefinition(store, WS, 'agent-helper', 'agent.def.v1', {
    agent_id: 'helper',
    model: 'offline/echo',
  });
  const client = async (caller: Caller) => {
    const fetchImpl: typeof fetch = async (input, init) => {
      const url = new URL(String(input instanceof Request ? input.url : input));
      const headers: Record<string, string> = { host: url.host };
      new Headers(init?.headers).forEach((v, k) => {
        headers[k] = v;
      });
      const result = await a2a({
        method: init?.method ?? 'GET',
        path: url.pathname,
        headers,
        query: {},
        body: typeof init?.body === 'string' ? init.body : undefined,
        caller,
      });
      const stream = result.bodyStream;
      const body =
        stream === undefined
          ? (result.body as string)
          : new ReadableStream<Uint8Array>({
              async start(controller) {
                for await (const chunk of stream) controller.enqueue(new TextEncoder().encode(chunk));
                controller.close();
              },
            });
      return new Response(body, { status: result.statusCode, headers: result.headers });
    };
    const factory = new ClientFactory({
      transports: [new JsonRpcTransportFactory({ fetchImpl })],
      cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
    });
    return factory.createFromUrl(
      `http://a2a.test/a2a/workspaces/${WS}/agents/helper/.well-known/agent-card.json`,
      '',
    );
  };
  /** What the agent would write: an approval of a tool call in the request's thread. */
  const approval = (requestId: string) =>
    store.create(
      WS,
      {
        schema_name: 'human.request.v1',
        title: 'approve guarded',
        tags: ['approval:tool', `thread:${requestId}`],
        context: {
          kind: 'tool-approval',
          agent_id: 'helper',
          tool: 'guarded',
          arguments: { text: 'hi' },
          reason: 'it must be said',
          tool_request_id: `tr-${requestId}`,
          thread: requestId,
          round: 1,
          prompt: 'Approve?',
          status: 'pending',
        },
      },
      { principal: 'agent:helper', id: `approval-tr-${requestId}` },
    );
  const answer = (requestId: string, context: Record<string, unknown>) =>
    store.create(
      WS,
      { schema_name: 'agent.response.v1', title: 'answer', tags: [`request:${requestId}`], context },
      { principal: 'agent:helper' },
    );
  return { store, client, approval, answer };
}

function message(text: string, extra: Record<string, unknown> = {}) {
  return {
    messageId: `m-${Math.random().toString(36).slice(2)}`,
    contextId: '',
    taskId: '',
    role: 1,
    parts: [
      { content: { $case: 'text' as const, value: text }, metadata: undefined, filename: '', mediaType: '' },
    ],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
    ...extra,
  };
}

const quick = { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately: true };

describe('A2A tasks', () => {
  it('is input-required while an approval waits, and a follow-up "approve" answers it through the approvals API', async () => {
    const { client, approval, store } = await setup();
    const c = await client(ann);
    const sent = (await c.sendMessage({
      tenant: '',
      message: message('do it'),
      configuration: quick,
      metadata: undefined,
    })) as {
      id: string;
      status: { state: number };
    };
    expect(sent.status.state).toBe(2);
    await approval(sent.id);
    const waiting = await c.getTask({ tenant: '', id: sent.id, historyLength: 0 });
    expect(waiting.status?.state).toBe(6);
    const parts = waiting.status?.message?.parts ?? [];
    expect(parts[0]?.content).toMatchObject({ $case: 'text', value: expect.stringContaining('guarded') });
    expect(parts[1]?.content).toMatchObject({
      $case: 'data',
      value: { waiting: [{ kind: 'approval', approval_id: `approval-tr-${sent.id}`, tool: 'guarded' }] },
    });

    // Not an answer: InvalidParams naming what is expected, and nothing written.
    await expect(
      c.sendMessage({
        tenant: '',
        message: message('maybe later', { taskId: sent.id }),
        configuration: quick,
        metadata: undefined,
      }),
    ).rejects.toThrow(/neither "approve" nor "reject".*decision/);
    await expect(
      c.sendMessage({
        tenant: '',
        message: {
          ...message('x', { taskId: sent.id }),
          parts: [
            {
              content: { $case: 'data', value: { decision: 'approve', input: 1 } },
              metadata: undefined,
              filename: '',
              mediaType: '',
            },
          ],
        },
        configuration: quick,
        metadata: undefined,
      }),
    ).rejects.toThrow(/an approval takes edited "arguments", not "input"/);
    await expect(store.get(WS, `approval-tr-${sent.id}.response`)).rejects.toThrow();
    // Another person of the workspace does not find the task to answer it (they have the approvals API for that).
    const bob = await client({ principal: 'user:bob', workspaces: [WS] });
    await expect(
      bob.sendMessage({
        tenant: '',
        message: message('approve', { taskId: sent.id }),
        configuration: quick,
        metadata: undefined,
      }),
    ).rejects.toThrow(/no task/);
    await expect(store.get(WS, `approval-tr-${sent.id}.response`)).rejects.toThrow();

    const answered = (await c.sendMessage({
      tenant: '',
      message: message('approve', { taskId: sent.id }),
      configuration: quick,
      metadata: undefined,
    })) as { status: { state: number } };
    expect(answered.status.state).toBe(2);
    const response = await store.get(WS, `approval-tr-${sent.id}.response`);
    expect(response).toMatchObject({ created_by: 'user:ann', context: { decision: 'approve' } });
    // Answered once: the task waits on nobody now, and a second answer is refused.
    await expect(
      c.sendMessage({
        tenant: '',
        message: message('reject: no', { taskId: sent.id }),
        configuration: quick,
        metadata: undefined,
      }),
    ).rejects.toThrow(/is working and waits for no input/);
  });

  it('lets only people approve: a caller that is not a user is refused by the approvals API', async () => {
    const { client, approval, store } = await setup();
    const c = await client(bot);
    const sent = (await c.sendMessage({
      tenant: '',
      message: message('do it'),
      configuration: quick,
      metadata: undefined,
    })) as {
      id: string;
    };
    await approval(sent.id);
    await expect(
      c.sendMessage({
        tenant: '',
        message: message('approve', { taskId: sent.id }),
        configuration: quick,
        metadata: undefined,
      }),
    ).rejects.toThrow(/only a person answers an approval; service:bot is not one/);
    await expect(store.get(WS, `approval-tr-${sent.id}.response`)).rejects.toThrow();
    // A response written around the API by someone who is not a person answers nothing: the task still waits.
    await store.create(
      WS,
      {
        schema_name: 'human.response.v1',
        title: 'sneaky',
        tags: [],
        context: { request_id: `approval-tr-${sent.id}`, decision: 'approve' },
      },
      { principal: 'service:bot', id: `approval-tr-${sent.id}.response` },
    );
    expect((await c.getTask({ tenant: '', id: sent.id, historyLength: 0 })).status?.state).toBe(6);
  });

  it('streams the task, its status updates and artifacts in order, ending with the final state', async () => {
    const { client, approval, answer, store } = await setup();
    const c = await client(ann);
    const stream = c.sendMessageStream({
      tenant: '',
      message: message('plan it'),
      configuration: undefined,
      metadata: undefined,
    });
    const seen: string[] = [];
    let taskId = '';
    for await (const event of stream) {
      const p = event.payload;
      if (p?.$case === 'task') {
        taskId = p.value.id;
        seen.push(`task:${p.value.status?.state}`);
        await approval(taskId);
      } else if (p?.$case === 'statusUpdate') {
        seen.push(`status:${p.value.status?.state}`);
        if (p.value.status?.state === 6) {
          await store.create(
            WS,
            {
              schema_name: 'human.response.v1',
              title: 'ok',
              tags: [],
              context: { request_id: `approval-tr-${taskId}`, decision: 'approve' },
            },
            { principal: 'user:ann', id: `approval-tr-${taskId}.response` },
          );
        }
        if (p.value.status?.state === 2) {
          const plan = await store.create(
            WS,
            {
              schema_name: 'agent.plan.v1',
              title: 'helper plan: steps',
              tags: [],
              context: { format: 'json', plan: { steps: ['a', 'b'] } },
            },
            { principal: 'agent:helper' },
          );
          await answer(taskId, {
            status: 'success',
            text: 'planned',
            output: { steps: ['a', 'b'] },
            plan_id: plan.breadcrumb.id,
          });
        }
      } else if (p?.$case === 'artifactUpdate') {
        seen.push(`artifact:${p.value.artifact?.name}`);
      }
    }
    expect(seen).toEqual([
      'task:2',
      'status:6',
      'status:2',
      'artifact:answer',
      'artifact:agent.plan.v1: helper plan: steps',
      'status:3',
    ]);
    const done = await c.getTask({ tenant: '', id: taskId, historyLength: 0 });
    expect(done.artifacts[1]?.parts.map((p) => p.content?.$case)).toEqual(['text', 'data']);
    expect(done.artifacts[1]?.parts[1]?.content).toMatchObject({ value: { steps: ['a', 'b'] } });
    // Another caller's task is not found, streamed or not.
    const other = await client({ principal: 'user:bob', workspaces: [WS] });
    await expect(other.getTask({ tenant: '', id: taskId, historyLength: 0 })).rejects.toThrow(/no task/);
    await expect(async () => {
      for await (const _ of other.resubscribeTask({ tenant: '', id: taskId })) break;
    }).rejects.toThrow(/no task/);
  });

  it('subscribes to a working task until its answer, and cancels only what has a run to cancel', async () => {
    const { client, answer } = await setup();
    const c = await client(ann);
    const sent = (await c.sendMessage({
      tenant: '',
      message: message('later'),
      configuration: quick,
      metadata: undefined,
    })) as { id: string };
    await expect(c.cancelTask({ tenant: '', id: sent.id, metadata: undefined })).rejects.toThrow(
      /cannot be cancelled: only an orchestrated request \(orchestrate: true\) or a streaming one/,
    );
    const seen: string[] = [];
    for await (const event of c.resubscribeTask({ tenant: '', id: sent.id })) {
      const p = event.payload;
      seen.push(p?.$case ?? '');
      if (p?.$case === 'task') await answer(sent.id, { status: 'error', error: 'no model' });
      if (p?.$case === 'statusUpdate') {
        expect(p.value.status?.state).toBe(4);
        expect(p.value.status?.message?.parts[0]?.content).toMatchObject({ value: 'no model' });
      }
    }
    expect(seen).toEqual(['task', 'statusUpdate']);
  });

  it('merges model output from the deltas hook as appended chunks of a streaming artifact, cut off at the final state', async () => {
    let release: () => void = () => undefined;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const deltas: DeltaSource = async function* () {
      yield { text: 'Hel' };
      yield { text: 'lo' };
      release();
      // A source that waits for more after the answer does not hold the stream's end.
      await new Promise(() => undefined);
    };
    const { client, answer } = await setup(deltas);
    const c = await client(ann);
    const events: { kind: string; append?: boolean; text?: string }[] = [];
    for await (const event of c.sendMessageStream({
      tenant: '',
      message: message('hi'),
      configuration: undefined,
      metadata: undefined,
    })) {
      const p = event.payload;
      if (p?.$case === 'task') {
        events.push({ kind: 'task' });
        void gate.then(() => answer(p.value.id, { status: 'success', text: 'Hello' }));
      } else if (p?.$case === 'artifactUpdate') {
        const part = p.value.artifact?.parts[0]?.content;
        events.push({
          kind: p.value.artifact?.name ?? '',
          append: p.value.append,
          text: part?.$case === 'text' ? part.value : '',
        });
      } else if (p?.$case === 'statusUpdate') events.push({ kind: `status:${p.value.status?.state}` });
    }
    expect(events).toEqual([
      { kind: 'task' },
      { kind: 'answer (streaming)', append: false, text: 'Hel' },
      { kind: 'answer (streaming)', append: true, text: 'lo' },
      { kind: 'answer', append: false, text: 'Hello' },
      { kind: 'status:3' },
    ]);
  });
});
