/**
 * Team-b writes definitions until it is past its quotas (this stack: `ADVERSARIAL_QUOTAS`, set in global-setup.ts),
 * in a workspace of its own so other files' team-b definitions keep their room. Every definition past a quota is
 * `invalid`, naming the quota and the operator's setting; team-b holds no more rules than its quota; and team-a,
 * whose capacity team-b shares, still writes a definition that becomes `active`, its data otherwise unchanged.
 */
import { describe, expect, it } from 'vitest';
import { ADVERSARIAL_QUOTAS, TEAM_B_QUOTA_WORKSPACE } from './global-setup.ts';
import { adversary, client, eventually, teamA, workspaceItems } from './support.ts';

type Status = { state: string; errors: { path: string; message: string }[] };

/** The statuses of a workspace's definitions, once `count` of them are there. */
async function statuses(c: ReturnType<typeof client>, count: number): Promise<Status[]> {
  return eventually(
    async () => {
      const all: Status[] = [];
      let cursor: string | undefined;
      do {
        const page = await c.call(
          'GET',
          `/breadcrumbs?schema_name=definition.status.v1&view=full&limit=100${cursor ? `&cursor=${cursor}` : ''}`,
        );
        all.push(...((page.body.items ?? []) as { context: Status }[]).map((i) => i.context));
        cursor = (page.body.next_cursor as string | null | undefined) ?? undefined;
      } while (cursor);
      return all.length === count ? all : undefined;
    },
    `${count} statuses in ${c.workspace}`,
    120_000,
  );
}

describe('per-workspace quotas on the shared bus pool', () => {
  it("keeps team-b within its quotas, naming them, while team-a's new definition becomes active", async () => {
    const before = await workspaceItems(teamA().workspace);
    // Team-b's own token, in its second workspace.
    const b = client(TEAM_B_QUOTA_WORKSPACE, adversary().teamB.token);
    const { definitions, rules } = ADVERSARIAL_QUOTAS;
    const extra = 5;
    const names = Array.from({ length: definitions + extra }, (_, i) => `flood-${i}`);
    // Written at once, as an attacker would: concurrent writes must not squeeze past the quota either.
    const written = await Promise.all(
      names.map((n) =>
        b.call('PUT', `/breadcrumbs/tool-${n}`, {
          schema_name: 'tool.def.v1',
          title: n,
          context: { name: n, implementation: 'echo' },
        }),
      ),
    );
    expect(written.every((w) => w.status < 300)).toBe(true);
    const all = await statuses(b, names.length);
    const active = all.filter((s) => s.state === 'active');
    const overRules = all.filter((s) => s.errors[0]?.path === 'quota.rules');
    const overDefinitions = all.filter((s) => s.errors[0]?.path === 'quota.definitions');
    expect(active).toHaveLength(rules);
    expect(overRules).toHaveLength(definitions - rules);
    expect(overDefinitions).toHaveLength(extra);
    for (const s of overRules) {
      expect(s.state).toBe('invalid');
      expect(s.errors[0]?.message).toContain(
        `is at its quota of ${rules} rules on the event bus pool (its own, in CRUMBS_WORKSPACE_QUOTAS`,
      );
    }
    for (const s of overDefinitions) {
      expect(s.state).toBe('invalid');
      expect(s.errors[0]?.message).toContain(
        `is at its quota of ${definitions} definitions (its own, in CRUMBS_WORKSPACE_QUOTAS`,
      );
    }

    // Team-a shares the pool, and still gets a rule.
    const a = teamA();
    const put = await a.call('PUT', '/breadcrumbs/tool-after-flood', {
      schema_name: 'tool.def.v1',
      title: 'after the flood',
      context: { name: 'after-flood', implementation: 'echo' },
    });
    expect(put.status).toBeLessThan(300);
    const mine = await eventually(async () => {
      const page = await a.call(
        'GET',
        '/breadcrumbs?schema_name=definition.status.v1&tag=definition:tool-after-flood&view=full',
      );
      return ((page.body.items ?? []) as { context: Status }[])[0]?.context;
    }, "team-a's status");
    expect(mine).toMatchObject({ state: 'active', errors: [] });
    // Every item team-a had is still there, unchanged (its quota counters aside, which now count its new one).
    const after = await workspaceItems(a.workspace);
    for (const item of before.filter((i) => !String(i.id).startsWith('#quota#'))) {
      expect(after).toContainEqual(item);
    }
  });
});
