/**
 * Version pins across workspaces: team-b pins (and forges requests naming) a version that only team-a's tool of
 * the same name has. The pin makes team-b's workflow `invalid`, the forged request never runs team-a's version
 * (team-b's own definition has no such version, so nothing answers it), and team-a's workspace is unchanged.
 */
import { describe, expect, it } from 'vitest';
import { defineActive, eventually, teamA, teamB, workspaceItems } from './support.ts';

type Json = Record<string, unknown>;

describe('a version pin', () => {
  it("never reaches another workspace's version of a definition", async () => {
    const a = teamA();
    const b = teamB();
    const tool = (implementation: string) => ({ name: 'pinned-calc', implementation });
    await defineActive(a, 'tool-pinned-calc', 'tool.def.v1', tool('echo'));
    await defineActive(a, 'tool-pinned-calc', 'tool.def.v1', tool('calculator'));
    await defineActive(b, 'tool-pinned-calc', 'tool.def.v1', tool('echo'));
    const before = await workspaceItems(a.workspace);

    // A pin to a's version 2 in b's workflow: invalid, naming the step.
    const put = await b.call('PUT', '/breadcrumbs/wf-pinned-reach', {
      schema_name: 'workflow.def.v1',
      context: { workflow_id: 'pinned-reach', steps: [{ id: 'a', tool: 'pinned-calc@2', input: {} }] },
    });
    expect(put.status).toBeLessThan(300);
    const status = await eventually(async () => {
      const list = await b.call(
        'GET',
        `/breadcrumbs?schema_name=definition.status.v1&tag=${encodeURIComponent('definition:wf-pinned-reach')}&view=full`,
      );
      const context = (list.body.items as { context: Json }[] | undefined)?.[0]?.context;
      return context !== undefined && Number(context.definition_version) >= Number(put.body.version)
        ? context
        : undefined;
    }, 'the pinned workflow judged');
    expect(status.state).toBe('invalid');
    expect(status.errors).toContainEqual({
      path: 'steps[0].tool',
      message: '"pinned-calc" has no version 2 (its latest is 1)',
    });

    // A request forged to name version 2, then an honest one naming version 1.
    const request = (requestId: string, version: number) =>
      b.call('POST', '/breadcrumbs', {
        schema_name: 'tool.request.v1',
        title: requestId,
        context: {
          tool: 'pinned-calc',
          input: { expression: '1+1' },
          requestId,
          requestedBy: 'user:b',
          definition_version: version,
        },
      });
    const suffix = Date.now().toString(36);
    expect((await request(`forged-${suffix}`, 2)).status).toBe(201);
    expect((await request(`honest-${suffix}`, 1)).status).toBe(201);
    const answers = async () => {
      const list = await b.call('GET', '/breadcrumbs?schema_name=tool.response.v1&limit=100&view=full');
      return (list.body.items as { context: Json }[] | undefined)?.map((i) => i.context) ?? [];
    };
    const honest = await eventually(
      async () => (await answers()).find((c) => c.request_id === `honest-${suffix}`),
      'the honest request answered',
    );
    // b's version 1 (echo) answered; a's calculator never ran for b.
    expect(honest).toMatchObject({ status: 'success', output: { expression: '1+1' } });
    const all = await answers();
    expect(all.some((c) => JSON.stringify(c.output) === JSON.stringify({ result: 2 }))).toBe(false);
    expect(all.find((c) => c.request_id === `forged-${suffix}`)).toBeUndefined();
    expect(await workspaceItems(a.workspace)).toEqual(before);
  });
});
