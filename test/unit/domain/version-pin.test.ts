/** `name@version` in a step's `agent` / `tool`: what parses, and what a malformed pin is told. */
import { describe, expect, it } from 'vitest';
import { PinnedNameSchema, parsePin, pinnedName } from '#shared/domain/version-pin.ts';

describe('version pins', () => {
  it('reads a name, or a name and a whole version ≥ 1', () => {
    expect(parsePin('calc')).toEqual({ name: 'calc' });
    expect(parsePin('calc@3')).toEqual({ name: 'calc', version: 3 });
    expect(parsePin('ns:tool.v2@12')).toEqual({ name: 'ns:tool.v2', version: 12 });
    expect(pinnedName('calc@3')).toBe('calc');
  });

  it.each([
    ['calc@x', 'whole number ≥ 1'],
    ['calc@0', 'whole number ≥ 1'],
    ['calc@01', 'whole number ≥ 1'],
    ['calc@1.5', 'whole number ≥ 1'],
    ['calc@', 'whole number ≥ 1'],
    ['calc@99999999999', 'whole number ≥ 1'],
    ['@3', 'expected a name'],
    ['calc@1@2', 'expected a name'],
    ['ca lc@1', 'expected a name'],
  ])('refuses %s', (value, message) => {
    expect(parsePin(value)).toBeUndefined();
    const parsed = PinnedNameSchema.safeParse(value);
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues[0]?.message).toContain(message);
  });
});
