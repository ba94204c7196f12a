/**
 * `crumbs put`: create a breadcrumb (POST …/breadcrumbs).
 *
 * The breadcrumb comes from flags, from a whole document (`-f file.json|yaml`, `-f -` for stdin), or both:
 * flags given beside `-f` override the document's fields (`--tag` replaces its tags). Without `-f`, the
 * context comes from `--context`, `--context-file`, or stdin when something is piped in.
 */

import type { CreateBreadcrumbInput } from '#shared/client/crumbs-client.ts';
import { definitionWarnings } from '#shared/domain/unknown-fields.ts';
import {
  type Command,
  type CommandContext,
  expiresAtFlag,
  InputError,
  isPlainObject,
  jsonFlag,
  noPositionals,
  optString,
  parseDocument,
  printJson,
  printWarnings,
  readDocument,
  readStdinOf,
  strings,
  UsageError,
} from '../args.ts';
import { attachFiles, withAttachments } from '../rooms/attachments.ts';
import { breadcrumbTable } from './views.ts';

export const putCommand: Command = {
  name: 'put',
  summary: 'create a breadcrumb',
  usage: `Usage: crumbs put --schema S [--title T] [--tag t]… (--context JSON | --context-file F | stdin)
                  [--llm-hints JSON] [--expires-at ISO] [--idempotency-key K]
       crumbs put -f breadcrumb.json|yaml [flags that override the file]

Creates a breadcrumb and prints its id and version.

Flags:
  --schema S             schema name, e.g. user.message.v1
  --title T              title
  --tag t                a tag (repeat for several)
  --context JSON         the context, a JSON object
  --context-file F       read the context from a JSON or YAML file ("-" for stdin)
  --llm-hints JSON       llm_hints for the context view
  --expires-at ISO       expiry: ISO-8601 date-time or epoch seconds
  --idempotency-key K    a retry with the same key returns the first breadcrumb instead of a second one
  --attach F             store file F as an attachment and add it to the context's "attachments" (repeatable;
                         up to 4 MB in the request, larger through a presigned upload)
  -f, --file F           a whole breadcrumb {schema_name, title, tags, context, llm_hints} ("-" for stdin)`,
  options: {
    schema: { type: 'string' },
    title: { type: 'string' },
    tag: { type: 'string', multiple: true },
    context: { type: 'string' },
    'context-file': { type: 'string' },
    'llm-hints': { type: 'string' },
    'expires-at': { type: 'string' },
    'idempotency-key': { type: 'string' },
    file: { type: 'string', short: 'f' },
    attach: { type: 'string', multiple: true },
  },
  async run(ctx) {
    noPositionals(ctx);
    const attach = strings(ctx.values, 'attach');
    let input = await buildInput(ctx, attach.length > 0);
    if (attach.length > 0) {
      const refs = await attachFiles(ctx.client(), attach);
      input = { ...input, context: withAttachments(input.context as Record<string, unknown>, refs) };
    }
    const idempotencyKey = optString(ctx.values, 'idempotency-key');
    const created = await ctx.client().create(input, idempotencyKey === undefined ? {} : { idempotencyKey });
    if (ctx.global.json) printJson(ctx.io, created);
    else ctx.io.stdout(`${breadcrumbTable([created])}\n`);
    printWarnings(ctx.io, created.id, definitionWarnings(created.schema_name, created.context));
    return 0;
  },
};

async function buildInput(ctx: CommandContext, attaching: boolean): Promise<CreateBreadcrumbInput> {
  const { values, io } = ctx;
  const file = optString(values, 'file');
  let base: Record<string, unknown> = {};
  if (file !== undefined) {
    const doc = await readDocument(file, io, '--file');
    if (!isPlainObject(doc))
      throw new InputError('--file: expected a breadcrumb object {schema_name, context, …}');
    base = doc;
  }
  const fields: Record<string, unknown> = { ...base };
  const schema = optString(values, 'schema');
  if (schema !== undefined) fields.schema_name = schema;
  const title = optString(values, 'title');
  if (title !== undefined) fields.title = title;
  const tags = strings(values, 'tag');
  if (tags.length > 0) fields.tags = tags;
  const hints = jsonFlag(values, 'llm-hints');
  if (hints !== undefined) fields.llm_hints = hints;
  const expiresAt = expiresAtFlag(values);
  if (expiresAt !== undefined) fields.expires_at = expiresAt;

  const context = await contextFromFlags(ctx, { stdinFallback: file === undefined && !attaching });
  if (context !== undefined) fields.context = context;
  // Files alone make a context: `crumbs put --schema user.message.v1 --attach shot.png`.
  if (fields.context === undefined && attaching) fields.context = {};

  if (typeof fields.schema_name !== 'string')
    throw new UsageError('missing --schema (or schema_name in --file)', true);
  if (fields.context === undefined) {
    throw new UsageError(
      'missing context: pass --context JSON, --context-file F, -f F, or pipe JSON on stdin',
      true,
    );
  }
  // The API validates every field and answers with field paths; here only the shape needed to send it.
  return fields as unknown as CreateBreadcrumbInput;
}

/**
 * The context from `--context` or `--context-file` (mutually exclusive), or from stdin when allowed and piped.
 * Shared with `update`, which never reads stdin implicitly.
 */
export async function contextFromFlags(
  ctx: CommandContext,
  { stdinFallback }: { stdinFallback: boolean },
): Promise<Record<string, unknown> | undefined> {
  const inline = optString(ctx.values, 'context');
  const file = optString(ctx.values, 'context-file');
  if (inline !== undefined && file !== undefined) {
    throw new UsageError('--context and --context-file cannot be used together');
  }
  let context: unknown;
  if (inline !== undefined) context = jsonFlag(ctx.values, 'context');
  else if (file !== undefined) context = await readDocument(file, ctx.io, '--context-file');
  else if (stdinFallback) {
    const piped = await readStdinOf(ctx.io);
    if (piped === undefined || piped.trim() === '') return undefined;
    context = parseDocument(piped, 'stdin', false, 'context');
  } else return undefined;
  if (!isPlainObject(context)) throw new InputError('context: expected a JSON object');
  return context;
}
