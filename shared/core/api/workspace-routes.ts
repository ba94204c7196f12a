/**
 * A workspace as a whole: its export and its deletion.
 *
 *   GET    /v1/workspaces/{ws}/export?cursor=&limit=  → { items, next_cursor }: every version of every breadcrumb,
 *          oldest first (write order), stored records (view=full); a deleted breadcrumb adds a deletion line.
 *          Read from the change log (gsi3/gsi4 `<ws>#c#<shard>`), a page at a time; the first page fixes the end.
 *   DELETE /v1/workspaces/{ws}?force=true&steps=N     → 202 { done: false, phase, … } while more remains, 200 done.
 *
 * A deletion is a job whose progress lives in the workspace's deletion record (`workspace-seal.ts`, in the table's
 * own partition); each call advances it by bounded units for at most `CALL_BUDGET_MS` and says whether more remains,
 * so a client loops and an interrupted deletion resumes where it stopped. Phases:
 *   check        refuse while runs are active, unless forced;
 *   definitions  deleted through the store, so the rule manager removes their rules and schedules;
 *   rules        wait until the rule manager has done so (it deletes each definition's status breadcrumb after its
 *                rule and schedule), bounded by `RULES_WAIT_MS`;
 *   seal         from here on every write to the workspace is refused, whoever sends it (410), and no timer is set
 *                for it: an executor still running, a timer firing late, a person;
 *   timers       every timer and schedule of the workspace cancelled (step waits, human-step timeouts, approval
 *                expiries, recurring schedules: `WorkspaceTimers`);
 *   secrets      the workspace's credentials;
 *   sweep        every remaining item (`workspace-sweeper.ts`: the workspace index, so it reads what the
 *                workspace holds) — wait entries, claims, counters and leases included; after the second sweep,
 *                the workspace's blobs (attachments, spilled contexts, staged uploads).
 * Then timers and sweep once more, once every writer has learnt of the seal (`SEAL_WINDOW_MS`, twice, for requests
 * in flight) and the stream has settled: what was set or written before the seal reached it. The record then stays
 * as the workspace's tombstone for `WORKSPACE_TOMBSTONE_SECONDS` (two days: `workspace-deletion.ts` says why),
 * refusing writes that were already on their way; after it the name is free again.
 * Only people delete a workspace.
 */
import { type Breadcrumb, parseOrThrow, WorkspaceSchema } from '#shared/domain/breadcrumb.ts';
import { BadRequestError, ConflictError, ForbiddenError } from '#shared/domain/errors.ts';
import { RUN_SCHEMA, STATUS_SCHEMA } from '#shared/domain/protocol.ts';
import { decodeCursorJson, encodeCursor } from '#shared/domain/record-rules.ts';
import type { ChangeLog, ThreadIndex } from '#shared/ports/activity.ts';
import type { BreadcrumbStore } from '#shared/ports/breadcrumb-store.ts';
import type { WorkspaceTimers } from '#shared/ports/timers.ts';
import {
  type DeletionJob,
  SEAL_WINDOW_MS,
  type SecretEraser,
  WORKSPACE_TOMBSTONE_SECONDS,
  type WorkspaceSweeper,
} from '#shared/ports/workspace-deletion.ts';
import { DEFINITION_SCHEMAS, SCHEDULE_DEFINITION_SCHEMA } from '#shared/topology.ts';
import { isPerson } from '../orchestration/authority.ts';
import type { Caller, HttpRequest, HttpResult } from './http.ts';
import { json } from './http.ts';

export interface WorkspaceDeps {
  store: BreadcrumbStore;
  changes: ChangeLog;
  threads: Pick<ThreadIndex, 'versions'>;
  sweeper: WorkspaceSweeper;
  /** Removes the workspace's credentials (its definitions' `secret_ref`s); without it they are left as they are. */
  secrets?: SecretEraser;
  now?: () => number;
  /** How long after the first sweep the second starts: the stream's delay in handing the deletes on. */
  streamSettleMs?: number;
  /** How long the rules phase waits for the rule manager before going on without its confirmation. */
  rulesWaitMs?: number;
  /** Cancels the workspace's timers and schedules; without it none are cancelled (a stack without Scheduler). */
  timers?: WorkspaceTimers;
  /** How long after the seal a write may still land (writers' seal cache): @default SEAL_WINDOW_MS */
  sealWindowMs?: number;
  /** The workspace's blobs (the attachments room), deleted with its last sweep; without it none are kept. */
  blobs?: { deleteWorkspace(workspace: string): Promise<number> };
}

