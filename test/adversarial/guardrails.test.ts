/**
 * Guardrails under attack by a second workspace, as team-b: its policies never apply to team-a's agents (not one
 * that selects every agent, not one named like the policy team-a's agent names), and it cannot try, list or read
 * team-a's policies or interventions. The other attacks of the issue are kept beside the code they attack:
 * a card split across streamed chunks (`test/unit/rooms/guardrails/guard.test.ts`, guardedSink), a poisoned tool
 * result and a sub-agent hand-off (`test/unit/rooms/guardrails/turn-guardrails.test.ts`), writers that are not
 * people (`write-gate.test.ts`, and a plain put in `test/integration/guardrails.test.ts`).
 */
import { describe, expect, it } from 'vitest';
import { adversary, answerTo, defineActive, eventually, teamA, teamB } from './support.ts';

const unique = () => Math.random().toString(36).slice(2, 8);

async function ask(team: ReturnType<typeof teamA>, agent: string, message: string) {
  const requestId = `gr-${unique()}`;
  const written = await team.call('POST', '/breadcrumbs', {
    schema_name: 'agent.request.v1',
    title: 'ask',
    tags: ['agent:request', `agent:${agent}`],
    context: { agent, message, request_id: requestId },
  });
  expect(written.status).toBe(201);
  return eventually(() => answerTo(team, requestId), `the answer of ${agent}`);
}

describe("another workspace's guardrails", () => {
  it("never apply to team-a's agents, by selector or by name", async () => {
    const id = unique();
    // team-b: a policy for every agent, and one named as team-a's agent names its own.
    for (const [name, extra] of [
      [`all-${id}`, { applies_to: { agents: ['*'] } }],
      [`named-${id}`, {}],
    ] as const) {
      const put = await teamB().call('PUT', `/breadcrumbs/guardrail-${name}`, {
        schema_name: 'guardrail.def.v1',
        title: name,
        context: {
          guardrail_id: name,
          words: { terms: ['hello'], action: 'block' },
          message: 'hijacked by team-b',
          ...extra,
        },
      });
      expect(put.status).toBe(201);
    }
    await defineActive(teamA(), `agent-free-${id}`, 'agent.def.v1', {
      agent_id: `free-${id}`,
      model: 'offline/crumbs',
      tools: [],
    });
    await defineActive(teamA(), `agent-named-${id}`, 'agent.def.v1', {
      agent_id: `named-${id}`,
      model: 'offline/crumbs',
      tools: [],
      guardrails: [`named-${id}`],
    });
    const free = await ask(teamA(), `free-${id}`, 'hello there');
    expect(free.status).toBe('success');
    expect(JSON.stringify(free)).not.toContain('team-b');
    // Naming a policy only team-b has: team-a's workspace has none of that name, so the turn fails closed.
    const named = await ask(teamA(), `named-${id}`, 'hello there');
    expect(named.status).toBe('blocked');
    expect(String(named.message)).toContain('missing or invalid');
    expect(JSON.stringify(named)).not.toContain('hijacked');
  });

  it("cannot try, list or read team-a's policies and interventions", async () => {
    const a = teamA().workspace;
    const probe = teamB();
    const base = probe.base.replace(/\/workspaces\/[^/]+$/, `/workspaces/${a}`);
    for (const [method, path, body] of [
      ['POST', '/guardrails/pii/test', { text: 'x' }],
      ['GET', '/guardrails', undefined],
      ['GET', '/threads/t/guardrail-events', undefined],
    ] as const) {
      const res = await fetch(`${base}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${adversary().teamB.token}`,
          ...(body ? { 'content-type': 'application/json' } : {}),
        },
        ...(body ? { body: JSON.stringify(body) } : {}),
      });
      expect({ path, status: res.status }).toEqual({ path, status: 403 });
    }
  });
});
