/**
 * Runs that would never end, written by team-b: a sub-workflow step naming team-a's workflow (which exists, in
 * the other workspace), a map over more than a run can hold, a retry from before a checkpoint on a finished run.
 * Each of team-b's runs reaches an ended or waiting state whose controls work; team-a's workspace is unchanged by
 * them and team-a's own run still works.
 */
import { describe, expect, it } from 'vitest';
import { type ApiAnswer, eventually, teamA, teamB, workspaceItems } from './support.ts';

type Client = ReturnType<typeof teamA>;
type Json = Record<string, unknown>;

const suffix = Date.now().toString(36);

async function define(team: Client, workflows: Json[]): Promise<void> {
  await team.call('PUT', `/breadcrumbs/tool-echo-${suffix}`, {
    schema_name: 'tool.def.v1',
    context: { name: 'echo', implementation: 'echo' },
  });
  for (const w of workflows) {
    const put = await team.call('PUT', `/breadcrumbs/wf-${String(w.workflow_id)}`, {
      schema_name: 'workflow.def.v1',
      context: w,
    });
    expect(put.status, JSON.stringify(put.body)).toBe(201);
  }
  await eventually(
    async () => {
      const res = await team.call('GET', '/breadcrumbs?schema_name=definition.status.v1&limit=100');
      const items =
        (res.body.items as { id: string; context: { state: string; definition_id?: string } }[]) ?? [];
      const ids = new Set([`tool-echo-${suffix}`, ...workflows.map((w) => `wf-${String(w.workflow_id)}`)]);
      const mine = items.filter((i) => ids.has(i.context.definition_id ?? ''));
      return mine.length === ids.size && mine.every((i) => i.context.state === 'active') ? true : undefined;
    },
    'the definitions to be active',
    60_000,
  );
}

async function runOf(
  team: Client,
  runId: string,
  until: (run: Json) => boolean,
  what: string,
): Promise<Json> {
  return eventually(
    async () => {
      const res: ApiAnswer = await team.call('GET', `/runs/${runId}`);
      return res.status === 200 && until(res.body) ? res.body : undefined;
    },
    what,
    60_000,
  );
}

describe("team-b's runs that would never end", () => {
  it('end or wait with their controls working, and leave team-a alone', async () => {
    const a = teamA();
    const b = teamB();
    const victim = `victim-${suffix}`;
    await define(a, [{ workflow_id: victim, steps: [{ id: 'only', tool: 'echo', input: { hi: 'a' } }] }]);
    const before = await workspaceItems(a.workspace);

    await define(b, [
      { workflow_id: `reach-${suffix}`, steps: [{ id: 'sub', workflow: victim, input: {} }] },
      {
        workflow_id: `bulk-${suffix}`,
        steps: [
          { id: 'each', map: { items: '=input.rows', step: { id: 'one', tool: 'echo', input: '=item' } } },
        ],
      },
      {
        workflow_id: `gated-${suffix}`,
        steps: [
          { id: 'prepare', tool: 'echo' },
          { id: 'ok', human: { prompt: 'ok?' } },
          { id: 'after', tool: 'echo' },
        ],
      },
    ]);

    const reach = await b.call('POST', '/runs', { workflow: `reach-${suffix}`, input: {} });
    const rows = Array.from({ length: 150 }, (_, i) => ({ i, pad: 'x'.repeat(1000) }));
    const bulk = await b.call('POST', '/runs', { workflow: `bulk-${suffix}`, input: { rows } });
    const gated = await b.call('POST', '/runs', { workflow: `gated-${suffix}`, input: {} });
    for (const started of [reach, bulk, gated]) expect(started.status).toBe(201);

    const reached = await runOf(
      b,
      String(reach.body.run_id),
      (r) => r.status === 'failed',
      'the reach run to fail',
    );
    expect(reached.error).toContain(`no workflow.def.v1 named "${victim}" in workspace ${b.workspace}`);
    const bulked = await runOf(
      b,
      String(bulk.body.run_id),
      (r) => r.status === 'failed',
      'the bulk run to fail',
    );
    expect(bulked.error).toMatch(/over the 350 KB a run can hold/);
    expect((await b.call('POST', `/runs/${String(bulk.body.run_id)}/cancel`)).status).toBe(409);

    const gatedId = String(gated.body.run_id);
    await runOf(b, gatedId, (r) => r.status === 'waiting', 'the gated run to wait');
    expect((await b.call('POST', `/runs/${gatedId}/approve`, {})).status).toBe(202);
    await runOf(b, gatedId, (r) => r.status === 'succeeded', 'the gated run to succeed');
    expect((await b.call('POST', `/runs/${gatedId}/retry`, { from_step: 'prepare' })).status).toBe(202);
    await runOf(
      b,
      gatedId,
      (r) => r.status === 'waiting' && (r.steps as Record<string, Json>).ok?.attempts === 2,
      'the retried run to wait for its checkpoint',
    );
    expect((await b.call('POST', `/runs/${gatedId}/approve`, {})).status).toBe(202);
    await runOf(b, gatedId, (r) => r.status === 'succeeded' && r.completions === 2, 'the retried run to end');

    expect(await workspaceItems(a.workspace)).toEqual(before);
    const own = await a.call('POST', '/runs', { workflow: victim, input: {} });
    const done = await runOf(a, String(own.body.run_id), (r) => r.status === 'succeeded', "team-a's run");
    expect(done.output).toEqual({ hi: 'a' });
  });
});
