/** `crumbs history <id>`: the versions of one breadcrumb, newest first. */
import type { BreadcrumbVersion } from '#shared/client/crumbs-client.ts';
import { type Command, onePositional, optInt, optString, printJson } from '../args.ts';
import { formatTable } from '../format.ts';
import { HISTORY_COLUMNS } from './views.ts';

export const historyCommand: Command = {
  name: 'history',
  summary: 'list the versions of a breadcrumb',
  usage: `Usage: crumbs history <id> [--limit N] [--cursor C] [--all]

Lists the versions of a breadcrumb newest first: version, who, when, title, checksum prefix.
Use \`crumbs get <id> --version N\` to see one of them in full.

Flags:
  --limit N      page size (the API's default when absent)
  --cursor C     continue from a previous page's cursor
  --all          follow cursors and list every version`,
  options: {
    limit: { type: 'string' },
    cursor: { type: 'string' },
    all: { type: 'boolean' },
  },
  async run(ctx) {
    const id = onePositional(ctx, 'breadcrumb id');
    const limit = optInt(ctx.values, 'limit');
    const cursor = optString(ctx.values, 'cursor');
    const query = { ...(limit === undefined ? {} : { limit }), ...(cursor === undefined ? {} : { cursor }) };
    const client = ctx.client();
    let items: BreadcrumbVersion[];
    let nextCursor: string | null;
    if (ctx.values.all === true) {
      items = [];
      for await (const page of client.historyAll(id, query)) items.push(...page);
      nextCursor = null;
    } else {
      const page = await client.history(id, query);
      items = page.items;
      nextCursor = page.next_cursor ?? null;
    }
    if (ctx.global.json) {
      printJson(ctx.io, { items, next_cursor: nextCursor });
      return 0;
    }
    ctx.io.stdout(`${formatTable(HISTORY_COLUMNS, items)}\n`);
    if (nextCursor) ctx.io.stdout(`\nmore: crumbs history ${id} --cursor ${nextCursor}   (or --all)\n`);
    return 0;
  },
};
