/**
 * `crumbs workspace export|delete`: a workspace as a whole (`shared/core/api/workspace-routes.ts`).
 *
 *   crumbs workspace export [-o FILE] [--blobs DIR]
 *                                       every version of every breadcrumb as JSON lines, oldest first; a deleted
 *                                       breadcrumb adds a line `{ id, version, deleted: true, deleted_at, … }`;
 *                                       with --blobs, every blob (attachments, spilled contexts) under DIR.
 *                                       Written page by page, so a large workspace never sits in memory.
 *   crumbs workspace delete --yes [--force]
 *                                       deletes everything of the workspace, calling the API until it is done; run
 *                                       again after an interruption, it resumes. Refused while runs are active
 *                                       unless --force.
 */
import { closeSync, openSync, writeSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import type { CrumbsClient, WorkspaceDeletionStep } from '#shared/client/crumbs-client.ts';
import { type Command, InputError, optInt, optString, printJson, UsageError } from '../args.ts';

/** Between steps that wait for the rule manager. */
const WAIT_POLL_MS = 1000;

export const workspaceCommand: Command = {
  name: 'workspace',
  summary: 'export or delete a whole workspace',
  usage: `Usage: crumbs workspace export [-o FILE] [--limit N] [--blobs DIR]
       crumbs workspace delete --yes [--force]

export  Writes every version of every breadcrumb of the workspace as JSON lines (one stored version a line,
        oldest first; a deleted breadcrumb adds a line with "deleted": true) to FILE or stdout. With --blobs,
        every attachment and spilled context of the workspace is written to DIR/<id> as well.
delete  Deletes the workspace's breadcrumbs with their history, index entries, embeddings, and the rules and
        schedules of its definitions, in bounded steps; interrupted, run it again and it resumes. Refused while
        runs are active (running, waiting, paused) unless --force. Only a person's token may delete.`,
  options: {
    output: { type: 'string', short: 'o' },
    blobs: { type: 'string' },
    limit: { type: 'string' },
    yes: { type: 'boolean' },
    force: { type: 'boolean' },
  },
  async run(ctx) {
    const [sub, ...rest] = ctx.positionals;
    if (rest.length > 0) throw new UsageError(`unexpected argument ${rest[0]}`, true);
    if (sub === 'export') {
      const limit = optInt(ctx.values, 'limit', { min: 1, max: 500 });
      const file = optString(ctx.values, 'output');
      let fd: number | undefined;
      try {
        fd = file !== undefined ? openSync(file, 'w') : undefined;
      } catch (error) {
        throw new InputError(`cannot write ${file}: ${(error as Error).message}`, { cause: error });
      }
      let lines = 0;
      try {
        let cursor: string | undefined;
        do {
          const page = await ctx.client().exportPage(cursor, limit !== undefined ? { limit } : {});
          const text = page.items.map((item) => `${JSON.stringify(item)}\n`).join('');
          if (fd !== undefined) writeSync(fd, text);
          else ctx.io.stdout(text);
          lines += page.items.length;
          cursor = page.next_cursor ?? undefined;
        } while (cursor !== undefined);
      } finally {
        if (fd !== undefined) closeSync(fd);
      }
      if (file !== undefined)
        ctx.io.stderr(`exported ${lines} lines of ${ctx.global.workspace} to ${file}\n`);
      const blobsDir = optString(ctx.values, 'blobs');
      if (blobsDir !== undefined) {
        const written = await exportBlobs(ctx.client(), blobsDir);
        ctx.io.stderr(`exported ${written} blobs of ${ctx.global.workspace} to ${blobsDir}\n`);
      }
      return 0;
    }
    if (sub === 'delete') {
      if (ctx.values.yes !== true) {
        throw new UsageError(
          `deleting workspace ${ctx.global.workspace} cannot be undone: add --yes (export it first with \`crumbs workspace export -o FILE\`)`,
        );
      }
      const force = ctx.values.force === true;
      let step: WorkspaceDeletionStep;
      let lastWaiting: string | undefined;
      for (;;) {
        step = await ctx.client().deleteWorkspaceStep({ force });
        for (const warning of step.warnings ?? []) ctx.io.stderr(`warning: ${warning}\n`);
        if (step.done) break;
        if (step.waiting !== undefined) {
          if (step.waiting !== lastWaiting && !ctx.global.json)
            ctx.io.stderr(`waiting for ${step.waiting}\n`);
          lastWaiting = step.waiting;
          await new Promise((resolve) => setTimeout(resolve, WAIT_POLL_MS));
        }
      }
      if (ctx.global.json) printJson(ctx.io, step);
      else {
        ctx.io.stdout(
          `deleted workspace ${step.workspace} (${step.deleted} items, ${step.timers_cancelled ?? 0} timers and schedules)` +
            (step.tombstone_until !== undefined
              ? `; it refuses writes until ${step.tombstone_until}, when its name is free again\n`
              : '\n'),
        );
      }
      return 0;
    }
    throw new UsageError(
      sub === undefined
        ? 'expected export or delete'
        : `unknown subcommand ${sub}: expected export or delete`,
      true,
    );
  },
};

/** Every blob of the workspace, written to `dir/<attachment id>`; answers how many. */
async function exportBlobs(client: CrumbsClient, dir: string): Promise<number> {
  await mkdir(dir, { recursive: true });
  let written = 0;
  let cursor: string | undefined;
  do {
    const page = await client.attachmentsPage(cursor);
    for (const item of page.items) {
      await writeFile(join(dir, basename(item.id)), await client.download(item.download_url));
      written++;
    }
    cursor = page.next_cursor ?? undefined;
  } while (cursor !== undefined);
  return written;
}
