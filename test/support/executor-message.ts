import type { ExecutorMessage } from '#shared/core/executor/contract.ts';
import type { Breadcrumb } from '#shared/domain/breadcrumb.ts';
import { changeEntry, DETAIL_TYPES } from '#shared/domain/change-event.ts';
import { DEFINITION_SCHEMAS, type DefinitionSchema } from '#shared/topology.ts';

/** The message routing would deliver for `trigger` to `definition`: its reference and the trigger's change event. */
export function messageFor(definition: Breadcrumb, trigger: Breadcrumb): ExecutorMessage {
  const entry = changeEntry(trigger.version === 1 ? DETAIL_TYPES.created : DETAIL_TYPES.updated, trigger);
  return {
    definition: {
      id: definition.id,
      version: definition.version,
      workspace: definition.workspace,
      kind: DEFINITION_SCHEMAS[definition.schema_name as DefinitionSchema],
      schema_name: definition.schema_name,
    },
    event: {
      source: 'crumbs',
      'detail-type': entry.detailType as ExecutorMessage['event']['detail-type'],
      detail: entry.detail as ExecutorMessage['event']['detail'],
      time: trigger.updated_at,
    },
  };
}