type Params = Record<string, string>;
export interface WorkspaceRoute {
  template: string;
  pattern: RegExp;
  methods: Partial<Record<string, (req: HttpRequest, p: Params, caller: Caller) => Promise<HttpResult>>>;
}

/** Work per call: well inside API Gateway's 30 s (a unit started before it ends is one bounded page). */
export const CALL_BUDGET_MS = 10_000;
export const RULES_WAIT_MS = 5 * 60_000;
export const STREAM_SETTLE_MS = 5_000;
const EXPORT_DEFAULT_LIMIT = 100;
const EXPORT_MAX_LIMIT = 500;
/** A page's records stop here: Lambda's response payload limit is 6 MB. */
const EXPORT_MAX_BYTES = 4_500_000;
const LIST_PAGE = 100;
const ACTIVE_RUN_STATUSES = new Set(['running', 'waiting', 'paused']);
const DEFINITION_LIST = [...Object.keys(DEFINITION_SCHEMAS), SCHEDULE_DEFINITION_SCHEMA];
const SCAN_WARNING =
  "this table's workspace index is not complete (items written before it existed), so the deletion scans the " +
  'whole table; `crumbs table backfill-index` completes it, and deletions then read only the workspace';

/** A deleted breadcrumb's line in an export. */
export interface ExportDeletion {
  id: string;
  workspace: string;
  version: number;
  deleted: true;
  deleted_at: string;
  deleted_by: string;
}

export function workspaceRoutes(deps: WorkspaceDeps): WorkspaceRoute[] {
  const now = deps.now ?? Date.now;
  const waits = {
    rulesWaitMs: deps.rulesWaitMs ?? RULES_WAIT_MS,
    streamSettleMs: deps.streamSettleMs ?? STREAM_SETTLE_MS,
    sealWindowMs: deps.sealWindowMs ?? SEAL_WINDOW_MS,
  };
  return [
    {
      template: '/v1/workspaces/{ws}/export',
      pattern: /^\/v1\/workspaces\/(?<ws>[^/]+)\/export$/,
      methods: { GET: async (req, p) => json(200, await exportPage(deps, workspace(p), req, now)) },
    },
    {
      template: '/v1/workspaces/{ws}',
      pattern: /^\/v1\/workspaces\/(?<ws>[^/]+)$/,
      methods: {
        DELETE: async (req, p, caller) => {
          const result = await deleteStep(deps, workspace(p), caller, req, now, waits);
          return json(result.done ? 200 : 202, result);
        },
      },
    },
  ];
}

function workspace(p: Params): string {
  return parseOrThrow(WorkspaceSchema, p.ws, 'workspace');
}

