/**
 * `GET /v1/workspaces/{ws}/usage?by=day|agent|run|thread[&from=YYYY-MM-DD&to=YYYY-MM-DD&limit=N]`: the workspace's
 * model calls, tokens and cost (the stream consumer's hourly counters, summed) per day of the range, or per agent,
 * run or thread over it, the most expensive first. The range defaults to the last 30 days (UTC) and spans at most
 * `MAX_DAYS`; a read takes at most `MAX_COUNTERS` counters and says when it was cut short. Totals trail the writes
 * by the stream (a second or so).
 *
 * `GET /v1/workspaces/{ws}/usage/requests/{id}`: one request's calls, summed from the `llm_usage` records on what
 * its invocations wrote (its answers, its tool requests, its conversation's versions), found by the request's tag
 * and in its thread (a 404 when the request does not exist).
 * No counter per request: it would cost every agent turn a write or two more, and a request's writes are few.
 * Both behind the API's workspace authorization (api.ts).
 */
import {
  type Breadcrumb,
  BreadcrumbIdSchema,
  parseOrThrow,
  WorkspaceSchema,
} from '#shared/domain/breadcrumb.ts';
import { BadRequestError } from '#shared/domain/errors.ts';
import { writtenUsageOf } from '#shared/domain/llm-usage.ts';
import { AGENT_CONVERSATION_SCHEMA, requestTag, threadTag } from '#shared/domain/protocol.ts';
import type { BreadcrumbStore } from '#shared/ports/breadcrumb-store.ts';
import {
  addAmounts,
  amountsOf,
  USAGE_DIMENSIONS,
  type UsageAmounts,
  type UsageDimension,
  type UsageTotals,
  zeroAmounts,
} from '#shared/ports/usage-totals.ts';
import { type HttpRequest, type HttpResult, json } from './http.ts';

export const MAX_DAYS = 92;
const DEFAULT_DAYS = 30;
export const MAX_COUNTERS = 5000;
const DEFAULT_LIMIT = 50;
const MAX_LIMIT = 500;
const DAY = /^\d{4}-\d{2}-\d{2}$/;
const DAY_MS = 86_400_000;

/** Amounts as `GET …/usage` answers them: with the cost in dollars beside the exact nano-dollars. */
export type UsageReportAmounts = UsageAmounts & { cost_usd: number };

export interface UsageItem extends UsageReportAmounts {
  key: string;
}

/** `GET …/usage`: one item per day of the range (`by=day`, every day), or per key, the most expensive first. */
export interface UsageReport {
  workspace: string;
  by: UsageDimension;
  from: string;
  to: string;
  items: UsageItem[];
  totals: UsageReportAmounts;
  truncated: boolean;
}

/** Breadcrumbs a request's read looks at (its tag's listing, and its conversations' versions). */
export const MAX_REQUEST_RECORDS = 1000;
const PAGE = 100;

/** One write that recorded some of the request's calls. */
export interface RequestUsageItem extends UsageReportAmounts {
  id: string;
  version: number;
  schema_name: string;
  agent_id: string;
}

/** `GET …/usage/requests/{id}`: the request's calls per write that recorded them, and their sum. */
export interface RequestUsageReport {
  workspace: string;
  request: string;
  items: RequestUsageItem[];
  totals: UsageReportAmounts;
  truncated: boolean;
}

export function usageRoutes(totals: UsageTotals, store: BreadcrumbStore) {
  return [
    {
      template: '/v1/workspaces/{ws}/usage/requests/{id}',
      pattern: /^\/v1\/workspaces\/(?<ws>[^/]+)\/usage\/requests\/(?<id>[^/]+)$/,
      methods: {
        GET: async (_req: HttpRequest, p: Record<string, string>): Promise<HttpResult> =>
          json(
            200,
            await readRequestUsage(
              store,
              parseOrThrow(WorkspaceSchema, p.ws, 'workspace'),
              parseOrThrow(BreadcrumbIdSchema, p.id, 'id'),
            ),
          ),
      },
    },
    {
      template: '/v1/workspaces/{ws}/usage',
      pattern: /^\/v1\/workspaces\/(?<ws>[^/]+)\/usage$/,
      methods: {
        GET: async (req: HttpRequest, p: Record<string, string>): Promise<HttpResult> =>
          json(200, await readUsage(totals, parseOrThrow(WorkspaceSchema, p.ws, 'workspace'), req.query)),
      },
    },
  ];
}

