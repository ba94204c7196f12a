/**
 * Why a definition's trigger selectors match a breadcrumb, or why not: for each selector, the first field that
 * failed and what it expected. Every field is judged by compiling it alone and running the project matcher on the
 * breadcrumb's change event — the same semantics EventBridge applies — so an explanation cannot disagree with
 * routing.
 */

import type { Breadcrumb } from '#shared/domain/breadcrumb.ts';
import { type ChangeDetail, changeEntry, DETAIL_TYPES } from '#shared/domain/change-event.ts';
import { getPath, type Selector } from '#shared/domain/selector.ts';
import { compileTriggerPattern, matchesSelector, routingDetail, type SelectorSubject } from './compiler.ts';
import { matchesEventPattern } from './event-pattern.ts';

export interface FieldFailure {
  field: string;
  reason: string;
}

export interface SelectorExplanation {
  index: number;
  matched: boolean;
  failure?: FieldFailure;
}

export interface TriggerExplanation {
  matched: boolean;
  /** Index of the first selector that matched. */
  matchedSelector?: number;
  /** A reason that applies to every selector (another workspace, an event the definition wrote itself). */
  envelope?: FieldFailure;
  selectors: SelectorExplanation[];
}

export function explainTrigger(input: {
  workspace: string;
  principal: string;
  selectors: readonly Selector[];
  breadcrumb: Breadcrumb;
}): TriggerExplanation {
  const { breadcrumb } = input;
  const entry = changeEntry(
    breadcrumb.version === 1 ? DETAIL_TYPES.created : DETAIL_TYPES.updated,
    breadcrumb,
  );
  const detail = routingDetail({ ...(entry.detail as ChangeDetail), context: breadcrumb.context });
  const event = { source: entry.source, 'detail-type': entry.detailType, detail };
  const selectors = input.selectors.map((selector, index) => explainSelector(selector, index, detail));
  const first = selectors.find((s) => s.matched);
  let envelope: FieldFailure | undefined;
  if (breadcrumb.workspace !== input.workspace) {
    envelope = {
      field: 'workspace',
      reason: `the breadcrumb is in workspace ${breadcrumb.workspace}, the definition in ${input.workspace}`,
    };
  } else if (breadcrumb.updated_by === input.principal) {
    envelope = {
      field: 'updated_by',
      reason: `the definition itself wrote this version (${input.principal}); its own writes never trigger it`,
    };
  }
  // The whole compiled pattern is the final word; the per-field walk only explains it.
  const matched =
    input.selectors.length > 0 &&
    matchesEventPattern(
      compileTriggerPattern({
        workspace: input.workspace,
        principal: input.principal,
        selectors: input.selectors,
      }),
      event,
    );
  return {
    matched,
    ...(matched && first ? { matchedSelector: first.index } : {}),
    ...(envelope ? { envelope } : {}),
    selectors,
  };
}

function explainSelector(selector: Selector, index: number, detail: SelectorSubject): SelectorExplanation {
  const tags = detail.tags;
  const checks: { field: string; part: Selector; reason: () => string }[] = [];
  if (selector.schema_name !== undefined) {
    checks.push({
      field: 'schema_name',
      part: { schema_name: selector.schema_name } as Selector,
      reason: () => `expected ${selector.schema_name}, got ${String(detail.schema_name)}`,
    });
  }
  if (selector.any_tags?.length) {
    checks.push({
      field: 'any_tags',
      part: { any_tags: selector.any_tags } as Selector,
      reason: () => `none of [${selector.any_tags?.join(', ')}] is among the tags [${tags.join(', ')}]`,
    });
  }
  if (selector.all_tags?.length) {
    checks.push({
      field: 'all_tags',
      part: { all_tags: selector.all_tags } as Selector,
      reason: () =>
        `missing ${selector.all_tags?.filter((t) => !tags.includes(t)).join(', ')} (tags: [${tags.join(', ')}])`,
    });
  }
  (selector.context_match ?? []).forEach((match, i) => {
    checks.push({
      field: `context_match[${i}]`,
      part: { context_match: [match] } as Selector,
      reason: () =>
        `${match.path} ${match.op} ${JSON.stringify(match.value)} — the value there is ${JSON.stringify(getPath(detail.context, match.path)) ?? 'missing'}`,
    });
  });
  for (const check of checks) {
    if (!matchesSelector(check.part, detail)) {
      return { index, matched: false, failure: { field: check.field, reason: check.reason() } };
    }
  }
  return { index, matched: matchesSelector(selector, detail) };
}
