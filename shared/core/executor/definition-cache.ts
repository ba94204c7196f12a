/**
 * Definitions as the pipeline and the DLQ handler read them: parsed once per warm container by (workspace, id,
 * version) — a version never changes, so the cache is never stale — and split into the parts the pipeline uses
 * (trigger and context selectors, the principal everything it writes is created by).
 */
import {
  contextSelectors,
  definitionPrincipal,
  type ParsedDefinition,
  parseDefinition,
  triggerSelectors,
} from '#shared/domain/definitions.ts';
import type { Selector } from '#shared/domain/selector.ts';
import type { BreadcrumbStore } from '#shared/ports/breadcrumb-store.ts';
import type { DefinitionRef } from './contract.ts';

const definitionCache = new Map<string, ParsedDefinition>();
const MAX_CACHED_DEFINITIONS = 500;

/** The definition at `ref.version`, parsed (NotFoundError when gone, ValidationError when it does not parse). */
export async function loadDefinition(
  ref: Pick<DefinitionRef, 'workspace' | 'id' | 'version'>,
  store: Pick<BreadcrumbStore, 'getVersion'>,
): Promise<ParsedDefinition> {
  const key = `${ref.workspace}/${ref.id}@${ref.version}`;
  const cached = definitionCache.get(key);
  if (cached) return cached;
  const record = await store.getVersion(ref.workspace, ref.id, ref.version);
  const parsed = parseDefinition(record.schema_name, record.context);
  if (definitionCache.size >= MAX_CACHED_DEFINITIONS) definitionCache.clear();
  definitionCache.set(key, parsed);
  return parsed;
}

/** Test seam: forget cached definitions. */
export function clearDefinitionCache(): void {
  definitionCache.clear();
}

/** Selectors and principal of a parsed definition (a switch, so each kind's call is checked on its own type). */
export function definitionParts(parsed: ParsedDefinition): {
  triggers: Selector[];
  context: Selector[];
  principal: string;
} {
  return {
    triggers: triggerSelectors(parsed.kind, parsed.definition),
    context: contextSelectors(parsed.kind, parsed.definition),
    principal: definitionPrincipal(parsed.kind, parsed.definition),
  };
}