async function exportPage(
  deps: WorkspaceDeps,
  ws: string,
  req: HttpRequest,
  now: () => number,
): Promise<{ items: (Breadcrumb | ExportDeletion)[]; next_cursor: string | null }> {
  const limit = intParam(req.query.limit, 'limit', 1, EXPORT_MAX_LIMIT) ?? EXPORT_DEFAULT_LIMIT;
  const position =
    req.query.cursor !== undefined
      ? exportCursor(deps.changes, req.query.cursor)
      : { after: deps.changes.cursorAt(new Date(0)), until: deps.changes.cursorAt(new Date(now())) };
  const entries = await deps.changes.read(ws, position.after, position.until, limit);
  const versions = await deps.threads.versions(
    ws,
    entries.filter((e) => e.kind !== 'deletion').map((e) => ({ id: e.id, version: e.version })),
  );
  const byRef = new Map(versions.map((r) => [`${r.id}@${r.version}`, r]));
  const items: (Breadcrumb | ExportDeletion)[] = [];
  let bytes = 0;
  let last: string | undefined;
  for (const [i, entry] of entries.entries()) {
    const item: Breadcrumb | ExportDeletion | undefined =
      entry.kind === 'deletion'
        ? {
            id: entry.id,
            workspace: ws,
            version: entry.version,
            deleted: true,
            deleted_at: entry.updated_at,
            deleted_by: entry.updated_by,
          }
        : byRef.get(`${entry.id}@${entry.version}`); // absent: expired (TTL) since the index was read
    const size = item ? JSON.stringify(item).length : 0;
    // Cut only between positions, so the next page (after the last position handed out) misses nothing.
    if (items.length > 0 && bytes + size > EXPORT_MAX_BYTES && entries[i - 1]?.cursor !== entry.cursor) {
      return { items, next_cursor: encodeCursor({ a: last, u: position.until }) };
    }
    if (item) items.push(item);
    bytes += size;
    last = entry.cursor;
  }
  const more = entries.length === limit && last !== undefined;
  return { items, next_cursor: more ? encodeCursor({ a: last, u: position.until }) : null };
}

function exportCursor(changes: ChangeLog, raw: string): { after: string; until: string } {
  const value = decodeCursorJson(raw) as { a?: unknown; u?: unknown } | null;
  const refuse = () =>
    new BadRequestError('cursor is not valid', [
      { path: 'cursor', message: 'expected the next_cursor of an export page' },
    ]);
  if (
    value === null ||
    typeof value !== 'object' ||
    typeof value.a !== 'string' ||
    typeof value.u !== 'string'
  )
    throw refuse();
  try {
    return { after: changes.checkCursor(value.a), until: changes.checkCursor(value.u) };
  } catch {
    throw refuse();
  }
}

export interface DeletionResult {
  workspace: string;
  done: boolean;
  phase: DeletionJob['phase'] | 'done';
  /** Items deleted so far by this deletion (definitions, then the sweep's items). */
  deleted: number;
  /** True when this call found a deletion already under way and went on with it. */
  resumed: boolean;
  /** Timers and schedules of the workspace cancelled so far. */
  timers_cancelled?: number;
  /** Once done: until when the workspace refuses every write (its tombstone); its name is free after. */
  tombstone_until?: string;
  /** What the deletion waits for, when it waits. */
  waiting?: string;
  warnings?: string[];
}

