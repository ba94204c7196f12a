/**
 * `crumbs rollback <id> --to N`: writes version N's title, tags, context and hints as the next version. History
 * stays whole (N+… are kept, the rollback is one more version), and for a definition the write is an ordinary
 * one, so its rules are compiled again. The write is conditional on the version read (If-Match): an edit that
 * lands in between is a 412 and nothing is written, never lost.
 */
import { ApiProblemError, type Breadcrumb, type BreadcrumbVersion } from '#shared/client/crumbs-client.ts';
import { type Command, InputError, onePositional, optInt, printJson, UsageError } from '../args.ts';
import { breadcrumbTable } from './views.ts';

export const rollbackCommand: Command = {
  name: 'rollback',
  summary: "write an earlier version's content as the next version",
  usage: `Usage: crumbs rollback <id> --to N

Writes version N of a breadcrumb (a definition, usually) as its next version: title, tags, context and llm_hints
as they were at N. Versions after N stay in its history (\`crumbs history <id>\`). A definition's rules follow the
new version as after any write. If someone changes it while the rollback runs, nothing is written (412).

Flags:
  --to N         the version whose content to write again`,
  options: { to: { type: 'string' } },
  async run(ctx) {
    const id = onePositional(ctx, 'breadcrumb id');
    const to = optInt(ctx.values, 'to', { min: 1 });
    if (to === undefined) throw new UsageError('missing --to N: the version to roll back to', true);
    const client = ctx.client();
    const notFound = (error: unknown) => error instanceof ApiProblemError && error.status === 404;
    let head: Breadcrumb;
    try {
      head = await client.getFull(id);
    } catch (error) {
      if (notFound(error)) throw new InputError(`no breadcrumb "${id}" in workspace ${ctx.global.workspace}`);
      throw error;
    }
    if (to === head.version) {
      throw new InputError(`"${id}" is at version ${to} already: nothing to roll back`);
    }
    let target: BreadcrumbVersion;
    try {
      target = await client.getVersion(id, to);
    } catch (error) {
      if (notFound(error)) {
        throw new InputError(`"${id}" has no version ${to} (its versions are 1 to ${head.version})`);
      }
      throw error;
    }
    let written: Breadcrumb;
    try {
      written = await client.update(
        id,
        {
          title: target.title,
          tags: target.tags,
          context: target.context,
          llm_hints: target.llm_hints ?? null,
        },
        { ifMatch: head.version },
      );
    } catch (error) {
      if (error instanceof ApiProblemError && error.status === 412) {
        throw new InputError(
          `"${id}" changed while rolling back (it was version ${head.version}): nothing was written; run it again`,
        );
      }
      throw error;
    }
    if (ctx.global.json) printJson(ctx.io, written);
    else {
      ctx.io.stdout(`${breadcrumbTable([written])}\n`);
      ctx.io.stdout(`rolled back ${id} to the content of version ${to}: now version ${written.version}\n`);
    }
    return 0;
  },
};
