/**
 * Which version of a definition a request runs (`shared/domain/version-pin.ts`). A run's driver resolves each
 * agent or tool step to the definition's id and version when it writes the request (the pinned version, else the
 * latest) and records it in the run; a pinned step's request carries its version as `definition_version`. The rule
 * that routes the request is compiled from the latest version, and the pipeline then loads the version the request
 * names (`requestedVersion`): a pin needs no rule of its own. An unpinned request names none (requests stay as
 * small as they were: most sit near a 1 KB write unit) and runs the rule's version, the latest.
 *
 * Every read is in the request's own workspace: the pipeline loads the version of the definition the rule routed
 * (its id, its workspace), so a request cannot name another workspace's definition, nor another definition.
 */
import type { Breadcrumb } from '#shared/domain/breadcrumb.ts';
import {
  definitionName,
  definitionPrincipal,
  type ParsedDefinition,
  parseDefinition,
} from '#shared/domain/definitions.ts';
import { NotFoundError, ValidationError } from '#shared/domain/errors.ts';
import { REQUESTS } from '#shared/domain/protocol.ts';
import type { BreadcrumbStore } from '#shared/ports/breadcrumb-store.ts';
import type { DefinitionRef } from './contract.ts';
import { loadDefinition } from './definition-cache.ts';

/** The request context field that names the version to run. */
export const DEFINITION_VERSION_FIELD = 'definition_version';

/** Pages of a definition schema read to find a name (100 each): the per-workspace definitions quota is below that. */
const DEFINITION_PAGES = 10;

export interface DefinitionAt {
  readonly id: string;
  readonly version: number;
}

/** The name a definition record defines (`agent_id`, tool `name`, …); undefined when it does not parse. */
export function nameOfRecord(record: Pick<Breadcrumb, 'schema_name' | 'context'>): string | undefined {
  try {
    return definitionName(parseDefinition(record.schema_name, record.context).definition);
  } catch (error) {
    if (error instanceof ValidationError) return undefined;
    throw error;
  }
}

/** name → id of the workspace's definitions of these schemas (the live ones: a listing has no tombstones). */
export async function definitionIds(
  store: Pick<BreadcrumbStore, 'list'>,
  workspace: string,
  schemas: readonly string[],
): Promise<Map<string, string>> {
  return new Map(
    [...(await definitionsByName(store, workspace, schemas))].map(([name, at]) => [name, at.id] as const),
  );
}

/** name → the definition (id and latest version, as listed) of the workspace's definitions of `schemas`. */
export async function definitionsByName(
  store: Pick<BreadcrumbStore, 'list'>,
  workspace: string,
  schemas: readonly string[],
): Promise<Map<string, DefinitionAt>> {
  const ids = new Map<string, DefinitionAt>();
  for (const schema_name of schemas) {
    let cursor: string | undefined;
    for (let page = 0; page < DEFINITION_PAGES; page++) {
      const result = await store.list({
        workspace,
        schema_name,
        limit: 100,
        ...(cursor !== undefined ? { cursor } : {}),
      });
      for (const record of result.items) {
        const name = nameOfRecord(record);
        if (name !== undefined && !ids.has(name)) ids.set(name, { id: record.id, version: record.version });
      }
      if (result.next_cursor === null) break;
      cursor = result.next_cursor;
    }
  }
  return ids;
}

/**
 * The version of definition `id` that a request for `name` runs: `version` when pinned (it must exist and still
 * define `name`), else the latest. A string says why there is none (the definition is gone, renamed, or has no
 * such version); undefined: `id` no longer defines `name` (the caller looks the name up again).
 */
export async function versionToRun(
  store: Pick<BreadcrumbStore, 'get' | 'getVersion'>,
  workspace: string,
  id: string,
  name: string,
  version: number | undefined,
): Promise<DefinitionAt | { readonly error: string } | undefined> {
  let head: Breadcrumb;
  try {
    head = await store.get(workspace, id);
  } catch (error) {
    if (error instanceof NotFoundError) return undefined;
    throw error;
  }
  if (nameOfRecord(head) !== name) return undefined;
  if (version === undefined) return { id, version: head.version };
  if (version > head.version) {
    return { error: `"${name}" has no version ${version} (its latest is ${head.version})` };
  }
  if (version === head.version) return { id, version };
  let pinned: Breadcrumb;
  try {
    pinned = await store.getVersion(workspace, id, version);
  } catch (error) {
    if (error instanceof NotFoundError) return { error: `"${name}" has no version ${version}` };
    throw error;
  }
  if (nameOfRecord(pinned) !== name) {
    return {
      error: `version ${version} of ${id} defines ${JSON.stringify(nameOfRecord(pinned) ?? null)}, not "${name}"`,
    };
  }
  return { id, version };
}

/**
 * The version a trigger asks this definition to run: a request (`REQUESTS`) naming this definition (by the name
 * it defines) with a `definition_version`. Undefined: run the version the rule named.
 */
export function requestedVersion(
  trigger: Pick<Breadcrumb, 'schema_name' | 'context'>,
  ref: Pick<DefinitionRef, 'version'>,
  parsed: ParsedDefinition,
): number | undefined {
  const request = REQUESTS[trigger.schema_name as keyof typeof REQUESTS];
  if (request === undefined) return undefined;
  const context = trigger.context as Record<string, unknown> | null;
  if (context === null || typeof context !== 'object') return undefined;
  const version = context[DEFINITION_VERSION_FIELD];
  const target = context[request.field];
  if (typeof version !== 'number' || !Number.isInteger(version) || version < 1 || version === ref.version)
    return undefined;
  if (definitionPrincipal(parsed.kind, parsed.definition as never) !== `${request.kind}:${String(target)}`)
    return undefined;
  return version;
}

/**
 * The definition the pipeline runs for this trigger: the version the request names (`requestedVersion`), read in
 * the routed definition's own workspace and id, else the one the rule named. `{ gone }`: the version asked for is
 * not there (the definition was deleted, or never had it), or no longer defines what the request asks.
 */
export async function definitionForTrigger(
  ref: DefinitionRef,
  parsed: ParsedDefinition,
  trigger: Pick<Breadcrumb, 'schema_name' | 'context'>,
  store: Pick<BreadcrumbStore, 'getVersion'>,
): Promise<{ ref: DefinitionRef; parsed: ParsedDefinition } | { gone: string }> {
  const version = requestedVersion(trigger, ref, parsed);
  if (version === undefined) return { ref, parsed };
  const pinnedRef: DefinitionRef = { ...ref, version };
  let pinned: ParsedDefinition;
  try {
    pinned = await loadDefinition(pinnedRef, store);
  } catch (error) {
    if (error instanceof NotFoundError) return { gone: `${ref.id} has no version ${version}` };
    if (error instanceof ValidationError) return { gone: `version ${version} of ${ref.id} does not parse` };
    throw error;
  }
  if (
    pinned.kind !== parsed.kind ||
    definitionPrincipal(pinned.kind, pinned.definition as never) !==
      definitionPrincipal(parsed.kind, parsed.definition as never)
  ) {
    return { gone: `version ${version} of ${ref.id} defines another ${pinned.kind}` };
  }
  return { ref: pinnedRef, parsed: pinned };
}