async function deleteStep(
  deps: WorkspaceDeps,
  ws: string,
  caller: Caller,
  req: HttpRequest,
  now: () => number,
  waits: { rulesWaitMs: number; streamSettleMs: number; sealWindowMs: number },
): Promise<DeletionResult> {
  // The same rule as approvals: a token's subject is a person; crumbs' own writers and plain puts are not.
  if (!isPerson(caller.principal)) {
    throw new ForbiddenError(`only a person deletes a workspace; ${caller.principal} is not one`);
  }
  const force = boolParam(req.query.force, 'force');
  const maxSteps = intParam(req.query.steps, 'steps', 1, 10_000) ?? Number.POSITIVE_INFINITY;
  const deadline = now() + CALL_BUDGET_MS;
  const stored = await deps.sweeper.readJob(ws);
  const at = new Date(now()).toISOString();
  let job: DeletionJob = stored ?? {
    phase: 'check',
    step: 0,
    started_at: at,
    started_by: caller.principal,
    phase_started_at: at,
    force,
    deleted: 0,
  };
  if (force && !job.force && job.done_at === undefined) job = { ...job, force: true };
  let expected = stored?.step;
  const warnings: string[] = [];
  let waiting: string | undefined;
  const result = (done: boolean): DeletionResult => ({
    workspace: ws,
    done,
    phase: done ? 'done' : job.phase,
    deleted: job.deleted,
    resumed: stored !== undefined,
    ...(job.timers_cancelled !== undefined ? { timers_cancelled: job.timers_cancelled } : {}),
    ...(job.done_at !== undefined ? { tombstone_until: tombstoneEnd(job.done_at) } : {}),
    ...(waiting !== undefined ? { waiting } : {}),
    ...(warnings.length > 0 ? { warnings } : {}),
  });
  // Done already: the record is the workspace's tombstone; nothing is left to do.
  if (job.done_at !== undefined) return result(true);
  const enter = (phase: DeletionJob['phase']): DeletionJob => {
    const { cursor: _, ...rest } = job;
    return { ...rest, phase, phase_started_at: new Date(now()).toISOString() };
  };

  for (let steps = 0; steps < maxSteps && now() < deadline; steps++) {
    let next: DeletionJob;
    switch (job.phase) {
      case 'check': {
        if (job.force) {
          next = enter('definitions');
          break;
        }
        const page = await deps.store.list({
          workspace: ws,
          schema_name: RUN_SCHEMA,
          limit: LIST_PAGE,
          ...(job.cursor !== undefined ? { cursor: job.cursor } : {}),
        });
        const active = page.items.filter((r) => ACTIVE_RUN_STATUSES.has(String(r.context.status)));
        if (active.length > 0) {
          // Nothing has been deleted yet: the job is dropped, so the workspace is as it was.
          if (stored !== undefined || expected !== undefined) await deps.sweeper.deleteJob(ws);
          const named = active
            .slice(0, 10)
            .map((r) => `${r.id} (${String(r.context.status)})`)
            .join(', ');
          throw new ConflictError(
            `workspace ${ws} has active runs: ${named}${active.length > 10 ? ', …' : ''}; cancel them or delete with force=true`,
          );
        }
        next = page.next_cursor ? { ...job, cursor: page.next_cursor } : enter('definitions');
        break;
      }
      case 'definitions': {
        const position = definitionsCursor(job.cursor);
        const schema = DEFINITION_LIST[position.s];
        if (schema === undefined) {
          next = enter('rules');
          break;
        }
        const page = await deps.store.list({
          workspace: ws,
          schema_name: schema,
          limit: LIST_PAGE,
          ...(position.c !== undefined ? { cursor: position.c } : {}),
        });
        for (const definition of page.items) {
          await deps.store
            .delete(ws, definition.id, { principal: caller.principal })
            .catch((error: unknown) => {
              // Deleted meanwhile (a repeated page after a crash): what was wanted.
              if ((error as { status?: number }).status !== 404) throw error;
            });
        }
        const cursor = page.next_cursor ? { s: position.s, c: page.next_cursor } : { s: position.s + 1 };
        next = { ...job, deleted: job.deleted + page.items.length, cursor: JSON.stringify(cursor) };
        break;
      }
      case 'rules': {
        // The rule manager deletes a deleted definition's status breadcrumb after its rule and schedule.
        const statuses = await deps.store.list({ workspace: ws, schema_name: STATUS_SCHEMA, limit: 10 });
        if (statuses.items.length > 0) {
          const waited = now() - Date.parse(job.phase_started_at);
          if (waited < waits.rulesWaitMs) {
            waiting = `the rule manager to remove the rules and schedules of ${statuses.items
              .map((s) => String(s.context.definition_id ?? s.id))
              .join(', ')}${statuses.next_cursor ? ', …' : ''}`;
            return result(false);
          }
          warnings.push(
            `the rule manager did not confirm within ${Math.round(waits.rulesWaitMs / 1000)} s that the rules of ${statuses.items
              .map((s) => String(s.context.definition_id ?? s.id))
              .join(
                ', ',
              )} are gone; run \`crumbs rules sync\` in a workspace of the same name to remove orphan rules`,
          );
        }
        next = enter('seal');
        break;
      }
      case 'seal': {
        // From this write on, every write to the workspace is refused (the item layer reads this record), and no
        // timer is set for it: what is cancelled and swept next stays gone.
        next = { ...enter('timers'), sealed_at: new Date(now()).toISOString() };
        break;
      }
      case 'timers': {
        const pass = job.pass ?? 1;
        if (pass === 2 && job.cursor === undefined) {
          // The second pass starts once every writer has learnt of the seal (and what it sent meanwhile has
          // landed), and the stream has handed on the first pass's deletes.
          const sealed = Date.parse(job.sealed_at ?? job.phase_started_at) + 2 * waits.sealWindowMs;
          const settled = Date.parse(job.swept_at ?? job.phase_started_at) + waits.streamSettleMs;
          if (now() < Math.max(sealed, settled)) {
            waiting =
              'every writer to learn of the seal, and the change stream to settle, before the second pass';
            return result(false);
          }
        }
        const page = deps.timers
          ? await deps.timers.cancelAll(ws, job.cursor)
          : { cancelled: 0, cursor: undefined };
        const cancelled = (job.timers_cancelled ?? 0) + page.cancelled;
        if (page.cursor !== undefined) {
          next = { ...job, timers_cancelled: cancelled, cursor: page.cursor };
          break;
        }
        next = {
          ...enter(pass === 1 && deps.secrets ? 'secrets' : 'sweep'),
          timers_cancelled: cancelled,
        };
        break;
      }
      case 'secrets': {
        // After the definitions: nothing of the workspace calls out with its credentials any more.
        if (deps.secrets === undefined) {
          next = enter('sweep');
          break;
        }
        const page = await deps.secrets.erase(ws, job.cursor);
        warnings.push(...page.notes);
        next =
          page.cursor !== undefined
            ? { ...job, deleted: job.deleted + page.erased.length, cursor: page.cursor }
            : { ...enter('sweep'), deleted: job.deleted + page.erased.length };
        break;
      }
      case 'sweep': {
        const pass = job.pass ?? 1;
        const page = await deps.sweeper.sweep(ws, job.cursor);
        if (page.scanned === true && !warnings.includes(SCAN_WARNING)) warnings.push(SCAN_WARNING);
        const deleted = job.deleted + page.deleted;
        if (page.cursor !== undefined) {
          next = { ...job, deleted, cursor: page.cursor };
          break;
        }
        if (pass === 1) {
          // Once more, the timers and then the items: what a writer that had not yet learnt of the seal set or
          // wrote meanwhile.
          next = { ...enter('timers'), deleted, pass: 2, swept_at: new Date(now()).toISOString() };
          break;
        }
        // Blobs last: after the seal and both sweeps nothing refers to them, and nothing can add one.
        const blobs = deps.blobs ? await deps.blobs.deleteWorkspace(ws) : 0;
        const done: DeletionJob = {
          ...job,
          deleted: deleted + blobs,
          step: job.step + 1,
          done_at: new Date(now()).toISOString(),
        };
        const until = new Date(now() + WORKSPACE_TOMBSTONE_SECONDS * 1000);
        if (!(await deps.sweeper.finishJob(ws, done, job.step, until))) {
          job = (await deps.sweeper.readJob(ws)) ?? job;
          return result(job.done_at !== undefined);
        }
        job = done;
        return result(true);
      }
    }
    next = { ...next, step: job.step + 1 };
    if (!(await deps.sweeper.writeJob(ws, next, expected))) {
      // Another call advanced the job meanwhile: report where it stands; the client calls again.
      job = (await deps.sweeper.readJob(ws)) ?? job;
      return result(false);
    }
    job = next;
    expected = next.step;
  }
  return result(false);
}

/** When a tombstone written at `doneAt` ends. */
function tombstoneEnd(doneAt: string): string {
  return new Date(Date.parse(doneAt) + WORKSPACE_TOMBSTONE_SECONDS * 1000).toISOString();
}

function definitionsCursor(raw: string | undefined): { s: number; c?: string } {
  if (raw === undefined) return { s: 0 };
  return JSON.parse(raw) as { s: number; c?: string };
}

function boolParam(raw: string | undefined, name: string): boolean {
  if (raw === undefined || raw === '' || raw === 'false') return false;
  if (raw === 'true') return true;
  throw new BadRequestError(`${name} is not valid`, [
    { path: name, message: `expected true or false, got ${JSON.stringify(raw)}` },
  ]);
}

function intParam(raw: string | undefined, name: string, min: number, max: number): number | undefined {
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || n < min || n > max) {
    throw new BadRequestError(`${name} is not valid`, [
      { path: name, message: `expected an integer from ${min} to ${max}, got ${JSON.stringify(raw)}` },
    ]);
  }
  return n;
}
