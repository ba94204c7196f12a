/**
 * The suite's ground: team-b's scoped token cannot read or write team-a's workspace through the API, and what
 * team-b writes in its own workspace stays there.
 */
import { describe, expect, it } from 'vitest';
import { adversary, client, teamA, teamB, workspaceItems } from './support.ts';

describe('two teams with scoped tokens', () => {
  it("refuses team-b on team-a's workspace and leaves team-a unchanged", async () => {
    const a = teamA();
    const put = await a.call('PUT', '/breadcrumbs/secret-plan', {
      schema_name: 'note.text.v1',
      context: { text: 'team-a only' },
    });
    expect(put.status).toBeLessThan(300);
    const before = await workspaceItems(a.workspace);
    const intruder = client(a.workspace, adversary().teamB.token);
    expect((await intruder.call('GET', '/breadcrumbs/secret-plan')).status).toBe(403);
    expect(
      (await intruder.call('PUT', '/breadcrumbs/secret-plan', { schema_name: 'note.text.v1', context: {} }))
        .status,
    ).toBe(403);
    const b = teamB();
    expect((await b.call('GET', '/breadcrumbs/secret-plan')).status).toBe(404);
    expect(await workspaceItems(a.workspace)).toEqual(before);
  });
});
