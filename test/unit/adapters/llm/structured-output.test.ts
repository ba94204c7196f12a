import { describe, expect, it } from 'vitest';
import { fitsStrictMode, jsonText, withSchemaInstruction } from '#shared/adapters/llm/structured-output.ts';

describe('structured output helpers', () => {
  it('appends the schema to the system prompt, or makes it the prompt when there is none', () => {
    const schema = { type: 'object' };
    expect(withSchemaInstruction('Be brief.', schema)).toMatch(
      /^Be brief\.\n\nAnswer with only a JSON object/,
    );
    expect(withSchemaInstruction('', schema)).toMatch(
      /^Answer with only a JSON object.*\n\{"type":"object"\}$/s,
    );
  });

  it('takes the JSON object out of a fence or a sentence, and leaves other answers as they came', () => {
    expect(jsonText(' {"a":1} ')).toBe('{"a":1}');
    expect(jsonText('```json\n{"a":1}\n```')).toBe('{"a":1}');
    expect(jsonText('Sure! {"a":{"b":2}} Hope this helps.')).toBe('{"a":{"b":2}}');
    expect(jsonText('no JSON here')).toBe('no JSON here');
    expect(jsonText('{"a": broken}')).toBe('{"a": broken}');
  });

  it('asks for strict mode only when every object is closed and requires all its properties', () => {
    const closed = {
      type: 'object',
      properties: {
        a: { type: 'string' },
        items: {
          type: 'array',
          items: {
            type: 'object',
            properties: { b: { type: 'number' } },
            required: ['b'],
            additionalProperties: false,
          },
        },
      },
      required: ['a', 'items'],
      additionalProperties: false,
    };
    expect(fitsStrictMode(closed)).toBe(true);
    expect(fitsStrictMode({ ...closed, required: ['a'] })).toBe(false);
    expect(fitsStrictMode({ ...closed, additionalProperties: true })).toBe(false);
    const openInside = structuredClone(closed);
    openInside.properties.items.items.additionalProperties = true;
    expect(fitsStrictMode(openInside)).toBe(false);
    expect(fitsStrictMode({ type: 'object' })).toBe(false);
  });
});