export async function readUsage(
  totals: UsageTotals,
  workspace: string,
  query: Record<string, string | undefined>,
): Promise<UsageReport> {
  const by = dimensionOf(query.by);
  const { from, to } = rangeOf(query.from, query.to);
  const limit = limitOf(query.limit);
  const { rows, truncated } = await totals.read(
    workspace,
    by,
    { fromHour: `${from}T00`, toHour: `${to}T23` },
    MAX_COUNTERS,
  );
  const groups = new Map<string, UsageAmounts>();
  if (by === 'day') for (const day of daysOf(from, to)) groups.set(day, zeroAmounts());
  for (const row of rows) {
    const key = by === 'day' ? row.hour.slice(0, 10) : row.key;
    groups.set(key, addAmounts(groups.get(key) ?? zeroAmounts(), row));
  }
  let items: UsageItem[] = [...groups].map(([key, amounts]) => item(key, amounts));
  if (by !== 'day') {
    items.sort(
      (a, b) =>
        b.cost_nusd - a.cost_nusd ||
        b.input_tokens + b.output_tokens - (a.input_tokens + a.output_tokens) ||
        a.key.localeCompare(b.key),
    );
  }
  const total = item(
    'total',
    [...groups.values()].reduce((s, a) => addAmounts(s, a), zeroAmounts()),
  );
  const cut = by !== 'day' && items.length > limit;
  if (cut) items = items.slice(0, limit);
  const { key: _key, ...totalAmounts } = total;
  return { workspace, by, from, to, items, totals: totalAmounts, truncated: truncated || cut };
}

/**
 * A request's calls: every write listed under its tag (`request:<id>`) or in its thread whose record names it, and
 * the versions of the thread's conversations (a turn's conversation is rewritten by each of its tool rounds; a
 * version keeps the record of the invocation that wrote it). At most `MAX_REQUEST_RECORDS` breadcrumbs are read, so a long
 * conversation's request may be cut short (and says so). Listings trail the write by the stream, like the totals.
 */
export async function readRequestUsage(
  store: BreadcrumbStore,
  workspace: string,
  request: string,
): Promise<RequestUsageReport> {
  const seen = new Set<string>();
  const items: RequestUsageItem[] = [];
  let read = 0;
  let truncated = false;
  const consider = (record: Breadcrumb) => {
    const key = `${record.id}@${record.version}`;
    if (seen.has(key)) return;
    seen.add(key);
    const usage = writtenUsageOf(record);
    if (usage === undefined || usage.request_id !== request) return;
    items.push({
      id: record.id,
      version: record.version,
      schema_name: record.schema_name,
      agent_id: usage.agent_id,
      ...withDollars(amountsOf(usage)),
    });
  };
  // Where a request's writes are: its answers carry its tag; its tool requests (tagged with their own ids) and its
  // conversation are in its thread.
  const asked = await store.get(workspace, request);
  const thread = asked.causation?.thread ?? asked.id;
  const conversations = new Set<string>();
  for (const tag of [requestTag(request), threadTag(thread)]) {
    let cursor: string | undefined;
    do {
      if (read >= MAX_REQUEST_RECORDS) {
        truncated = true;
        break;
      }
      const page = await store.list({
        workspace,
        tag,
        limit: Math.min(PAGE, MAX_REQUEST_RECORDS - read),
        ...(cursor !== undefined ? { cursor } : {}),
      });
      read += page.items.length;
      for (const record of page.items) {
        consider(record);
        if (record.schema_name === AGENT_CONVERSATION_SCHEMA) conversations.add(record.id);
      }
      cursor = page.next_cursor ?? undefined;
    } while (cursor !== undefined);
  }
  for (const id of conversations) {
    let at: string | undefined;
    do {
      if (read >= MAX_REQUEST_RECORDS) {
        truncated = true;
        break;
      }
      const page = await store.history(workspace, id, {
        limit: Math.min(PAGE, MAX_REQUEST_RECORDS - read),
        ...(at !== undefined ? { cursor: at } : {}),
      });
      read += page.items.length;
      for (const version of page.items) consider(version);
      at = page.next_cursor ?? undefined;
    } while (at !== undefined);
  }
  items.sort((a, b) => a.id.localeCompare(b.id) || a.version - b.version);
  const sum = items.reduce((s, i) => addAmounts(s, i), zeroAmounts());
  return { workspace, request, items, totals: withDollars(sum), truncated };
}

