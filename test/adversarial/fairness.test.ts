/**
 * Share: team-b floods a function agent that loops until its time limit; team-a's trivial request to its own
 * function agent is still answered while team-b's requests wait (the executor pollers serve the quiet workspace
 * first, and hold team-b at its cap of long-running work). Outcomes only, never timings.
 */
import { describe, expect, it } from 'vitest';
import { answerTo, defineActive, eventually, teamA, teamB, workspaceItems } from './support.ts';

const unique = () => Math.random().toString(36).slice(2, 8);

describe('fair share between workspaces', () => {
  it("answers team-a's request while team-b's hog holds its function agent", async () => {
    const a = teamA();
    const b = teamB();
    const hog = `hog-${unique()}`;
    const quick = `quick-${unique()}`;
    await defineActive(b, `agent-${hog}`, 'agent.def.v1', {
      agent_id: hog,
      type: 'function',
      function_code: 'async function handler() { for (;;) {} }',
      transport: { kind: 'function', function: { timeout_ms: 15_000, memory_mb: 16 } },
    });
    await defineActive(a, `agent-${quick}`, 'agent.def.v1', {
      agent_id: quick,
      type: 'function',
      function_code: 'async function handler(input) { return { ok: true, n: input.n }; }',
      transport: { kind: 'function', function: { timeout_ms: 1_000, memory_mb: 16 } },
    });
    const aItemsBefore = (await workspaceItems(a.workspace)).length;

    const hogRequests = Array.from({ length: 10 }, (_, i) => `hog-req-${unique()}-${i}`);
    for (const request_id of hogRequests) {
      const r = await b.call('POST', '/breadcrumbs', {
        schema_name: 'agent.request.v1',
        title: 'spin',
        context: { agent: hog, request_id, input: {} },
      });
      expect(r.status).toBe(201);
    }
    const quickRequest = `quick-req-${unique()}`;
    const asked = await a.call('POST', '/breadcrumbs', {
      schema_name: 'agent.request.v1',
      title: 'ping',
      context: { agent: quick, request_id: quickRequest, input: { n: 7 } },
    });
    expect(asked.status).toBe(201);

    const answer = await eventually(() => answerTo(a, quickRequest), "team-a's answer", 60_000);
    expect(answer).toMatchObject({ status: 'success', output: { ok: true, n: 7 } });
    // Served during the attack, not after it: team-b still has requests nobody has answered.
    const answeredHogs = await Promise.all(hogRequests.map((id) => answerTo(b, id)));
    expect(answeredHogs.filter((x) => x === undefined).length).toBeGreaterThan(0);
    // Team-b's hog wrote nothing in team-a's workspace (team-a gained only its own request and answer).
    const aItems = await workspaceItems(a.workspace);
    expect(aItems.every((item) => item.workspace === a.workspace)).toBe(true);
    expect(aItems.length).toBeGreaterThan(aItemsBefore);
  });

  it('refuses a timeout above the operator ceiling, naming it', async () => {
    const b = teamB();
    // The schema allows a tool up to the Lambda maximum; the operator's ceiling (60 s by default) does not.
    const tool = `tool-${unique()}`;
    const putTool = await b.call('PUT', `/breadcrumbs/${tool}`, {
      schema_name: 'tool.def.v1',
      title: tool,
      context: { name: tool, implementation: 'echo', timeout_ms: 600_000 },
    });
    expect(putTool.status).toBeLessThan(300);
    const status = await eventually(async () => {
      const list = await b.call(
        'GET',
        `/breadcrumbs?schema_name=definition.status.v1&tag=${encodeURIComponent(`definition:${tool}`)}&view=full`,
      );
      return (list.body.items as { context: Record<string, unknown> }[] | undefined)?.[0]?.context;
    }, 'the tool status');
    expect(status).toMatchObject({
      state: 'invalid',
      errors: [{ path: 'timeout_ms', message: expect.stringContaining('CRUMBS_TIMEOUT_CEILING_MS') }],
    });
  });
});
