/**
 * Run budgets in the pure engine: `limits.max_llm_calls` / `max_tokens` / `max_cost_usd` count the model calls the
 * answers record, each agent request carries its share of what remains, parallel shares never sum past a limit,
 * and a budget pauses the run (`stopped_by`) until a person resumes it with a raised limit.
 */
import { describe, expect, it } from 'vitest';
import type { RunEvent } from '#shared/core/orchestration/events.ts';
import { readAddressedMessage } from '#shared/core/orchestration/messages.ts';
import type { BudgetUsed } from '#shared/domain/budget.ts';
import { RunHarness, workflow } from '../../../support/run-harness.ts';

let n = 0;
function agentAnswer(
  h: RunHarness,
  step: string,
  usage: BudgetUsed,
  extra: Partial<RunEvent> = {},
): RunEvent {
  const request = h.request(step);
  return {
    type: 'answer',
    id: `agent-ans-${++n}`,
    request_id: request.id,
    ok: true,
    output: `${step} done`,
    by: `agent:${request.target}`,
    usage,
    ...extra,
  } as RunEvent;
}

describe('run budgets', () => {
  it('max_llm_calls counts model calls from the answers, and pauses the run before a step it cannot pay for', async () => {
    const h = new RunHarness(
      workflow({
        limits: { max_llm_calls: 3 },
        steps: [
          { id: 'a', agent: 'x' },
          { id: 'b', agent: 'x' },
        ],
      }),
    );
    await h.start();
    expect(h.request('a').budget).toEqual({ max_llm_calls: 3 });
    await h.send(agentAnswer(h, 'a', { calls: 3, tokens: 30, cost_nusd: 100 }));
    expect(h.current.counters).toMatchObject({ llm_calls: 3, tokens: 30, cost_nusd: 100 });
    expect(h.current.status).toBe('paused');
    expect(h.current.stopped_by).toMatchObject({
      budget: 'limits.max_llm_calls',
      limit: 3,
      used: 3,
      step: 'b',
    });
    expect(h.openRequests()).toEqual([]);

    // A person raises the limit on resume: the run goes on, and the next request's share is what is left.
    await h.send({
      type: 'control',
      id: 'resume-1',
      action: 'resume',
      limits: { max_llm_calls: 5 },
      by: 'user:ann',
    });
    expect(h.current.status).toBe('running');
    expect(h.current.stopped_by).toBeUndefined();
    expect(h.current.raised_limits).toMatchObject({ max_llm_calls: 5, by: 'user:ann' });
    expect(h.request('b').budget).toEqual({ max_llm_calls: 2 });
    await h.send(agentAnswer(h, 'b', { calls: 2, tokens: 20, cost_nusd: 50 }));
    expect(h.current.status).toBe('succeeded');
    expect(h.current.counters.llm_calls).toBe(5);
  });

  it('an agent stopped by its share pauses the run with the figures; the step reruns after the resume', async () => {
    const h = new RunHarness(workflow({ limits: { max_tokens: 100 }, steps: [{ id: 'a', agent: 'x' }] }));
    await h.start();
    expect(h.request('a').budget).toEqual({ max_tokens: 100 });
    const firstAttempt = h.request('a').id;
    await h.send(
      agentAnswer(h, 'a', { calls: 4, tokens: 90, cost_nusd: 0 }, {
        ok: false,
        output: undefined,
        error: 'budget limits.max_tokens of run r (100 tokens) reached: 90 tokens used over 4 calls',
        budget_stop: { budget: 'limits.max_tokens of run r', limit: 100, used: 90, calls: 4, unit: 'tokens' },
      } as Partial<RunEvent>),
    );
    expect(h.current.status).toBe('paused');
    expect(h.current.stopped_by).toMatchObject({
      budget: 'limits.max_tokens',
      limit: 100,
      used: 90,
      step: 'a',
    });
    expect(h.current.counters.tokens).toBe(90);
    expect(h.state('a').status).toBe('pending');

    // Resuming without raising hands the step only what is left (10 tokens); the agent stops again, costing nothing.
    await h.control('resume');
    expect(h.request('a').budget).toEqual({ max_tokens: 10 });
    await h.send(
      agentAnswer(h, 'a', { calls: 0, tokens: 0, cost_nusd: 0 }, {
        ok: false,
        output: undefined,
        error: 'budget reached',
        budget_stop: { budget: 'limits.max_tokens of run r', limit: 10, used: 0, calls: 0, unit: 'tokens' },
      } as Partial<RunEvent>),
    );
    expect(h.current.status).toBe('paused');
    expect(h.current.stopped_by).toMatchObject({ budget: 'limits.max_tokens', limit: 100, used: 90 });
    expect(h.current.counters.tokens).toBe(90);

    await h.send({
      type: 'control',
      id: 'resume-2',
      action: 'resume',
      limits: { max_tokens: 200 },
      by: 'user:ann',
    });
    const again = h.request('a');
    expect(again.id).not.toBe(firstAttempt);
    expect(again.budget).toEqual({ max_tokens: 110 });
    await h.send(agentAnswer(h, 'a', { calls: 1, tokens: 50, cost_nusd: 0 }));
    expect(h.current.status).toBe('succeeded');
    expect(h.current.counters.tokens).toBe(140);
  });

  it('parallel agent steps split what remains: their shares never sum past the limit', async () => {
    const h = new RunHarness(
      workflow({
        limits: { max_tokens: 1000, max_cost_usd: 0.00001, max_llm_calls: 7 },
        steps: [
          {
            id: 'p',
            parallel: [
              { id: 'a', agent: 'x' },
              { id: 'b', agent: 'y' },
              { id: 'c', agent: 'z' },
            ],
          },
        ],
      }),
    );
    await h.start();
    const shares = ['a', 'b', 'c'].map((s) => h.request(s).budget ?? {});
    const sum = (k: 'max_tokens' | 'max_cost_nusd' | 'max_llm_calls') =>
      shares.reduce((t, s) => t + (s[k] ?? 0), 0);
    expect(sum('max_tokens')).toBeLessThanOrEqual(1000);
    expect(sum('max_cost_nusd')).toBeLessThanOrEqual(10_000);
    expect(sum('max_llm_calls')).toBe(7);
    expect(shares.map((s) => s.max_llm_calls)).toEqual([3, 2, 2]);
    // One answers using less than its share: a step started later could have the rest; the run ends under budget.
    await h.send(agentAnswer(h, 'a', { calls: 1, tokens: 100, cost_nusd: 1000 }));
    await h.send(agentAnswer(h, 'b', { calls: 2, tokens: 333, cost_nusd: 3333 }));
    await h.send(agentAnswer(h, 'c', { calls: 2, tokens: 333, cost_nusd: 3333 }));
    expect(h.current.status).toBe('succeeded');
    expect(h.current.counters).toMatchObject({ llm_calls: 5, tokens: 766, cost_nusd: 7666 });
  });

  it('a tool step carries a share too (the llm tool calls a model), and its budget stop pauses the run', async () => {
    const h = new RunHarness(
      workflow({
        limits: { max_tokens: 100, max_llm_calls: 4 },
        steps: [
          {
            id: 'p',
            parallel: [
              { id: 'ask', tool: 'ask' },
              { id: 'a', agent: 'x' },
            ],
          },
        ],
      }),
    );
    await h.start();
    const shares = [h.request('ask').budget ?? {}, h.request('a').budget ?? {}];
    expect(shares.reduce((t, s) => t + (s.max_tokens ?? 0), 0)).toBeLessThanOrEqual(100);
    expect(shares.map((s) => s.max_llm_calls)).toEqual([2, 2]);
    const firstAttempt = h.request('ask').id;
    // The llm tool was refused the call its share could not pay for: the step goes back to pending, the run pauses.
    await h.send({
      type: 'answer',
      id: 'tool-ans-1',
      request_id: firstAttempt,
      ok: false,
      error: 'budget limits.max_tokens of run r (50 tokens) reached',
      by: 'tool:ask',
      budget_stop: { budget: 'limits.max_tokens of run r', limit: 50, used: 0, calls: 0, unit: 'tokens' },
    } as RunEvent);
    expect(h.state('ask').status).toBe('pending');
    await h.send(agentAnswer(h, 'a', { calls: 1, tokens: 60, cost_nusd: 0 }));
    expect(h.current.status).toBe('paused');
    expect(h.current.stopped_by).toMatchObject({ budget: 'limits.max_tokens', limit: 100, step: 'ask' });

    await h.send({
      type: 'control',
      id: 'resume-t',
      action: 'resume',
      limits: { max_tokens: 500 },
      by: 'user:ann',
    });
    const again = h.request('ask');
    expect(again.id).not.toBe(firstAttempt);
    expect(again.budget).toMatchObject({ max_tokens: 440, max_llm_calls: 3 });
  });

  it('only a person raises a budget: an agent resuming its run with higher limits is refused', async () => {
    const h = new RunHarness(
      workflow({
        limits: { max_llm_calls: 1 },
        steps: [
          { id: 'a', agent: 'x' },
          { id: 'b', agent: 'x' },
        ],
      }),
    );
    await h.start();
    await h.send(agentAnswer(h, 'a', { calls: 1, tokens: 1, cost_nusd: 0 }));
    expect(h.current.status).toBe('paused');
    await h.send({
      type: 'control',
      id: 'sneaky',
      action: 'resume',
      limits: { max_llm_calls: 1000 },
      by: 'agent:x',
    });
    expect(h.current.status).toBe('paused');
    expect(h.current.raised_limits).toBeUndefined();
    expect(h.current.refused?.[0]).toMatchObject({ by: 'agent:x', what: 'control resume' });
  });

  it('reads an answer’s usage only from crumbs’ own writers: a person’s write claiming usage counts nothing', () => {
    const base = {
      id: 'resp-1',
      schema_name: 'agent.response.v1',
      tags: ['run:run-1', 'reply-to:workflow:wf'],
      context: {
        request_id: 'r',
        status: 'success',
        text: 'hi',
        turn_usage: { tokens: 15, cost_nusd: 41000, calls: 1 },
      },
      caused_by: undefined,
    };
    const fromAgent = readAddressedMessage({ ...base, created_by: 'agent:x' } as never);
    expect('event' in fromAgent && fromAgent.event).toMatchObject({
      usage: { tokens: 15, cost_nusd: 41000, calls: 1 },
    });
    const fromPerson = readAddressedMessage({ ...base, created_by: 'user:mallory' } as never);
    expect('event' in fromPerson && fromPerson.event).not.toHaveProperty('usage');
  });
});
