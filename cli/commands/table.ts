/**
 * `crumbs table backfill-index --table NAME`: an operator's command, run once against a deployed table with the
 * operator's AWS credentials (the standard AWS environment or profile; not the API's token). It gives every item
 * written before the workspace index existed its index key, then marks the table's index complete, after which a
 * workspace deletion reads only the workspace's items (`shared/adapters/dynamodb/workspace-index.ts`).
 *
 * The table is read once, in `--segments` parallel Scan segments; each page's progress is printed with the cursor
 * to go on from (`--segment S --cursor C`) should it stop. Idempotent: an item that has the key is left alone, so
 * running it again costs a Scan and writes nothing.
 */
import { type Command, optInt, optString, printJson, UsageError } from '../args.ts';

export const tableCommand: Command = {
  name: 'table',
  summary: "operator: complete a deployed table's workspace index (AWS credentials, not a token)",
  usage: `Usage: crumbs table backfill-index --table NAME [--segments N] [--segment S --cursor C]

Gives every item of the table written before the workspace index existed its index key, then marks the index
complete: from then on deleting a workspace reads only that workspace's items, not the whole table. Run it once
after deploying a stack whose table predates the index; on a new table it finds nothing to do and marks it.
Uses your AWS credentials and region (AWS_REGION, AWS_PROFILE), not the API.

Cost: one Scan of the table (0.5 read units per 4 KB) and, per item written before the index, one UpdateItem
with its index entry (2 write units).

Flags:
  --table NAME     the breadcrumbs table (the stack output TableName)
  --segments N     parallel Scan segments (default 4, at most 64)
  --segment S      with --cursor: go on with one segment from where an interrupted run printed it stopped
  --cursor C       the cursor that run printed`,
  options: {
    table: { type: 'string' },
    segments: { type: 'string' },
    segment: { type: 'string' },
    cursor: { type: 'string' },
  },
  async run(ctx) {
    const [sub, ...rest] = ctx.positionals;
    if (sub !== 'backfill-index' || rest.length > 0) {
      throw new UsageError('expected: crumbs table backfill-index --table NAME', true);
    }
    const table = optString(ctx.values, 'table');
    if (table === undefined || table.trim() === '')
      throw new UsageError('--table: name the breadcrumbs table');
    const segments = optInt(ctx.values, 'segments', { min: 1, max: 64 }) ?? 4;
    const only = optInt(ctx.values, 'segment', { min: 0, max: 63 });
    const from = optString(ctx.values, 'cursor');
    if ((only === undefined) !== (from === undefined)) {
      throw new UsageError('--segment and --cursor go together (both as an interrupted run printed them)');
    }
    if (only !== undefined && only >= segments) {
      throw new UsageError(`--segment: expected a segment below --segments (${segments})`);
    }
    // Loaded here: every other command starts without the DynamoDB SDK.
    const [{ DynamoDBClient }, { crumbsDocumentClient }, index] = await Promise.all([
      import('@aws-sdk/client-dynamodb'),
      import('#shared/adapters/dynamodb/client.ts'),
      import('#shared/adapters/dynamodb/workspace-index.ts'),
    ]);
    const { backfillWorkspaceIndex, markWorkspaceIndexComplete, workspaceIndexMarker } = index;
    const client = crumbsDocumentClient(new DynamoDBClient({}));
    const totals = { scanned: 0, stamped: 0 };
    const runSegment = async (segment: number, cursor: string | undefined) => {
      let at = cursor;
      do {
        const page = await backfillWorkspaceIndex(client, table, {
          segment,
          segments,
          ...(at !== undefined ? { cursor: at } : {}),
        });
        totals.scanned += page.scanned;
        totals.stamped += page.stamped;
        at = page.cursor;
        if (!ctx.global.json && at !== undefined) {
          ctx.io.stderr(
            `segment ${segment}: ${totals.scanned} items read, ${totals.stamped} indexed; to go on: --segment ${segment} --cursor ${at}\n`,
          );
        }
      } while (at !== undefined);
    };
    if (only !== undefined) await runSegment(only, from);
    else await Promise.all(Array.from({ length: segments }, (_, s) => runSegment(s, undefined)));
    // A resumed segment alone does not say the others are done: only a whole run marks the table.
    if (only === undefined) await markWorkspaceIndexComplete(client, table, new Date());
    const marker = await workspaceIndexMarker(client, table);
    const result = { table, ...totals, complete_at: marker?.complete_at ?? null };
    if (ctx.global.json) printJson(ctx.io, result);
    else {
      ctx.io.stdout(
        `${table}: ${totals.scanned} items read, ${totals.stamped} given their workspace index key; ` +
          (result.complete_at !== null
            ? `index complete since ${String(result.complete_at)}\n`
            : 'run it once more without --segment to mark the index complete\n'),
      );
    }
    return 0;
  },
};
