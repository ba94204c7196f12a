/**
 * Function tools written by another workspace: team-b's code runs in the sandbox with nothing of crumbs but two
 * pure built-in tools and its own request. It cannot name team-a's tools or workspace, code that spins or eats
 * memory is stopped at its own limits with an error naming them, each request is answered once, and team-a's
 * requests sent while a dozen such calls run are all answered before the attack's answers are in (an order of
 * events, never a duration), its data unchanged.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  adversary,
  defineActive,
  teamA,
  teamAData,
  teamB,
  toolAnswers,
  writeToolRequests,
} from './support.ts';

const uid = () => randomBytes(4).toString('hex');
type Team = ReturnType<typeof teamB>;
type Json = Record<string, unknown>;

/** Team-b's tool requests, written at once; every answer of each once all are in. */
async function attackWith(team: Team, tool: string, inputs: unknown[], events: string[]) {
  const ids = await writeToolRequests(team, tool, inputs);
  const answers: Json[][] = [];
  for (const id of ids) answers.push(await toolAnswers(team, id, 120_000));
  events.push('attack answered');
  return answers;
}

/** Team-a's write, read and `/health`, one after another, `rounds` times. */
async function probes(rounds: number, events: string[]) {
  const a = teamA();
  const statuses: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const id = `probe-${uid()}`;
    statuses.push(
      (await a.call('PUT', `/breadcrumbs/${id}`, { schema_name: 'note.text.v1', context: { i } })).status,
    );
    statuses.push((await a.call('GET', `/breadcrumbs/${id}`)).status);
    const health = await fetch(`${adversary().api}/health`);
    statuses.push(health.status);
    await health.text();
  }
  events.push('neighbour done');
  return statuses;
}

describe("another workspace's function tools", () => {
  it('reach nothing of team-a: only pure tools and their own request', async () => {
    const b = teamB();
    const tool = `peek-${uid()}`;
    await defineActive(b, `tool-${tool}`, 'tool.def.v1', {
      name: tool,
      implementation: 'function',
      function: {
        code: `async function handler(input, ctx) {
          const tried = {};
          for (const name of ['http', 'llm', 'team-a-notes', 'crumbs_search']) {
            try { tried[name] = await ctx.callTool({ tool: name, input: { url: 'http://127.0.0.1/', prompt: 'x' } }); }
            catch (e) { tried[name] = 'refused: ' + String(e && e.message || e); }
          }
          return { request: await ctx.request(), ctx: Object.keys(ctx).sort(), tried };
        }`,
        timeout_ms: 10_000,
      },
    });
    const [answers] = await attackWith(b, tool, [{ workspace: 'team-a' }], []);
    const answer = answers?.[0];
    expect(answer).toMatchObject({ status: 'success' });
    const output = answer?.output as { request: Json; ctx: string[]; tried: Record<string, string> };
    expect(output.ctx).toEqual(['callTool', 'request']);
    expect(output.request).toMatchObject({ tool, workspace: adversary().teamB.workspace });
    for (const name of ['http', 'llm', 'team-a-notes', 'crumbs_search']) {
      expect(output.tried[name], name).toMatch(/^refused: /);
    }
  });

  it('stop at their own limits, answered once each, while team-a is answered first and left unchanged', async () => {
    const b = teamB();
    const spin = `spin-${uid()}`;
    const hog = `hog-${uid()}`;
    await defineActive(b, `tool-${spin}`, 'tool.def.v1', {
      name: spin,
      implementation: 'function',
      function: { code: 'async function handler() { for (;;) {} }', timeout_ms: 1_000 },
    });
    await defineActive(b, `tool-${hog}`, 'tool.def.v1', {
      name: hog,
      implementation: 'function',
      function: {
        code: 'async function handler() { const a = []; let s = "x"; for (;;) { s += s.length; a.push(s.split("")); } }',
        timeout_ms: 1_000,
        memory_mb: 8,
      },
    });
    const before = await teamAData();
    const events: string[] = [];
    const [spins, hogs, neighbour] = await Promise.all([
      attackWith(
        b,
        spin,
        Array.from({ length: 8 }, () => ({})),
        events,
      ),
      attackWith(
        b,
        hog,
        Array.from({ length: 4 }, () => ({})),
        events,
      ),
      probes(4, events),
    ]);
    for (const answers of [...spins, ...hogs]) expect(answers).toHaveLength(1);
    for (const [answer] of spins) {
      expect(answer).toMatchObject({
        status: 'error',
        error: expect.stringMatching(/time limit of 1000 ms/),
      });
    }
    for (const [answer] of hogs) {
      expect(answer).toMatchObject({ status: 'error', error: expect.stringMatching(/memory|time limit/) });
    }
    for (const status of neighbour) expect(status).toBeLessThan(300);
    expect(events[0]).toBe('neighbour done');
    expect(await teamAData()).toEqual(before);
  });
});
