/**
 * `crumbs update <id>`: change a breadcrumb (PATCH). With `--if-match N` the API applies the change only if the
 * stored version is N (a conditional write), and answers 412 otherwise; nothing changes then.
 */
import type { UpdateBreadcrumbInput } from '#shared/client/crumbs-client.ts';
import {
  type Command,
  expiresAtFlag,
  jsonFlag,
  onePositional,
  optInt,
  optString,
  printJson,
  strings,
  UsageError,
} from '../args.ts';
import { contextFromFlags } from './put.ts';
import { breadcrumbTable } from './views.ts';

export const updateCommand: Command = {
  name: 'update',
  summary: 'change a breadcrumb (optionally only at an expected version)',
  usage: `Usage: crumbs update <id> [--if-match N] [--title T] [--tag t]… [--context JSON | --context-file F]
                     [--llm-hints JSON] [--expires-at ISO]

Changes the given fields and prints the new version. Fields not given stay as they are.

Flags:
  --if-match N         apply only if the current version is N (else fails with 412 and changes nothing)
  --title T            new title
  --tag t              new tags (repeat for several; replaces all tags)
  --clear-tags         remove all tags
  --context JSON       new context, a JSON object (replaces the context)
  --context-file F     new context from a JSON or YAML file ("-" for stdin)
  --llm-hints JSON     new llm_hints ("null" removes them)
  --expires-at ISO     new expiry: ISO-8601 date-time or epoch seconds`,
  options: {
    'if-match': { type: 'string' },
    title: { type: 'string' },
    tag: { type: 'string', multiple: true },
    'clear-tags': { type: 'boolean' },
    context: { type: 'string' },
    'context-file': { type: 'string' },
    'llm-hints': { type: 'string' },
    'expires-at': { type: 'string' },
  },
  async run(ctx) {
    const id = onePositional(ctx, 'breadcrumb id');
    const ifMatch = optInt(ctx.values, 'if-match');
    const patch: Record<string, unknown> = {};
    const title = optString(ctx.values, 'title');
    if (title !== undefined) patch.title = title;
    const tags = strings(ctx.values, 'tag');
    if (ctx.values['clear-tags'] === true) {
      if (tags.length > 0) throw new UsageError('--tag and --clear-tags cannot be used together');
      patch.tags = [];
    } else if (tags.length > 0) patch.tags = tags;
    const context = await contextFromFlags(ctx, { stdinFallback: false });
    if (context !== undefined) patch.context = context;
    const hints = jsonFlag(ctx.values, 'llm-hints');
    if (hints !== undefined) patch.llm_hints = hints;
    const expiresAt = expiresAtFlag(ctx.values);
    if (expiresAt !== undefined) patch.expires_at = expiresAt;
    if (Object.keys(patch).length === 0) {
      throw new UsageError(
        'nothing to update: give at least one of --title, --tag, --context, --llm-hints, …',
        true,
      );
    }

    // The API validates the fields and answers with field paths.
    const updated = await ctx
      .client()
      .update(id, patch as UpdateBreadcrumbInput, ifMatch === undefined ? {} : { ifMatch });
    if (ctx.global.json) printJson(ctx.io, updated);
    else ctx.io.stdout(`${breadcrumbTable([updated])}\n`);
    return 0;
  },
};
