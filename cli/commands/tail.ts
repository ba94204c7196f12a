/**
 * `crumbs tail [--schema S] [--tag T]`: prints breadcrumbs as they are written. It polls the listing (newest
 * first), remembers the version it printed for each id, and prints what is new or changed — oldest first, so the
 * output reads in write order. Ctrl-C stops it.
 */
import type { Breadcrumb } from '../api-client.ts';
import {
  type Command,
  listenToProcessSignals,
  noPositionals,
  optInt,
  optString,
  UsageError,
} from '../args.ts';

const DEFAULT_INTERVAL_MS = 1000;
const PAGE = 50;

export const tailCommand: Command = {
  name: 'tail',
  summary: 'print breadcrumbs as they are written (Ctrl-C stops)',
  usage: `Usage: crumbs tail [--schema S] [--tag T] [--interval MS] [--backlog N] [--once]

Prints breadcrumbs as they are created or updated: time, id, version, schema, title, tags (with --json, one JSON
record a line). Give --schema, --tag, or both (the API lists by schema and/or tag).

Flags:
  --schema S       only this schema name
  --tag T          only breadcrumbs with this tag
  --interval MS    how often to poll (default ${DEFAULT_INTERVAL_MS})
  --backlog N      how many existing breadcrumbs to print first (default 10, 0 for none)
  --once           print the backlog and stop`,
  options: {
    schema: { type: 'string' },
    tag: { type: 'string' },
    interval: { type: 'string' },
    backlog: { type: 'string' },
    once: { type: 'boolean' },
  },
  async run(ctx) {
    noPositionals(ctx);
    const schema = optString(ctx.values, 'schema');
    const tag = optString(ctx.values, 'tag');
    if (schema === undefined && tag === undefined) {
      throw new UsageError('give --schema, --tag, or both (the API never lists a whole workspace)', true);
    }
    const interval = optInt(ctx.values, 'interval', { min: 100, max: 60_000 }) ?? DEFAULT_INTERVAL_MS;
    const backlog = optInt(ctx.values, 'backlog', { min: 0, max: PAGE }) ?? 10;
    const client = ctx.client();
    const query = {
      ...(schema !== undefined ? { schema_name: schema } : {}),
      ...(tag !== undefined ? { tag } : {}),
    };

    let stopped = false;
    let wake: (() => void) | undefined;
    const subscribe = ctx.io.onSignal ?? listenToProcessSignals;
    const unsubscribe = subscribe(() => {
      stopped = true;
      wake?.();
    });
    const seen = new Map<string, number>();
    const print = (b: Breadcrumb) => {
      if (ctx.global.json) ctx.io.stdout(`${JSON.stringify(b)}\n`);
      else ctx.io.stdout(`${line(b)}\n`);
    };
    try {
      const first = await client.list({ ...query, limit: PAGE, view: 'full' });
      for (const b of first.items) seen.set(b.id, b.version);
      for (const b of first.items.slice(0, backlog).reverse()) print(b);
      if (ctx.values.once === true) return 0;
      while (!stopped) {
        await new Promise<void>((resolve) => {
          wake = resolve;
          setTimeout(resolve, interval);
        });
        if (stopped) break;
        const page = await client.list({ ...query, limit: PAGE, view: 'full' });
        const fresh = page.items.filter((b) => (seen.get(b.id) ?? 0) < b.version);
        for (const b of fresh.reverse()) {
          seen.set(b.id, b.version);
          print(b);
        }
      }
      return 0;
    } finally {
      unsubscribe();
    }
  },
};

function line(b: Breadcrumb): string {
  const tags = b.tags.length > 0 ? `  [${b.tags.join(', ')}]` : '';
  return `${b.updated_at}  ${b.id}  v${b.version}  ${b.schema_name}  ${b.title}${tags}`;
}
