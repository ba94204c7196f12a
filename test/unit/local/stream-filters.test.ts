/**
 * The publisher's stream filters (topology.functions.publisher.trigger.filters), applied to stream records in
 * the shape Lambda passes them: what the publisher acts on passes, the bookkeeping items beside it do not. The
 * local stream poller applies exactly these patterns, and the CDK app hands them to Lambda as FilterCriteria.
 */
import { marshall } from '@aws-sdk/util-dynamodb';
import { describe, expect, it } from 'vitest';
import { compileEventPattern } from '#shared/routing/event-pattern.ts';
import { topology } from '#shared/topology.ts';

const filters = (topology.functions.publisher.trigger.filters ?? []).map((p) => compileEventPattern(p));
const passes = (record: unknown) => filters.some((f) => f.matches(record));

function record(
  eventName: 'INSERT' | 'MODIFY' | 'REMOVE',
  images: { NewImage?: Record<string, unknown>; OldImage?: Record<string, unknown> },
) {
  return {
    eventID: '1',
    eventName,
    eventSource: 'aws:dynamodb',
    dynamodb: {
      SequenceNumber: '100',
      ...(images.NewImage ? { NewImage: marshall(images.NewImage) } : {}),
      ...(images.OldImage ? { OldImage: marshall(images.OldImage) } : {}),
    },
  };
}

const head = {
  id: 'b1',
  workspace: 'ws',
  kind: 'breadcrumb',
  schema_name: 'note.v1',
  version: 1,
  write_id: 'w1',
};

describe('publisher stream filters', () => {
  it('passes head writes, plain puts and head removals', () => {
    expect(passes(record('INSERT', { NewImage: head }))).toBe(true);
    expect(passes(record('MODIFY', { NewImage: { ...head, version: 2 }, OldImage: head }))).toBe(true);
    // A console edit keeps kind and write_id: the publisher compares the content.
    expect(passes(record('MODIFY', { NewImage: { ...head, title: 'edited' }, OldImage: head }))).toBe(true);
    const plain = { id: 'by-hand', workspace: 'ws', schema_name: 'note.v1', context: { a: 1 } };
    expect(passes(record('INSERT', { NewImage: plain }))).toBe(true);
    expect(passes(record('MODIFY', { NewImage: { ...plain, context: { a: 2 } }, OldImage: plain }))).toBe(
      true,
    );
    expect(passes(record('REMOVE', { OldImage: head }))).toBe(true);
  });

  it('passes over versions, tags, claims, idempotency keys, schema settings, deletion entries and their removal', () => {
    const items = [
      { id: 'b1#v#0000000001', workspace: 'ws', kind: 'version', ref: 'b1' },
      { id: 'b1#t#x', workspace: 'ws', kind: 'tag', ref: 'b1', schema_name: 'note.v1' },
      { id: '#claim#tool#b1@1', workspace: 'ws', kind: 'claim', state: 'claimed' },
      { id: '#idem#k', workspace: 'ws', kind: 'idempotency' },
      { id: '#hints#note.v1', workspace: 'ws', kind: 'schema-hints' },
      { id: '#circuit#p', workspace: 'ws', kind: 'circuit' },
      { id: 'b1#d#0000000001', workspace: 'ws', kind: 'deletion', ref: 'b1' },
    ];
    for (const item of items) {
      expect(passes(record('INSERT', { NewImage: item })), item.kind).toBe(false);
      expect(passes(record('MODIFY', { NewImage: { ...item, n: 2 }, OldImage: item })), item.kind).toBe(
        false,
      );
      expect(passes(record('REMOVE', { OldImage: item })), item.kind).toBe(false);
    }
    // An item removed that was never adopted (a plain put deleted by hand) is nothing to publish either.
    expect(passes(record('REMOVE', { OldImage: { id: 'by-hand', workspace: 'ws' } }))).toBe(false);
  });
});
