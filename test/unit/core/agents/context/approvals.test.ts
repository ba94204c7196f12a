/**
 * The agent's half of approving tool calls, on the in-memory store: a round with a call that needs approval writes
 * the approval (no tool request) and its expiry timer; only a person's first-version response (or the expiry
 * timer's) decides it, once — a redelivery of the deciding response writes the same outputs, any other response
 * nothing; edited arguments must fit the tool's schema; a late answer counts as the expiry.
 */
import { describe, expect, it } from 'vitest';
import { answerApproval, decide, decisionOutputs } from '#shared/core/agents/context/approvals.ts';
import { type AgentConversation, toolRound } from '#shared/core/agents/context/tool-rounds.ts';
import type { ExecutionInput } from '#shared/core/executor/contract.ts';
import { type AgentDefinition, AgentDefinitionSchema } from '#shared/domain/definitions.ts';
import { SCHEDULER_PRINCIPAL } from '#shared/domain/timer-message.ts';
import { approvalIdFor, expiryResponseId, type ToolApproval } from '#shared/domain/tool-approval.ts';
import { InMemoryBreadcrumbStore } from '../../../../support/memory/breadcrumb-store.ts';

const WS = 'ws-approvals';
const definition: AgentDefinition = AgentDefinitionSchema.parse({
  agent_id: 'payer',
  tools: ['pay', 'look'],
});
const SCHEMA = { type: 'object', properties: { amount: { type: 'number' } }, required: ['amount'] };

function input(trigger: {
  id: string;
  schema_name: string;
  context: unknown;
  created_by: string;
  version?: number;
}): ExecutionInput<AgentDefinition> {
  return {
    definition,
    definitionRef: {
      id: 'agent-payer',
      version: 1,
      workspace: WS,
      kind: 'agent',
      schema_name: 'agent.def.v1',
    },
    principal: 'agent:payer',
    trigger: {
      title: '',
      tags: [],
      version: 1,
      updated_at: new Date().toISOString(),
      workspace: WS,
      ...trigger,
    },
    context: {},
    causation: { caused_by: `${trigger.id}@1`, thread: 'th-1', hop: 1 },
    signal: new AbortController().signal,
  };
}

function conversation(): AgentConversation {
  return {
    agent_id: 'payer',
    thread: 'th-1',
    model: 'test/m',
    system: '',
    messages: [{ role: 'user', content: 'pay the bill' }],
    round: 0,
    status: 'waiting-for-tools',
    pending: [],
    response_to: 'm1',
    user_message: 'pay the bill',
    trigger_id: 'm1',
    turn: 'm1@1',
    answer_tags: ['run:r1', 'step:pay-step', 'reply-to:workflow:w'],
  };
}

const offered = {
  specs: [
    { name: 'pay', description: 'pay', inputSchema: SCHEMA },
    { name: 'look', description: 'look', inputSchema: { type: 'object' } },
  ],
  approvals: new Map([['pay', { timeoutSeconds: 60 }]]),
};

describe('a round with a call that needs approval', () => {
  it('writes the conversation, then the approval instead of its tool request, the other calls’ requests, and a timer', () => {
    const now = new Date('2026-01-01T00:00:00Z');
    const round = toolRound(
      input({ id: 'm1', schema_name: 'user.message.v1', context: {}, created_by: 'user:a' }),
      {},
      conversation(),
      {
        text: 'The bill is due today.',
        toolCalls: [
          { id: 'c1', name: 'pay', input: { amount: 12 } },
          { id: 'c2', name: 'look', input: {} },
        ],
        finishReason: 'tool-calls',
        usage: { inputTokens: 1, outputTokens: 1 },
        model: 'test/m',
      },
      offered,
      now,
    );
    if ('again' in round) throw new Error('expected outputs');
    expect(round.outputs.map((o) => o.schema_name)).toEqual([
      'agent.conversation.v1',
      'human.request.v1',
      'tool.request.v1',
    ]);
    const [conv, approval, request] = round.outputs;
    expect(approval?.context).toMatchObject({
      kind: 'tool-approval',
      agent_id: 'payer',
      tool: 'pay',
      arguments: { amount: 12 },
      reason: 'The bill is due today.',
      status: 'pending',
      run_id: 'r1',
      step: 'pay-step',
      turn: 'm1@1',
      expires_at: '2026-01-01T00:01:00.000Z',
    });
    expect(approval?.id).toBe(approvalIdFor(String(approval?.context.tool_request_id)));
    // Every request names the turn it continues, whichever turn of the thread answers first.
    expect(request?.context).toMatchObject({ tool: 'look', turn: 'm1@1' });
    expect(
      (conv?.context as unknown as AgentConversation | undefined)?.pending.map(
        (p) => p.approval !== undefined,
      ),
    ).toEqual([true, false]);
    expect(round.timers).toEqual([
      expect.objectContaining({
        id: expiryResponseId(String(approval?.id)),
        at: new Date('2026-01-01T00:01:00Z'),
        breadcrumb: expect.objectContaining({
          schema_name: 'human.response.v1',
          tags: ['reply-to:agent:payer', `request:${approval?.id}`],
          context: { request_id: approval?.id, decision: 'reject', reason: 'expired' },
        }),
      }),
    ]);
  });
});

async function pendingApproval(store: InMemoryBreadcrumbStore, extra: Partial<ToolApproval> = {}) {
  const id = approvalIdFor('req-1');
  const context: ToolApproval = {
    kind: 'tool-approval',
    agent_id: 'payer',
    tool: 'pay',
    arguments: { amount: 12 },
    reason: 'due',
    tool_request_id: 'req-1',
    thread: 'th-1',
    round: 1,
    turn: 'm1@1',
    prompt: 'payer wants to call pay',
    input_schema: SCHEMA,
    status: 'pending',
    ...extra,
  };
  await store.create(
    WS,
    { schema_name: 'human.request.v1', title: 'approval', tags: [], context: context as never },
    { principal: 'agent:payer', id },
  );
  return id;
}

