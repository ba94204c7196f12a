import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SdkA2aClient } from '#shared/adapters/a2a/a2a-client.ts';
import { guardedFetch } from '#shared/adapters/network/guarded-fetch.ts';
import { LocalSecrets } from '#shared/adapters/secrets/secret-source.ts';
import { CircuitBreaker, CircuitOpenError } from '#shared/core/agents/circuit-breaker.ts';
import { createExternalAgent, externalTaskId } from '#shared/core/agents/external-agent.ts';
import { agentSpec } from '#shared/domain/agent-spec.ts';
import { type AgentDefinition, parseDefinition } from '#shared/domain/definitions.ts';
import { RetriableError } from '#shared/domain/errors.ts';
import { startA2aServer, type TestA2aServer } from '../../../support/a2a-server.ts';
import { agentRun } from '../../../support/agent-run.ts';
import { InMemoryBreadcrumbStore } from '../../../support/memory/breadcrumb-store.ts';
import { InMemoryCircuitStore } from '../../../support/memory-circuit-store.ts';

let partner: TestA2aServer;
beforeAll(async () => {
  partner = await startA2aServer();
});
afterAll(() => partner.close());

function spec(endpoint: string, external: Record<string, unknown> = {}) {
  const parsed = parseDefinition('agent.def.v1', {
    agent_id: 'partner-adder',
    type: 'external',
    transport: { kind: 'external', external: { endpoint, protocol: 'a2a', ...external } },
  });
  const s = agentSpec(parsed.definition as AgentDefinition);
  if (s.type !== 'external') throw new Error('not an external spec');
  return s;
}

function setup() {
  const calls: string[] = [];
  const guarded = guardedFetch({ allowPrivate: true });
  const fetch: typeof globalThis.fetch = (input, init) => {
    calls.push(String(input));
    return guarded(input, init);
  };
  const store = new InMemoryBreadcrumbStore();
  const circuits = new InMemoryCircuitStore();
  const agent = createExternalAgent({
    a2a: new SdkA2aClient({ fetch }),
    breaker: new CircuitBreaker(circuits),
    secrets: new LocalSecrets(),
    store,
    fetch,
  });
  return { agent, store, circuits, calls };
}

describe('external agent (A2A)', () => {
  it('sends the request to the partner and answers with its artifacts', async () => {
    const { agent } = setup();
    const outcome = await agent.run(
      agentRun(spec(`${partner.baseUrl}/a2a/jsonrpc`), { input: { a: 40, b: 2 } }),
    );
    expect(outcome).toEqual({
      kind: 'answer',
      answer: { status: 'success', output: { sum: 42 }, text: 'the sum is 42' },
    });
  });

  it("answers a partner's failed task with an error answer", async () => {
    const { agent } = setup();
    const outcome = await agent.run(agentRun(spec(partner.baseUrl), { input: { fail: 'too big' } }));
    expect(outcome).toMatchObject({
      answer: { status: 'error', error: expect.stringContaining('failed the task: cannot add: too big') },
    });
  });

  it('keeps a task that outlives the call and reads it by id on the next delivery, without sending again', async () => {
    const { agent, store } = setup();
    const s = spec(partner.baseUrl, { timeout_ms: 200 });
    const run = agentRun(s, { requestId: 'req-slow', input: { a: 1, b: 1, slowMs: 600 } });
    await expect(agent.run(run)).rejects.toThrow(RetriableError);
    const kept = await store.get('ws-test', externalTaskId('test-agent', 'req-slow'));
    expect(kept.context).toMatchObject({ task_id: expect.any(String), request_id: 'req-slow' });
    await new Promise((r) => setTimeout(r, 700));
    const sends = partner.requests.filter((r) => r.startsWith('Send')).length;
    const outcome = await agent.run(run);
    expect(outcome).toMatchObject({ answer: { status: 'success', output: { sum: 2 } } });
    expect(partner.requests.filter((r) => r.startsWith('Send')).length).toBe(sends);
    expect(partner.requests).toContain('GetTask');
  });

  it('opens the circuit on a partner that is down, then fails fast with a clear error', async () => {
    const down = await startA2aServer();
    const url = down.baseUrl;
    await down.close();
    const { agent, calls } = setup();
    const s = spec(url, { circuit_breaker: { failure_threshold: 2, cooldown_ms: 60_000 } });
    await expect(agent.run(agentRun(s, { input: {} }))).rejects.toThrow(RetriableError);
    await expect(agent.run(agentRun(s, { input: {} }))).rejects.toThrow(CircuitOpenError);
    const callsBefore = calls.length;
    const fast = await agent.run(agentRun(s, { input: {} })).catch((e: unknown) => e);
    expect(fast).toBeInstanceOf(CircuitOpenError);
    expect(String(fast)).toMatch(
      /a2a:127\.0\.0\.1:\d+ is unavailable: the circuit is open after 2 consecutive failures/,
    );
    // Fast: the open circuit answers without a single request to the partner.
    expect(calls.length).toBe(callsBefore);
  });

  it('checks health before the trial call after the cool-down', async () => {
    const { agent, circuits } = setup();
    const key = `a2a:${new URL(partner.baseUrl).host}`;
    await circuits.put('ws-test', key, { state: 'open', failures: 3, openedAt: 0 }, 0);
    const outcome = await agent.run(
      agentRun(spec(partner.baseUrl, { healthCheck: { endpoint: '/health' } }), { input: { a: 1, b: 2 } }),
    );
    expect(outcome).toMatchObject({ answer: { status: 'success', output: { sum: 3 } } });
    expect(partner.requests).toContain('health');
    expect((await circuits.get('ws-test', key))?.circuit).toEqual({ state: 'closed', failures: 0 });
  });
});
