/** Small display helpers shared by the views. */

export function time(iso: string): string {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toISOString().slice(11, 23);
}

export function dateTime(iso: string): string {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : `${d.toISOString().slice(0, 10)} ${d.toISOString().slice(11, 19)}`;
}

export function duration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return '';
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
}

export function pretty(value: unknown): string {
  return JSON.stringify(value, null, 2) ?? 'undefined';
}

export interface DiffLine {
  path: string;
  kind: 'added' | 'removed' | 'changed';
  before?: string;
  after?: string;
}

/** Leaf-by-leaf difference of two JSON values, by path (`context.steps.a.status`). */
export function diff(before: unknown, after: unknown): DiffLine[] {
  const a = flatten(before);
  const b = flatten(after);
  const out: DiffLine[] = [];
  for (const [path, value] of a) {
    if (!b.has(path)) out.push({ path, kind: 'removed', before: value });
    else if (b.get(path) !== value) out.push({ path, kind: 'changed', before: value, after: b.get(path)! });
  }
  for (const [path, value] of b) if (!a.has(path)) out.push({ path, kind: 'added', after: value });
  return out.sort((x, y) => (x.path < y.path ? -1 : 1));
}

function flatten(value: unknown, path = '', out = new Map<string, string>()): Map<string, string> {
  if (value !== null && typeof value === 'object' && Object.keys(value).length > 0) {
    for (const [k, v] of Object.entries(value)) flatten(v, path ? `${path}.${k}` : k, out);
  } else {
    out.set(path || '(value)', JSON.stringify(value));
  }
  return out;
}
