/**
 * `crumbs rules`: every definition of the workspace with its state, rule and pattern (from the rule manager's
 * `definition.status.v1` breadcrumbs). `crumbs rules sync`: asks the rule manager to reconcile the workspace's
 * rules with its definitions (create missing, fix drifted, delete orphans) and prints its report.
 */

import type { Breadcrumb, CrumbsClient } from '#shared/client/crumbs-client.ts';
import { STATUS_SCHEMA } from '#shared/domain/protocol.ts';
import { DEFINITION_SCHEMAS, RULES_SYNC_SCHEMA } from '#shared/topology.ts';
import { type Command, optInt, printJson, UsageError } from '../args.ts';
import { formatTable } from '../format.ts';

export const rulesCommand: Command = {
  name: 'rules',
  summary: 'list definitions with their rule state; `rules sync` reconciles rules with definitions',
  usage: `Usage: crumbs rules [sync] [--wait-seconds N]

  crumbs rules         definitions of the workspace: id, schema, version, state, rule name, the event bus
                       holding the rule (definitions are spread over a pool of buses), pattern
  crumbs rules sync    reconcile the workspace's EventBridge rules with its definitions: create missing rules,
                       fix drifted ones, delete orphans; prints the rule manager's report

Flags:
  --wait-seconds N     how long \`rules sync\` waits for the report (default 30)`,
  options: { 'wait-seconds': { type: 'string' } },
  async run(ctx) {
    const [sub, extra] = ctx.positionals;
    if (extra !== undefined || (sub !== undefined && sub !== 'sync'))
      throw new UsageError(`unexpected argument ${JSON.stringify(extra ?? sub)}`, true);
    const client = ctx.client();
    if (sub === 'sync') return sync(ctx, client, optInt(ctx.values, 'wait-seconds', { min: 1 }) ?? 30);

    const definitions: Breadcrumb[] = [];
    for (const schema of Object.keys(DEFINITION_SCHEMAS)) {
      for await (const page of client.listAll({ schema_name: schema, limit: 100, view: 'full' }))
        definitions.push(...page);
    }
    const statuses = new Map<string, Record<string, unknown>>();
    for await (const page of client.listAll({ schema_name: STATUS_SCHEMA, limit: 100, view: 'full' })) {
      for (const s of page) statuses.set(String(s.context.definition_id), s.context);
    }
    const rows = definitions.map((d) => {
      const s = statuses.get(d.id);
      const current = s && s.definition_version === d.version;
      return {
        id: d.id,
        schema_name: d.schema_name,
        version: d.version,
        state: s
          ? current
            ? String(s.state)
            : `${String(s.state)} (v${String(s.definition_version)}, updating)`
          : 'pending',
        rule_name: (s?.rule_name as string | null | undefined) ?? null,
        event_bus: s?.rule_name ? ((s.event_bus as string | null | undefined) ?? null) : null,
        pattern: s?.pattern ?? null,
        errors: (s?.errors as { path: string; message: string }[] | undefined) ?? [],
      };
    });
    if (ctx.global.json) {
      printJson(ctx.io, rows);
      return 0;
    }
    if (rows.length === 0) {
      ctx.io.stdout(`no definitions in workspace ${ctx.global.workspace}\n`);
      return 0;
    }
    ctx.io.stdout(
      formatTable(
        [
          { header: 'id', value: (r: (typeof rows)[number]) => r.id, max: 40 },
          { header: 'schema', value: (r) => r.schema_name },
          { header: 'version', value: (r) => r.version, align: 'right' },
          { header: 'state', value: (r) => r.state },
          { header: 'rule', value: (r) => r.rule_name ?? '', max: 64 },
          { header: 'bus', value: (r) => r.event_bus ?? '' },
          {
            header: 'pattern / errors',
            value: (r) =>
              r.errors.length > 0
                ? r.errors.map((e) => `${e.path}: ${e.message}`).join('; ')
                : JSON.stringify((r.pattern as { detail?: unknown } | null)?.detail ?? r.pattern ?? ''),
            max: 100,
          },
        ],
        rows,
      ),
    );
    ctx.io.stdout('\n');
    return 0;
  },
};

async function sync(
  ctx: Parameters<Command['run']>[0],
  client: CrumbsClient,
  waitSeconds: number,
): Promise<number> {
  const request = await client.create({
    schema_name: RULES_SYNC_SCHEMA,
    title: 'rules sync',
    tags: ['rules-sync'],
    context: { requested_at: new Date().toISOString() },
  });
  const deadline = Date.now() + waitSeconds * 1000;
  for (;;) {
    const page = await client.listFirst({ tag: `sync:${request.id}`, view: 'full' }, 1);
    const result = page.items[0];
    if (result) {
      if (ctx.global.json) printJson(ctx.io, result.context);
      else {
        const c = result.context as Record<string, number>;
        ctx.io.stdout(
          `rules sync of ${ctx.global.workspace}: ${c.definitions} definitions — ${c.created} created, ${c.updated} fixed, ` +
            `${c.unchanged} unchanged, ${c.invalid} invalid, ${c.deleted_orphans} orphan rules deleted\n`,
        );
      }
      return 0;
    }
    if (Date.now() > deadline) {
      ctx.io.stderr(
        `no sync report after ${waitSeconds} s (request ${request.id}): is the rule manager running?\n`,
      );
      return 1;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}
