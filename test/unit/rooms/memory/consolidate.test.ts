/**
 * The deterministic check that commits what the memory model proposes: assistant-only claims refused, a
 * contradiction supersedes, a duplicate merges, a retraction deletes, another person's record cannot be targeted,
 * the cap holds.
 */
import { describe, expect, it } from 'vitest';
import { consolidate, normalizeKey } from '#shared/rooms/memory/consolidate.ts';

const turns = [
  { id: 'u1', byPerson: true },
  { id: 'a1', byPerson: false },
  { id: 'u2', byPerson: true },
];

describe('consolidate', () => {
  it('adds a fact the person said, and refuses one only the assistant said', () => {
    const out = consolidate({
      current: [],
      turns,
      proposals: [
        { op: 'add', key: 'Order number', text: 'order number is A-17', source_turns: ['u1'] },
        { op: 'add', key: 'home city', text: 'lives in Lyon', source_turns: ['a1'] },
        { op: 'add', key: 'pet', text: 'has a cat', source_turns: ['x-not-in-batch'] },
      ],
      maxRecords: 10,
    });
    expect(out.writes).toEqual([
      { kind: 'create', key: 'order_number', text: 'order number is A-17', source_turns: ['u1'] },
    ]);
    expect(out.refused.map((r) => r.reason)).toEqual([
      'assistant-only: no turn of the person says it',
      'assistant-only: no turn of the person says it',
    ]);
  });

  it('supersedes a contradicted fact as a new version of the same record, and merges a duplicate', () => {
    const current = [
      { id: 'r1', key: 'units', text: 'prefers imperial units', source_turns: ['old'] },
      { id: 'r2', key: 'order_number', text: 'order number is A-17', source_turns: ['old'] },
    ];
    const out = consolidate({
      current,
      turns,
      proposals: [
        { op: 'add', key: 'units', text: 'prefers metric units', source_turns: ['u1'] },
        { op: 'add', key: 'order number', text: 'Order number is A-17.', source_turns: ['u2'] },
      ],
      maxRecords: 10,
    });
    expect(out.writes).toEqual([
      {
        kind: 'update',
        id: 'r1',
        key: 'units',
        text: 'prefers metric units',
        source_turns: ['old', 'u1'],
        reason: 'supersede',
      },
      {
        kind: 'update',
        id: 'r2',
        key: 'order_number',
        text: 'order number is A-17',
        source_turns: ['old', 'u2'],
        reason: 'merge',
      },
    ]);
  });

  it('deletes a retracted fact, refuses a target that is not this person’s, and holds the cap', () => {
    const current = [{ id: 'r1', key: 'units', text: 'prefers metric units', source_turns: ['old'] }];
    const out = consolidate({
      current,
      turns,
      proposals: [
        { op: 'retract', target: 'r1', source_turns: ['u1'] },
        { op: 'supersede', target: 'someone-elses', text: 'x', source_turns: ['u1'] },
        { op: 'add', key: 'a', text: 'one', source_turns: ['u2'] },
        { op: 'add', key: 'b', text: 'two', source_turns: ['u2'] },
      ],
      maxRecords: 1,
    });
    expect(out.writes).toEqual([
      { kind: 'delete', id: 'r1', key: 'units' },
      { kind: 'create', key: 'a', text: 'one', source_turns: ['u2'] },
    ]);
    expect(out.refused.map((r) => r.reason)).toEqual([
      "target someone-elses is not one of this person's records",
      'this person has 1 records of this memory, its cap',
    ]);
  });

  it('lets the last word about a key win within one batch', () => {
    const out = consolidate({
      current: [],
      turns,
      proposals: [
        { op: 'add', key: 'city', text: 'lives in Paris', source_turns: ['u1'] },
        { op: 'add', key: 'city', text: 'lives in Lyon', source_turns: ['u2'] },
      ],
      maxRecords: 10,
    });
    expect(out.writes).toEqual([
      { kind: 'create', key: 'city', text: 'lives in Lyon', source_turns: ['u1', 'u2'] },
    ]);
    expect(normalizeKey('  Home City! ')).toBe('home_city');
  });
});
