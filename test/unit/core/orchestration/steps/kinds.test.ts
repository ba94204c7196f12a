import { describe, expect, it } from 'vitest';
import { stepKindOf } from '#shared/core/orchestration/steps/kinds.ts';
import { STEP_KIND_SCHEMAS, STEP_KINDS } from '#shared/domain/steps/kinds.ts';

describe('step kinds', () => {
  it('pairs every kind of the definition schema with its engine half', () => {
    for (const schema of STEP_KIND_SCHEMAS) {
      const kind = stepKindOf(schema.kind);
      expect(kind.kind).toBe(schema.kind);
      expect(kind.schema).toBe(schema);
    }
  });

  it('gives every kind what the way it ends needs', () => {
    for (const name of STEP_KINDS) {
      const kind = stepKindOf(name);
      // Something must be out while an attempt waits, or a run could wait for nothing.
      if (kind.endedBy === 'reply' || kind.endedBy === 'person') expect(kind.request, name).toBeDefined();
      if (kind.endedBy === 'timer') expect(kind.timer, name).toBeDefined();
      if (kind.endedBy === 'children') {
        expect(kind.drive, name).toBeDefined();
        expect(kind.nestedKeys, name).toBeDefined();
        expect(kind.counts.step, name).toBe(false);
      } else {
        expect(kind.counts.step, name).toBe(true);
      }
    }
  });
});
