/** `crumbs get <id> [--full] [--version N]`: one breadcrumb, as the context view, the full record, or a past version. */
import { type Command, onePositional, optInt, optString, printJson } from '../args.ts';
import { saveAttachments } from '../rooms/attachments.ts';
import { contextViewText, fullViewText } from './views.ts';

export const getCommand: Command = {
  name: 'get',
  summary: 'show a breadcrumb (context view, --full record, or --version N)',
  usage: `Usage: crumbs get <id> [--full] [--version N] [--save-attachments DIR]

Shows a breadcrumb. By default the context view (llm_hints applied), as agents see it.

Flags:
  --full         the full stored record (checksum, authors, hints, causation)
  --version N    the full record as it was at version N
  --save-attachments DIR
                 write every attachment the breadcrumb refers to under DIR (by its name)`,
  options: {
    full: { type: 'boolean' },
    version: { type: 'string' },
    'save-attachments': { type: 'string' },
  },
  async run(ctx) {
    const id = onePositional(ctx, 'breadcrumb id');
    // `--version` is both the global "print the crumbs version" flag and this command's flag: here a value
    // makes it a string, and the global meaning only applies without a command.
    const version = optInt(ctx.values, 'version');
    const client = ctx.client();
    const saveTo = optString(ctx.values, 'save-attachments');
    if (saveTo !== undefined) {
      // What the context view shows is what is saved: an attachment llm_hints leave out is not handed out.
      const view = await client.get(id);
      const paths = await saveAttachments(client, view.context, saveTo);
      if (ctx.global.json) printJson(ctx.io, { id, saved: paths });
      else ctx.io.stdout(`${paths.length === 0 ? 'no attachments' : paths.join('\n')}\n`);
      return 0;
    }
    if (version !== undefined) {
      const crumb = await client.getVersion(id, version);
      if (ctx.global.json) printJson(ctx.io, crumb);
      else ctx.io.stdout(`${fullViewText(crumb)}\n`);
    } else if (ctx.values.full === true) {
      const crumb = await client.getFull(id);
      if (ctx.global.json) printJson(ctx.io, crumb);
      else ctx.io.stdout(`${fullViewText(crumb)}\n`);
    } else {
      const view = await client.get(id);
      if (ctx.global.json) printJson(ctx.io, view);
      else ctx.io.stdout(`${contextViewText(view)}\n`);
    }
    return 0;
  },
};
