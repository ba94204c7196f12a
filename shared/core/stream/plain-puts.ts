/**
 * Plain puts: breadcrumbs a person writes straight into the table (`aws dynamodb put-item`, the console, their own
 * SDK code). The documented item needs only `id`, `workspace`, `schema_name` and `context`; `title`, `tags`,
 * `llm_hints`, `expires_at` and `created_by` are optional. The stream consumer recognises such items and adopts
 * them through the store, which turns them into proper breadcrumbs (version, checksum, history, index entries);
 * that write is the change that is published and routed.
 *
 * Whoever can write the table is a person: an adopted plain put's writer is a `user:` principal. `system:`,
 * `agent:`, `tool:` (any other kind) name crumbs' own writers, which rules, executors and the dashboard believe, so
 * such a `created_by` is not taken: the writer becomes `user:plain-put` and the record keeps what the item claimed
 * in `claimed_by`. A console edit of a record crumbs wrote leaves its `created_by` in place; it is treated alike.
 */

import { createHash } from 'node:crypto';
import {
  BREADCRUMB_ID_PATTERN,
  CreateBreadcrumbSchema,
  canonicalJson,
  PLAIN_PUT_PRINCIPAL,
  PrincipalSchema,
  toEpochSeconds,
  toFieldIssues,
  WorkspaceSchema,
} from '#shared/domain/breadcrumb.ts';
import type { FieldIssue } from '#shared/domain/errors.ts';
import type { PlainPut } from '#shared/domain/plain-put.ts';
import { PEOPLE_ONLY_SCHEMAS } from '#shared/domain/protocol.ts';
import * as z from '#shared/domain/zod.ts';

type Item = Record<string, unknown>;

/** The attributes a person writes; everything else on an item is crumbs' bookkeeping. */
const USER_ATTRIBUTES = [
  'schema_name',
  'title',
  'tags',
  'context',
  'llm_hints',
  'expires_at',
  'created_by',
] as const;

export { PLAIN_PUT_PRINCIPAL };

/** Only people write the table directly; every other kind of principal is one of crumbs' own writers. */
function isPersonPrincipal(principal: string): boolean {
  return principal.startsWith('user:');
}

export type PlainPutClassification =
  | { kind: 'not-plain' }
  | { kind: 'already-rejected' }
  | { kind: 'adopt'; input: PlainPut; hash: string }
  | { kind: 'reject'; errors: FieldIssue[]; hash: string };

/**
 * Decides whether a stream image is a plain put to adopt. `newImage` is the item after the write, `oldImage`
 * before it. Items crumbs wrote itself carry `kind` and a fresh `write_id`; a plain put has no `kind`, and an edit
 * of an adopted item in the console keeps the old `write_id`.
 */
export function classifyPlainPut(newImage: Item, oldImage: Item | undefined): PlainPutClassification {
  const id = newImage.id;
  if (typeof id !== 'string' || id.includes('#')) return { kind: 'not-plain' };
  if ('kind' in newImage) {
    const consoleEdit =
      newImage.kind === 'breadcrumb' && oldImage !== undefined && oldImage.write_id === newImage.write_id;
    if (!consoleEdit || userContentHash(newImage) === userContentHash(oldImage)) return { kind: 'not-plain' };
  }
  const hash = userContentHash(newImage);
  if (newImage.ingest_hash === hash) return { kind: 'already-rejected' };
  const parsed = parsePlainPut(newImage);
  return parsed.ok
    ? { kind: 'adopt', input: parsed.value, hash }
    : { kind: 'reject', errors: parsed.errors, hash };
}

const PlainPutSchema = z.object({
  id: z
    .string()
    .check(
      z.regex(BREADCRUMB_ID_PATTERN, 'expected 1-128 characters: letters, digits, ".", "_", ":" or "-"'),
    ),
  workspace: WorkspaceSchema,
  created_by: z.optional(PrincipalSchema),
});

export function parsePlainPut(
  item: Item,
): { ok: true; value: PlainPut } | { ok: false; errors: FieldIssue[] } {
  const errors: FieldIssue[] = [];
  const head = PlainPutSchema.safeParse(item);
  if (!head.success) errors.push(...toFieldIssues(head.error));

  let context: unknown = item.context;
  if (typeof context === 'string') {
    try {
      context = JSON.parse(context);
    } catch {
      errors.push({ path: 'context', message: 'expected a map, or a string holding a JSON object' });
    }
  }
  const body = CreateBreadcrumbSchema.safeParse({
    schema_name: item.schema_name,
    ...(item.title !== undefined ? { title: item.title } : {}),
    ...(item.tags !== undefined ? { tags: item.tags instanceof Set ? [...item.tags] : item.tags } : {}),
    context,
    ...(item.llm_hints !== undefined ? { llm_hints: item.llm_hints } : {}),
    ...(item.expires_at !== undefined ? { expires_at: item.expires_at } : {}),
  });
  if (!body.success) errors.push(...toFieldIssues(body.error));
  if (body.success && PEOPLE_ONLY_SCHEMAS.has(body.data.schema_name)) {
    errors.push({
      path: 'schema_name',
      message: `${body.data.schema_name} is written by a person through the API or CLI (as themselves), never by a plain put`,
    });
  }
  if (!head.success || !body.success || errors.length > 0) return { ok: false, errors };

  return {
    ok: true,
    value: {
      id: head.data.id,
      workspace: head.data.workspace,
      ...writerOf(head.data.created_by),
      schema_name: body.data.schema_name,
      title: body.data.title,
      tags: body.data.tags,
      context: body.data.context,
      ...(body.data.llm_hints !== undefined ? { llm_hints: body.data.llm_hints } : {}),
      ...(body.data.expires_at !== undefined ? { expires_at: toEpochSeconds(body.data.expires_at) } : {}),
    },
  };
}

function userContentHash(item: Item | undefined): string {
  const content: Record<string, unknown> = {};
  for (const name of USER_ATTRIBUTES) {
    const value = item?.[name];
    if (value !== undefined) content[name] = value instanceof Set ? [...value].sort() : value;
  }
  return createHash('sha256').update(canonicalJson(content)).digest('hex');
}

function writerOf(claimed: string | undefined): { created_by: string; claimed_by?: string } {
  if (claimed === undefined) return { created_by: PLAIN_PUT_PRINCIPAL };
  return isPersonPrincipal(claimed)
    ? { created_by: claimed }
    : { created_by: PLAIN_PUT_PRINCIPAL, claimed_by: claimed };
}

export type { PlainPut };