function withDollars(amounts: UsageAmounts): UsageReportAmounts {
  const { calls, input_tokens, output_tokens, cached_tokens, cost_nusd, unpriced_calls } = amounts;
  return {
    calls,
    input_tokens,
    output_tokens,
    cached_tokens,
    cost_nusd,
    unpriced_calls,
    cost_usd: cost_nusd / 1e9,
  };
}

function item(key: string, amounts: UsageAmounts): UsageItem {
  return { key, ...withDollars(amounts) };
}

function dimensionOf(raw: string | undefined): UsageDimension {
  if (raw === undefined || raw === '') return 'day';
  if ((USAGE_DIMENSIONS as readonly string[]).includes(raw)) return raw as UsageDimension;
  throw new BadRequestError('by is not valid', [
    { path: 'by', message: `expected one of ${USAGE_DIMENSIONS.join(', ')}, got "${raw.slice(0, 40)}"` },
  ]);
}

function rangeOf(rawFrom: string | undefined, rawTo: string | undefined): { from: string; to: string } {
  const to = rawTo ? dayOf('to', rawTo) : new Date().toISOString().slice(0, 10);
  const from = rawFrom ? dayOf('from', rawFrom) : shift(to, -(DEFAULT_DAYS - 1));
  if (from > to) {
    throw new BadRequestError('from is after to', [
      { path: 'from', message: `expected a day on or before to (${to}), got ${from}` },
    ]);
  }
  if (daysBetween(from, to) >= MAX_DAYS) {
    throw new BadRequestError('the range is too long', [
      { path: 'from', message: `at most ${MAX_DAYS} days from from to to, got ${daysBetween(from, to) + 1}` },
    ]);
  }
  return { from, to };
}

function dayOf(name: string, raw: string): string {
  const time = DAY.test(raw) ? Date.parse(`${raw}T00:00:00Z`) : Number.NaN;
  // A day that does not exist (2026-02-30) parses to another day, or to nothing.
  const valid = Number.isFinite(time) && new Date(time).toISOString().slice(0, 10) === raw;
  if (!valid) {
    throw new BadRequestError(`${name} is not a valid day`, [
      { path: name, message: `expected a date YYYY-MM-DD (UTC), got "${raw.slice(0, 40)}"` },
    ]);
  }
  return raw;
}

function limitOf(raw: string | undefined): number {
  if (raw === undefined) return DEFAULT_LIMIT;
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || n < 1 || n > MAX_LIMIT) {
    throw new BadRequestError('limit is not valid', [
      { path: 'limit', message: `expected an integer from 1 to ${MAX_LIMIT}, got ${raw.slice(0, 40)}` },
    ]);
  }
  return n;
}

function shift(day: string, days: number): string {
  return new Date(Date.parse(`${day}T00:00:00Z`) + days * DAY_MS).toISOString().slice(0, 10);
}

function daysBetween(from: string, to: string): number {
  return Math.round((Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / DAY_MS);
}

function daysOf(from: string, to: string): string[] {
  const days: string[] = [];
  for (let d = from; d <= to; d = shift(d, 1)) days.push(d);
  return days;
}
