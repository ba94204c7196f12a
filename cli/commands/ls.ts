/** `crumbs ls`: list breadcrumbs newest first, by schema, tag, or both; one page or, with `--all`, every page. */
import type { ContextView, ListQuery, Page } from '#shared/client/crumbs-client.ts';
import { type Command, noPositionals, optInt, optString, printJson } from '../args.ts';
import { breadcrumbTable } from './views.ts';

export const lsCommand: Command = {
  name: 'ls',
  summary: 'list breadcrumbs (newest first)',
  usage: `Usage: crumbs ls [--schema S] [--tag T] [--limit N] [--cursor C] [--all] [--full]

Lists breadcrumbs newest first: id, schema, title, tags, version, updated. A page is full unless the listing
ends, or stops at its read bound (500 index entries, say of expired breadcrumbs): then it says so, and the
"more:" line goes on from where it stopped.
Give --schema, --tag, or both (the API lists by schema and/or tag, never a whole workspace).
With --json each item is the context view (llm_hints applied), as \`crumbs get\` shows; --full lists the stored
records (every field, the context as stored), as \`crumbs get --full\` does.

Flags:
  --schema S     only this schema name
  --tag T        only breadcrumbs with this tag
  --limit N      page size (the API's default when absent)
  --cursor C     continue from a previous page's cursor
  --all          follow cursors and list every page
  --full         list stored records instead of context views`,
  options: {
    schema: { type: 'string' },
    tag: { type: 'string' },
    limit: { type: 'string' },
    cursor: { type: 'string' },
    all: { type: 'boolean' },
    full: { type: 'boolean' },
  },
  async run(ctx) {
    noPositionals(ctx);
    const query: ListQuery = {
      ...(ctx.values.full === true ? { view: 'full' as const } : {}),
      ...optional('schema_name', optString(ctx.values, 'schema')),
      ...optional('tag', optString(ctx.values, 'tag')),
      ...optional('limit', optInt(ctx.values, 'limit')),
      ...optional('cursor', optString(ctx.values, 'cursor')),
    };
    const client = ctx.client();
    let items: ContextView[];
    let nextCursor: string | null;
    let readBound: Page<ContextView>['read_bound'];
    if (ctx.values.all === true) {
      items = [];
      for await (const page of client.listAll(query)) items.push(...page);
      nextCursor = null;
    } else {
      const page = await client.list(query);
      items = page.items;
      nextCursor = page.next_cursor;
      readBound = page.read_bound;
    }

    if (ctx.global.json) {
      printJson(ctx.io, {
        items,
        next_cursor: nextCursor,
        ...(readBound !== undefined ? { read_bound: readBound } : {}),
      });
      return 0;
    }
    if (items.length === 0) ctx.io.stdout(nextCursor ? 'no breadcrumbs on this page\n' : 'no breadcrumbs\n');
    else ctx.io.stdout(`${breadcrumbTable(items)}\n`);
    if (readBound !== undefined) {
      // The page is short because the listing stopped reading, not because nothing more matches.
      ctx.io.stdout(
        `\nthe listing stopped after reading ${readBound.entries_read} index entries (its read bound) before the page ` +
          'was full: expired or non-matching entries were skipped; older ones may follow\n',
      );
    }
    if (nextCursor) {
      ctx.io.stdout(
        `\nmore: crumbs ls ${nextPageArgs(ctx.values, nextCursor)}   (or --all for every page)\n`,
      );
    }
    return 0;
  },
};

function optional<K extends string, V>(key: K, value: V | undefined): Partial<Record<K, V>> {
  return value === undefined ? {} : ({ [key]: value } as Record<K, V>);
}

/** The flags that fetch the next page: the same filters plus the cursor. */
function nextPageArgs(values: Record<string, unknown>, cursor: string): string {
  const args: string[] = [];
  for (const flag of ['schema', 'tag', 'limit'] as const) {
    const value = values[flag];
    if (typeof value === 'string') args.push(`--${flag} ${shellQuote(value)}`);
  }
  args.push(`--cursor ${shellQuote(cursor)}`);
  return args.join(' ');
}

function shellQuote(value: string): string {
  return /^[A-Za-z0-9._:=+/@-]+$/.test(value) ? value : `'${value.replaceAll("'", `'\\''`)}'`;
}