const response = (id: string, by: string, context: Record<string, unknown>) =>
  input({ id, schema_name: 'human.response.v1', context, created_by: by });

describe('answerApproval', () => {
  it('approves once: the tool request, again on a redelivery, never for a second response', async () => {
    const store = new InMemoryBreadcrumbStore();
    const id = await pendingApproval(store);
    const first = response('resp-1', 'user:alice', { request_id: id, decision: 'approve' });
    const decided = await answerApproval(first, { store });
    expect(decided.outputs).toEqual([
      expect.objectContaining({
        schema_name: 'tool.request.v1',
        context: expect.objectContaining({
          tool: 'pay',
          input: { amount: 12 },
          requestId: 'req-1',
          turn: 'm1@1',
        }),
      }),
    ]);
    expect((await answerApproval(first, { store })).outputs).toEqual(decided.outputs);
    const second = response('resp-2', 'user:bob', { request_id: id, decision: 'reject', reason: 'no' });
    expect(await answerApproval(second, { store })).toEqual({ outputs: [] });
    expect((await store.get(WS, id)).context).toMatchObject({ status: 'approved', decided_by: 'user:alice' });
  });

  it('decides nothing for an agent, a tool, a nameless plain put, an edited response or another agent’s approval', async () => {
    const store = new InMemoryBreadcrumbStore();
    const id = await pendingApproval(store);
    for (const by of ['agent:mallory', 'agent:payer', 'tool:pay', 'user:plain-put', 'system:scheduler']) {
      expect(
        await answerApproval(response(`r-${by}`, by, { request_id: id, decision: 'approve' }), { store }),
      ).toEqual({
        outputs: [],
      });
    }
    const edited = { ...response('r-edit', 'user:alice', { request_id: id, decision: 'approve' }) };
    edited.trigger = { ...edited.trigger, version: 2 };
    expect(await answerApproval(edited, { store })).toEqual({ outputs: [] });
    // An approval someone else wrote (or edited) does not speak for the agent.
    const forged = approvalIdFor('req-forged');
    await store.create(
      WS,
      {
        schema_name: 'human.request.v1',
        title: '',
        tags: [],
        context: { kind: 'tool-approval', agent_id: 'payer' },
      },
      { principal: 'user:alice', id: forged },
    );
    expect(
      await answerApproval(response('r-f', 'user:alice', { request_id: forged, decision: 'approve' }), {
        store,
      }),
    ).toEqual({ outputs: [] });
    expect((await store.get(WS, id)).context).toMatchObject({ status: 'pending' });
  });

  it('rejects with the reason as the call’s result, written before the round is looked at', async () => {
    const store = new InMemoryBreadcrumbStore();
    const id = await pendingApproval(store);
    const decided = await answerApproval(
      response('resp-r', 'user:alice', { request_id: id, decision: 'reject', reason: 'too much' }),
      { store },
    );
    expect(decided.outputs).toEqual([]);
    expect(decided.rejection?.trigger).toMatchObject({
      schema_name: 'tool.response.v1',
      created_by: 'agent:payer',
      context: expect.objectContaining({
        request_id: 'req-1',
        status: 'error',
        error: 'the call of pay was not made: user:alice rejected it: too much',
        thread: 'th-1',
        turn: 'm1@1',
      }),
    });
    expect(await store.get(WS, String(decided.rejection?.trigger.id))).toMatchObject({
      created_by: 'agent:payer',
    });
  });

  it('expires by the timer, and counts a person answering after the expiry as the expiry', async () => {
    const store = new InMemoryBreadcrumbStore();
    const id = await pendingApproval(store, { expires_at: '2020-01-01T00:00:00.000Z' });
    const late = await answerApproval(
      response('resp-late', 'user:alice', { request_id: id, decision: 'approve' }),
      {
        store,
      },
    );
    expect(late.outputs).toEqual([]);
    expect(late.rejection?.trigger.context).toMatchObject({ approval: 'expired' });
    const store2 = new InMemoryBreadcrumbStore();
    await pendingApproval(store2);
    const expired = await answerApproval(
      response(expiryResponseId(id), SCHEDULER_PRINCIPAL, {
        request_id: id,
        decision: 'reject',
        reason: 'expired',
      }),
      { store: store2 },
    );
    expect(expired.rejection?.trigger.context).toMatchObject({
      error: 'the call of pay was not made: nobody approved it in time (the approval expired)',
    });
  });
});

describe('decide', () => {
  const approval = {
    kind: 'tool-approval',
    agent_id: 'payer',
    tool: 'pay',
    arguments: { amount: 1 },
    reason: '',
    tool_request_id: 'req-1',
    thread: 't',
    round: 1,
    prompt: '',
    input_schema: SCHEMA,
    status: 'pending',
  } satisfies ToolApproval;
  const now = new Date();
  it('takes edited arguments that fit the schema, and refuses those that do not', async () => {
    expect(
      await decide(
        approval,
        { approvalId: 'a', decision: 'approve', arguments: { amount: 5 } },
        false,
        'user:a',
        '',
        now,
      ),
    ).toMatchObject({ status: 'approved', arguments: { amount: 5 }, edited: true });
    expect(
      await decide(
        approval,
        { approvalId: 'a', decision: 'approve', arguments: { amount: 'x' } },
        false,
        'user:a',
        '',
        now,
      ),
    ).toBe('arguments.amount: must be number');
  });
  it('writes nothing for a pending approval', () => {
    expect(decisionOutputs('payer', approval)).toEqual([]);
  });
});
