/**
 * Reading a breadcrumb's context as the context agent receives it: untyped JSON, whose fields are taken only when
 * they have the expected shape.
 */

export function asObject(value: unknown): Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {};
}

export function stringField(o: Record<string, unknown>, names: readonly string[]): string | undefined {
  for (const n of names) {
    const v = o[n];
    if (typeof v === 'string' && v.trim() !== '') return v;
  }
  return undefined;
}
