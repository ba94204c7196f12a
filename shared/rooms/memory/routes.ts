/**
 * The memory room's API, behind the API's workspace authorization (api.ts):
 *
 * - `GET    /v1/workspaces/{ws}/memory?actor=&memory_id=` — a person's current records, newest first.
 * - `GET    /v1/workspaces/{ws}/memory/{id}` — one record (its history is the breadcrumb's: `…/breadcrumbs/{id}/history`).
 * - `DELETE /v1/workspaces/{ws}/memory?actor=&memory_id=` — forget: every record of the person (of one memory when
 *   named) is removed with its versions, tag items and change-log entries (`DynamoPurge`), its vector is removed
 *   from the engine at once, and so are the person's own turns the records came from (what they said, so nothing it
 *   was derived from stays). Summaries are records too, so they go with the rest.
 *
 * Whose: the caller's own memory (the token's `sub`) by default; `actor=<sub>` naming someone else needs an operator's
 * token (workspaces `*`), so one person of a workspace cannot read or erase another's memory.
 */

import type { RoomRoute } from '#shared/core/api/api.ts';
import { parseOrThrow, WorkspaceSchema } from '#shared/domain/breadcrumb.ts';
import { BadRequestError, ForbiddenError, NotFoundError } from '#shared/domain/errors.ts';
import type { BreadcrumbStore } from '#shared/ports/breadcrumb-store.ts';
import type { Caller, HttpRequest, HttpResult } from '../../core/api/http.ts';
import { json } from '../../core/api/http.ts';
import { MEMORY_RECORD_SCHEMA, MemoryRecordSchema } from './protocol.ts';
import { actorRecords } from './records.ts';

/** Records one listing or one forget reaches at most (the operator's per-actor cap times a few memories). */
export const MAX_RECORDS_PER_REQUEST = 2000;
const ACTOR = /^[A-Za-z0-9][A-Za-z0-9._:@+-]{0,199}$/;

export interface MemoryRouteDeps {
  store: BreadcrumbStore;
  /** Removes every item of a breadcrumb (versions and change log included). */
  purge: (workspace: string, id: string) => Promise<void>;
  /** Removes a breadcrumb's vector from the engine (and its ledger entry) now, not when the indexer gets to it. */
  removeVector?: (workspace: string, id: string) => Promise<void>;
}

function actorFor(request: HttpRequest, caller: Caller): string {
  const own = caller.principal.startsWith('user:') ? caller.principal.slice('user:'.length) : undefined;
  const asked = request.query.actor;
  if (asked === undefined || asked === '') {
    if (own === undefined)
      throw new BadRequestError('actor is required', [
        { path: 'actor', message: 'expected the person (token sub) whose memory it is' },
      ]);
    return own;
  }
  if (!ACTOR.test(asked)) {
    throw new BadRequestError('actor is not valid', [
      {
        path: 'actor',
        message: 'expected a token sub: 1-200 letters, digits, ".", "_", ":", "@", "+" or "-"',
      },
    ]);
  }
  if (asked !== own && caller.workspaces !== '*') {
    throw new ForbiddenError("another person's memory needs an operator's token");
  }
  return asked;
}

function memoryIdOf(request: HttpRequest): string | undefined {
  const id = request.query.memory_id;
  return id === undefined || id === '' ? undefined : id;
}

export function memoryRoutes(deps: MemoryRouteDeps): RoomRoute[] {
  return [
    {
      template: '/v1/workspaces/{ws}/memory',
      pattern: /^\/v1\/workspaces\/(?<ws>[^/]+)\/memory$/,
      methods: {
        GET: async (request, p, caller) => {
          const workspace = parseOrThrow(WorkspaceSchema, p.ws, 'workspace');
          const actor = actorFor(request, caller);
          const found = await actorRecords(
            deps.store,
            workspace,
            actor,
            memoryIdOf(request),
            MAX_RECORDS_PER_REQUEST,
          );
          return json(200, {
            actor,
            items: found.map(({ record, memory }) => ({
              id: record.id,
              version: record.version,
              updated_at: record.updated_at,
              ...memory,
            })),
          });
        },
        DELETE: async (request, p, caller) => {
          const workspace = parseOrThrow(WorkspaceSchema, p.ws, 'workspace');
          const actor = actorFor(request, caller);
          const found = await actorRecords(
            deps.store,
            workspace,
            actor,
            memoryIdOf(request),
            MAX_RECORDS_PER_REQUEST,
          );
          const turns = new Set<string>();
          for (const { record, memory } of found) {
            for (const t of memory.source_turns) turns.add(t);
            await forgetOne(deps, workspace, record.id);
          }
          // The person's own turns the records came from: only theirs (another person's turn is never removed here).
          let turnsRemoved = 0;
          for (const id of turns) {
            try {
              const turn = await deps.store.get(workspace, id);
              if (turn.created_by !== `user:${actor}`) continue;
            } catch (error) {
              if (!(error instanceof NotFoundError)) throw error;
              continue;
            }
            await forgetOne(deps, workspace, id);
            turnsRemoved++;
          }
          return json(200, { actor, forgotten: found.length, turns_removed: turnsRemoved });
        },
      },
    },
    {
      template: '/v1/workspaces/{ws}/memory/{id}',
      pattern: /^\/v1\/workspaces\/(?<ws>[^/]+)\/memory\/(?<id>[^/]+)$/,
      methods: {
        GET: async (request, p, caller) => {
          const workspace = parseOrThrow(WorkspaceSchema, p.ws, 'workspace');
          const actor = actorFor(request, caller);
          const record = await deps.store.get(workspace, p.id ?? '');
          const memory = MemoryRecordSchema.safeParse(record.context);
          // Someone else's record, or no record at all, is the same 404: its existence is not told.
          if (record.schema_name !== MEMORY_RECORD_SCHEMA || !memory.success || memory.data.actor !== actor) {
            throw new NotFoundError(`no memory record ${p.id} of ${actor}`);
          }
          return json(200, {
            id: record.id,
            version: record.version,
            updated_at: record.updated_at,
            ...memory.data,
          });
        },
      },
    },
  ];
}

async function forgetOne(deps: MemoryRouteDeps, workspace: string, id: string): Promise<void> {
  await deps.removeVector?.(workspace, id);
  try {
    // An ordinary delete first: its change event tells everyone listening (the indexer, live views) it is gone.
    await deps.store.delete(workspace, id, { principal: 'system:memory-forget' });
  } catch (error) {
    if (!(error instanceof NotFoundError)) throw error;
  }
  await deps.purge(workspace, id);
}
