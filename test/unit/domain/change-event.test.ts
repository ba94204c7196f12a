/**
 * The change event carries the whole version when its context fits: what an executor rebuilds from it
 * (`recordOf`, after the event crossed EventBridge as JSON and was parsed as an executor message) is the record.
 */
import { describe, expect, it } from 'vitest';
import { type Breadcrumb, BreadcrumbSchema, checksumOf } from '#shared/domain/breadcrumb.ts';
import {
  ChangeDetailSchema,
  changeEntry,
  DETAIL_TYPES,
  MAX_EVENT_CONTEXT_BYTES,
  recordOf,
} from '#shared/domain/change-event.ts';

const context = { text: 'hello', nested: { n: 1.5, list: [1, 'two', null], flag: false } };

/** A record with every field a breadcrumb can have. */
const full: Breadcrumb = {
  id: 'b1',
  workspace: 'ws',
  schema_name: 'note.text.v1',
  title: 'a note',
  tags: ['a.b', 'thread:t'],
  context,
  llm_hints: { exclude: ['$.nested.flag'], mode: 'merge' },
  version: 3,
  checksum: checksumOf(context),
  created_at: '2026-01-01T00:00:00.000Z',
  updated_at: '2026-01-02T00:00:00.000Z',
  created_by: 'user:plain-put',
  updated_by: 'agent:helper',
  claimed_by: 'agent:impostor',
  expires_at: 1_900_000_000,
  causation: { caused_by: 'u1@2', thread: 't', hop: 4 },
};

/** The detail as an executor receives it: through JSON, parsed by the message schema. */
function received(record: Breadcrumb) {
  const { detail } = changeEntry(DETAIL_TYPES.updated, record);
  return ChangeDetailSchema.parse(JSON.parse(JSON.stringify(detail)));
}

describe('recordOf', () => {
  it('rebuilds every field of the record from its event', () => {
    // A field added to breadcrumbs must be added to the event too: this record has them all.
    expect(Object.keys(full).sort()).toEqual(Object.keys(BreadcrumbSchema.shape).sort());
    expect(BreadcrumbSchema.parse(recordOf(received(full)))).toEqual(full);
  });

  it('rebuilds a record without the optional fields without adding any', () => {
    const { llm_hints: _h, claimed_by: _c, expires_at: _e, causation: _k, ...plain }: Breadcrumb = full;
    expect(recordOf(received(plain))).toEqual(plain);
  });

  it('gives nothing when the context (with the llm_hints) was too large for the event', () => {
    const half = 'x'.repeat(MAX_EVENT_CONTEXT_BYTES / 2);
    const large = {
      ...full,
      context: { text: half },
      llm_hints: { transform: { t: { type: 'literal' as const, literal: half } } },
    };
    const detail = received(large);
    expect(detail.context_omitted).toBe(true);
    expect(detail).not.toHaveProperty('created_at');
    expect(recordOf(detail)).toBeUndefined();
  });

  it('gives nothing for an event of a publisher that did not send the whole record', () => {
    const { created_at: _, ...older } = received(full);
    expect(recordOf(older)).toBeUndefined();
  });
});

describe('change events of memory records', () => {
  it('never carry a memory record’s context, whatever its size', async () => {
    const { changeEntry } = await import('#shared/domain/change-event.ts');
    const entry = changeEntry('Breadcrumb Created', {
      id: '01JMEMORY0000000000000000',
      workspace: 'w',
      schema_name: 'memory.record.v1',
      title: 'prefs: units',
      tags: ['actor:alice'],
      context: { text: 'CANARY-prefers metric units' },
      version: 1,
      checksum: 'x',
      created_at: '2026-01-01T00:00:00.000Z',
      updated_at: '2026-01-01T00:00:00.000Z',
      created_by: 'agent:m',
      updated_by: 'agent:m',
    } as never);
    expect(entry.detail.context_omitted).toBe(true);
    expect(JSON.stringify(entry)).not.toContain('CANARY');
  });
});
