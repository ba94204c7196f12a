/**
 * Human output of the CLI: aligned tables and key/value records. `--json` bypasses all of this.
 *
 * Decisions:
 * - Times print as `YYYY-MM-DD HH:MM:SS` in UTC (the API stores UTC ISO-8601; milliseconds and the `T`/`Z`
 *   add width, not information, in a listing). Anything that does not parse as a date prints unchanged.
 * - Cells are single-line: control characters (newlines, tabs) become spaces, and a cell longer than its
 *   column's `max` ends in `…`. Width counts code points, which is right for the ASCII and Latin text that ids,
 *   schema names and most titles are made of.
 * - The last column is not padded, so lines carry no trailing spaces.
 */

export interface Column<Row> {
  readonly header: string;
  readonly value: (row: Row) => unknown;
  /** Longest cell before truncation with `…`. @default 60 */
  readonly max?: number;
  /** @default 'left' */
  readonly align?: 'left' | 'right';
}

const DEFAULT_MAX = 60;
const GAP = '  ';

export function formatTable<Row>(columns: readonly Column<Row>[], rows: readonly Row[]): string {
  const cells = rows.map((row) => columns.map((column) => truncate(cellText(column.value(row)), column.max)));
  const widths = columns.map((column, i) =>
    Math.max(width(column.header), ...cells.map((line) => width(line[i] ?? ''))),
  );
  const render = (line: readonly string[]): string =>
    line
      .map((cell, i) => {
        const last = i === line.length - 1;
        const pad = (widths[i] ?? 0) - width(cell);
        if (columns[i]?.align === 'right') return ' '.repeat(pad) + cell;
        return last ? cell : cell + ' '.repeat(pad);
      })
      .join(GAP)
      .trimEnd();
  return [render(columns.map((c) => c.header.toUpperCase())), ...cells.map(render)].join('\n');
}

/** `key  value` lines, keys aligned; entries whose value is undefined are left out. */
export function formatRecord(entries: readonly (readonly [string, unknown])[]): string {
  const shown = entries.filter(([, value]) => value !== undefined);
  const keyWidth = Math.max(0, ...shown.map(([key]) => width(key)));
  return shown.map(([key, value]) => `${key.padEnd(keyWidth)}${GAP}${cellText(value)}`.trimEnd()).join('\n');
}

/** Pretty JSON for a block of output (contexts, hints). */
export function formatJson(value: unknown): string {
  return JSON.stringify(value, null, 2) ?? 'null';
}

const ISO_TIME = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2}:\d{2})(?:\.\d+)?(Z|[+-]\d{2}:?\d{2})$/;

/** `2025-03-04T05:06:07.890Z` → `2025-03-04 05:06:07` (UTC). */
export function shortTime(value: string | number | undefined): string {
  if (value === undefined) return '';
  if (typeof value === 'number') return shortTime(new Date(value * 1000).toISOString());
  const match = ISO_TIME.exec(value);
  if (!match) return value;
  if (match[3] === 'Z') return `${match[1]} ${match[2]}`;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? value : shortTime(date.toISOString());
}

export function truncate(text: string, max = DEFAULT_MAX): string {
  const points = [...text];
  if (points.length <= max) return text;
  return `${points.slice(0, Math.max(0, max - 1)).join('')}…`;
}

function cellText(value: unknown): string {
  let text: string;
  if (value === undefined || value === null) text = '';
  else if (typeof value === 'string') text = value;
  else if (Array.isArray(value))
    text = value.map((v) => (typeof v === 'string' ? v : JSON.stringify(v))).join(',');
  else if (typeof value === 'object') text = JSON.stringify(value);
  else text = String(value);
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are exactly what is replaced
  return text.replace(/[\u0000-\u001f\u007f]+/g, ' ');
}

function width(text: string): number {
  return [...text].length;
}
