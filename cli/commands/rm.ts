/** `crumbs rm <id>`: delete a breadcrumb (DELETE); it reads as 404 afterwards. */
import { type Command, onePositional, printJson } from '../args.ts';

export const rmCommand: Command = {
  name: 'rm',
  summary: 'delete a breadcrumb',
  usage: `Usage: crumbs rm <id>

Deletes a breadcrumb. Its history stays readable through the API's history route.`,
  options: {},
  async run(ctx) {
    const id = onePositional(ctx, 'breadcrumb id');
    await ctx.client().delete(id);
    // DELETE answers 204 with no body; --json still prints something a script can parse.
    if (ctx.global.json) printJson(ctx.io, { id, deleted: true });
    else ctx.io.stdout(`deleted ${id}\n`);
    return 0;
  },
};
