/**
 * What the memory kind answers: the outcome of a turn it handled (`memory.extraction.v1`, ids and counts only, never
 * remembered text — the documented way to wait for extraction) and the error answer of one that failed.
 */
import type { OutputBreadcrumb } from '#shared/domain/protocol.ts';
import {
  MEMORY_EXTRACTION_SCHEMA,
  type MemoryDefinition,
  memoryTag,
  sessionTag,
  turnTag,
} from './protocol.ts';

export interface MemoryOutcome {
  status: 'extracted' | 'pending' | 'nothing';
  actor: string;
  session: string;
  created: string[];
  updated: string[];
  deleted: string[];
  refused: number;
  /** Turns read (ids). */
  turns: string[];
}

export function extractionAnswer(
  definition: MemoryDefinition,
  triggerId: string,
  outcome: MemoryOutcome,
): OutputBreadcrumb {
  return {
    schema_name: MEMORY_EXTRACTION_SCHEMA,
    title: `${definition.memory_id}: ${outcome.status}`,
    tags: [memoryTag(definition.memory_id), turnTag(triggerId), sessionTag(outcome.session)],
    context: { memory_id: definition.memory_id, trigger_id: triggerId, ...outcome },
  };
}

export { memoryErrorAnswer } from './protocol.ts';
