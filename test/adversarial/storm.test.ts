/**
 * Breadth: two function agents of team-b each write two breadcrumbs for every one they read. The publisher stops
 * routing the thread at its budget (60 in the adversarial stack), writes one loop-stop record naming the budget,
 * and team-a's request is still answered. The backlog routed before the stop does not run: executors drop a
 * trigger of a spent thread, and one already running in a thread near its budget writes nothing once it is spent.
 */
import { describe, expect, it } from 'vitest';
import { flushStep } from '#shared/core/stream/breadth-budget.ts';
import { answerTo, defineActive, eventually, teamA, teamB, workspaceItems } from './support.ts';

const BUDGET = 60;
/**
 * What executions write while the publisher's counter trails them (the stream's delay): locally an executor
 * function runs at most 4 invocations of 5 messages at once, and each of these agents writes 3 breadcrumbs.
 */
const IN_FLIGHT_WRITES = 4 * 5 * 3;
const unique = () => Math.random().toString(36).slice(2, 8);

describe('a storm of breadcrumbs', () => {
  it('stops at the thread budget with one loop-stop record, and the neighbour is still answered', async () => {
    const a = teamA();
    const b = teamB();
    const tag = unique();
    const ping = `storm${tag}.ping.v1`;
    const pong = `storm${tag}.pong.v1`;
    const doubler = (id: string, reads: string, writes: string) =>
      defineActive(b, `agent-${id}`, 'agent.def.v1', {
        agent_id: id,
        type: 'function',
        function_code: `async function handler(input, ctx) {
          await ctx.create({ schema_name: '${writes}', title: 'one', context: { n: 1 } });
          await ctx.create({ schema_name: '${writes}', title: 'two', context: { n: 2 } });
          return { wrote: 2 };
        }`,
        transport: { kind: 'function', function: { timeout_ms: 2_000, memory_mb: 16 } },
        subscriptions: { selectors: [{ schema_name: reads, role: 'trigger' }] },
      });
    await doubler(`pinger-${tag}`, pong, ping);
    await doubler(`ponger-${tag}`, ping, pong);
    const quick = `calm-${tag}`;
    await defineActive(a, `agent-${quick}`, 'agent.def.v1', {
      agent_id: quick,
      type: 'function',
      function_code: 'async function handler() { return { ok: true }; }',
      transport: { kind: 'function', function: { timeout_ms: 1_000, memory_mb: 16 } },
    });

    const root = await b.call('POST', '/breadcrumbs', {
      schema_name: ping,
      title: 'start',
      context: { n: 0 },
    });
    expect(root.status).toBe(201);
    const thread = String(root.body.id);
    const inThread = async () =>
      (await workspaceItems(b.workspace)).filter(
        (i) => i.kind === 'breadcrumb' && (i.causation as { thread?: string } | undefined)?.thread === thread,
      );

    const stop = await eventually(
      async () => (await inThread()).find((i) => i.schema_name === 'system.loop_stopped.v1'),
      'the loop-stop record',
      60_000,
    );
    expect(stop.context).toMatchObject({ budget: 'thread', thread, limit: BUDGET });

    // Team-a is answered during the storm.
    const requestId = `calm-${unique()}`;
    await a.call('POST', '/breadcrumbs', {
      schema_name: 'agent.request.v1',
      title: 'hello',
      context: { agent: quick, request_id: requestId, input: {} },
    });
    expect(await eventually(() => answerTo(a, requestId), "team-a's answer", 60_000)).toMatchObject({
      status: 'success',
    });

    // The writes stop: two reads a few seconds apart see the same thread, within the budget, one flush step of the
    // publisher's counter and what executions were writing while the counter trailed them — plus the thread's
    // root and its loop-stop record. (Before executors dropped a spent thread's backlog: about 4× the budget.)
    const settled = await eventually(
      async () => {
        const first = (await inThread()).length;
        await new Promise((r) => setTimeout(r, 3000));
        const second = (await inThread()).length;
        return first === second ? second : undefined;
      },
      'the storm to stop',
      60_000,
    );
    expect(settled).toBeGreaterThanOrEqual(BUDGET);
    expect(settled, `settled at ${settled}`).toBeLessThanOrEqual(
      BUDGET + flushStep(BUDGET) + IN_FLIGHT_WRITES + 2,
    );
    const stops = (await inThread()).filter((i) => i.schema_name === 'system.loop_stopped.v1');
    expect(stops).toHaveLength(1);
  });
});
