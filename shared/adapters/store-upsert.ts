/**
 * Create-or-replace under a caller-chosen id, built on a store's own create / get / update: the one
 * implementation of `BreadcrumbStore.upsert`, shared by every adapter (DynamoDB, in memory). Its callers are the
 * API's `PUT …/breadcrumbs/{id}` (`crumbs apply`), the executor pipeline's `upsertId` outputs (context builder,
 * agent conversations) and the rule manager's status breadcrumbs.
 *
 *   read the id → missing: create it (a concurrent create wins: read again; a deleted breadcrumb's id: its next
 *                 version, `revive`)
 *               → stored equals the input (title, tags in order, context, llm_hints, expires_at): nothing written
 *                 (an input without expires_at, of a schema with a TTL default, matches any stored expiry)
 *               → different: update on the version read (If-Match); a concurrent writer: read again and compare
 *
 * Writing nothing for an equal input matters: no new version and no change event, so re-applying a file or
 * re-executing a trigger after a crash triggers nobody. With `expectedVersion` (the API's If-Match) nothing is
 * retried: a different stored version is the caller's conflict to resolve. It sits with the adapters, not in
 * `domain/record-rules.ts`: it drives a store's IO through the port, which the domain floor cannot import.
 */
import {
  type Breadcrumb,
  type CreateBreadcrumb,
  canonicalJson,
  toEpochSeconds,
} from '#shared/domain/breadcrumb.ts';
import {
  NotFoundError,
  RetriableError,
  ValidationError,
  VersionConflictError,
} from '#shared/domain/errors.ts';
import type { BreadcrumbStore, UpsertOptions, UpsertResult } from '#shared/ports/breadcrumb-store.ts';

const MAX_ATTEMPTS = 8;

type Primitives = Pick<BreadcrumbStore, 'create' | 'get' | 'update'> & {
  /**
   * The expiry a breadcrumb of the schema gets when written now without `expires_at` (its `schema.def.v1`'s
   * `ttl_seconds`), for stores that keep such defaults.
   */
  defaultExpiry?(workspace: string, schemaName: string, now: Date): Promise<number | undefined>;
  /**
   * Writes `input` as the next version of a deleted breadcrumb, over what its delete left of the id (a store that
   * keeps deleted ids taken); undefined when the id holds no deleted breadcrumb any more (read again).
   */
  revive?(
    workspace: string,
    id: string,
    input: CreateBreadcrumb,
    options: { principal: string; causation?: UpsertOptions['causation'] },
  ): Promise<Breadcrumb | undefined>;
};

export async function upsertVia(
  store: Primitives,
  workspace: string,
  id: string,
  input: CreateBreadcrumb,
  options: UpsertOptions,
): Promise<UpsertResult> {
  const { principal, causation, expectedVersion, causeTags } = options;
  const createOptions = {
    principal,
    id,
    ...(causation !== undefined ? { causation } : {}),
    ...(causeTags !== undefined ? { causeTags } : {}),
  };
  if (options.createOnly) {
    const created = await store.create(workspace, input, createOptions);
    if (created.replayed) throw new VersionConflictError(0, created.breadcrumb.version);
    return { breadcrumb: created.breadcrumb, outcome: 'created' };
  }
  // A replacement without `expires_at` is written as a create would be: with the schema's TTL default when it has
  // one (renewed from now), else with none. Comparing, such an input matches whatever expiry is stored, so
  // re-applying the same content stays a no-op.
  const schemaDefault =
    input.expires_at === undefined
      ? await store.defaultExpiry?.(workspace, input.schema_name, new Date())
      : undefined;
  const replacement = {
    title: input.title,
    tags: input.tags,
    context: input.context,
    llm_hints: input.llm_hints ?? null,
    expires_at: input.expires_at === undefined ? (schemaDefault ?? null) : toEpochSeconds(input.expires_at),
  };
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    let current: Breadcrumb;
    try {
      current = await store.get(workspace, id);
    } catch (error) {
      if (!(error instanceof NotFoundError) || expectedVersion !== undefined) throw error;
      let created: Awaited<ReturnType<Primitives['create']>>;
      try {
        created = await store.create(workspace, input, createOptions);
      } catch (createError) {
        // The id is a deleted breadcrumb's (kept taken): replacing it writes its next version, history intact.
        if (!(createError instanceof NotFoundError) || store.revive === undefined) throw createError;
        const revived = await store.revive(workspace, id, input, {
          principal,
          ...(causation !== undefined ? { causation } : {}),
        });
        if (revived !== undefined) return { breadcrumb: revived, outcome: 'created' };
        continue;
      }
      if (!created.replayed) return { breadcrumb: created.breadcrumb, outcome: 'created' };
      continue; // created concurrently: compare with what the other writer wrote
    }
    if (current.schema_name !== input.schema_name) {
      throw new ValidationError([
        { path: 'schema_name', message: `is ${current.schema_name} for this breadcrumb and cannot change` },
      ]);
    }
    if (expectedVersion !== undefined && expectedVersion !== current.version) {
      throw new VersionConflictError(expectedVersion, current.version);
    }
    if (sameContent(current, replacement, schemaDefault !== undefined))
      return { breadcrumb: current, outcome: 'unchanged' };
    try {
      const updated = await store.update(workspace, id, replacement, {
        principal,
        expectedVersion: current.version,
        ...(causation !== undefined ? { causation } : {}),
        ...(causeTags !== undefined ? { causeTags } : {}),
      });
      return { breadcrumb: updated, outcome: 'updated' };
    } catch (error) {
      if (!(error instanceof VersionConflictError) || expectedVersion !== undefined) throw error;
    }
  }
  throw new RetriableError(`breadcrumb ${id} kept changing while it was being written`);
}

function sameContent(
  current: Breadcrumb,
  replacement: { title: string; tags: string[]; context: unknown; llm_hints: unknown; expires_at: unknown },
  anyExpiry: boolean,
): boolean {
  return (
    canonicalJson({ ...replacement, expires_at: anyExpiry ? null : replacement.expires_at }) ===
    canonicalJson({
      title: current.title,
      tags: current.tags,
      context: current.context,
      llm_hints: current.llm_hints ?? null,
      expires_at: anyExpiry ? null : (current.expires_at ?? null),
    })
  );
}
