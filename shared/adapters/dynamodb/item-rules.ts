/**
 * The rules every item of the breadcrumbs table follows, applied where every write passes: the middleware of crumbs'
 * DynamoDB client (`client.ts` installs it on every client it makes). A kind of item added later follows them
 * without knowing, as long as it is written through that client — which every adapter in this folder is.
 *
 * 1. **Every item is in the workspace index** (gsi5, `workspace-index.ts`): a PutItem (alone, in a transaction or a
 *    batch) gets `gsi5pk = <workspace>#w#<shard>` from its `id` and `workspace`; an UpdateItem sets it too (an
 *    update can create its item: counters, leases, wait entries). So deleting a workspace finds everything it holds
 *    with Queries on its own partitions, never a Scan of the table.
 *
 * 2. **A deleted workspace takes no writes.** A put or an update of an item of a workspace whose deletion has sealed
 *    it (`workspace-seal.ts`) is refused with a WorkspaceDeletedError before it is sent — a person's API call (410),
 *    an executor still running when the workspace went, a timer that fired late, a kind of item added later. Deletes
 *    pass (the deletion's own sweep is deletes). The SQS batch loop drops a message whose handling was refused so
 *    (`sqs-batch.ts`); the publisher passes over a sealed workspace's stream records.
 *
 * Why a middleware and not code in each adapter: the index is only as good as its weakest writer, and a writer that
 * forgets it leaves items a deletion never finds — silently; the same goes for a writer that forgets to ask whether
 * the workspace still exists. Here no writer can forget.
 * `test/unit/adapters/item-rules.test.ts` holds every write shape to the rule; `test/integration/workspace-index.test.ts`
 * checks every item a busy workspace holds.
 *
 * Both input shapes pass here: the document client's (plain values, marshalled after this step) and the low-level
 * client's (attribute values, `{ S: … }`), since a document client shares its low-level client's middleware.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { WORKSPACE_INDEX_KEY, workspaceIndexKey } from './workspace-index.ts';
import { workspaceSeals } from './workspace-seal.ts';

type Input = Record<string, unknown>;

const MIDDLEWARE = 'crumbsItemRules';
const NAME = '#crumbs_wsx';
const VALUE = ':crumbs_wsx';

/** Installs the rules on a client's middleware stack (once; a second call replaces the first). */
export function applyItemRules(client: DynamoDBDocumentClient): void {
  const seals = workspaceSeals(client);
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const command = String(context.commandName ?? '');
      const input = args.input as Input;
      for (const { table, workspace } of writtenWorkspaces(command, input)) {
        await seals.refuseSealed(table, workspace);
      }
      return next({ ...args, input: stampWrites(command, input) });
    },
    { step: 'initialize', name: MIDDLEWARE, override: true },
  );
}

/** The (table, workspace) pairs a command puts or updates items of; deletes and reads have none. */
export function writtenWorkspaces(command: string, input: Input): { table: string; workspace: string }[] {
  const found = new Map<string, { table: string; workspace: string }>();
  const add = (table: unknown, item: unknown) => {
    const key = keyOf(item);
    if (typeof table === 'string' && key !== undefined)
      found.set(`${table}\u0000${key.workspace}`, { table, workspace: key.workspace });
  };
  switch (command) {
    case 'PutItemCommand':
      add(input.TableName, input.Item);
      break;
    case 'UpdateItemCommand':
      add(input.TableName, input.Key);
      break;
    case 'TransactWriteItemsCommand':
      for (const action of asArray(input.TransactItems)) {
        const a = action as Input;
        if (a.Put !== undefined) add((a.Put as Input).TableName, (a.Put as Input).Item);
        if (a.Update !== undefined) add((a.Update as Input).TableName, (a.Update as Input).Key);
      }
      break;
    case 'BatchWriteItemCommand':
      for (const [table, requests] of Object.entries((input.RequestItems ?? {}) as Record<string, unknown>)) {
        for (const request of asArray(requests))
          add(table, ((request as Input).PutRequest as Input | undefined)?.Item);
      }
      break;
  }
  return [...found.values()];
}

/**
 * The command's input with the workspace index key on every item it creates or changes: a copy where anything
 * changes (the caller's objects are left as they were, so a command sent again is stamped again, not twice).
 */
export function stampWrites(command: string, input: Input): Input {
  switch (command) {
    case 'PutItemCommand':
      return { ...input, Item: stampItem(input.Item) };
    case 'UpdateItemCommand':
      return stampUpdate(input);
    case 'TransactWriteItemsCommand':
      return {
        ...input,
        TransactItems: asArray(input.TransactItems).map((action) => {
          const a = action as Input;
          if (a.Put !== undefined)
            return { ...a, Put: { ...(a.Put as Input), Item: stampItem((a.Put as Input).Item) } };
          if (a.Update !== undefined) return { ...a, Update: stampUpdate(a.Update as Input) };
          return a;
        }),
      };
    case 'BatchWriteItemCommand':
      return {
        ...input,
        RequestItems: Object.fromEntries(
          Object.entries((input.RequestItems ?? {}) as Record<string, unknown>).map(([table, requests]) => [
            table,
            asArray(requests).map((request) => {
              const put = (request as Input).PutRequest as Input | undefined;
              return put === undefined
                ? request
                : { ...(request as Input), PutRequest: { ...put, Item: stampItem(put.Item) } };
            }),
          ]),
        ),
      };
    default:
      return input;
  }
}

function asArray(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

/** The key's `id` and `workspace` as strings, and whether they came as attribute values (`{ S }`). */
function keyOf(item: unknown): { id: string; workspace: string; wire: boolean } | undefined {
  if (item === null || typeof item !== 'object') return undefined;
  const { id, workspace } = item as Input;
  if (typeof id === 'string' && typeof workspace === 'string') return { id, workspace, wire: false };
  const wireString = (v: unknown) =>
    v !== null && typeof v === 'object' && typeof (v as { S?: unknown }).S === 'string'
      ? (v as { S: string }).S
      : undefined;
  const wid = wireString(id);
  const wws = wireString(workspace);
  return wid !== undefined && wws !== undefined ? { id: wid, workspace: wws, wire: true } : undefined;
}

function stampItem(item: unknown): unknown {
  const key = keyOf(item);
  if (key === undefined) return item;
  const value = workspaceIndexKey(key.workspace, key.id);
  return { ...(item as Input), [WORKSPACE_INDEX_KEY]: key.wire ? { S: value } : value };
}

/** `SET gsi5pk = …` joins the update's SET clause, or starts one. */
function stampUpdate(update: Input): Input {
  const key = keyOf(update.Key);
  const expression = update.UpdateExpression;
  const names = (update.ExpressionAttributeNames as Record<string, string> | undefined) ?? {};
  // An update that names the key itself (the backfill) sets it on purpose.
  if (
    key === undefined ||
    typeof expression !== 'string' ||
    Object.values(names).includes(WORKSPACE_INDEX_KEY)
  )
    return update;
  const value = workspaceIndexKey(key.workspace, key.id);
  const set = /(^|\s)SET\s/i.exec(expression);
  const assign = `${NAME} = ${VALUE}`;
  return {
    ...update,
    UpdateExpression:
      set === null
        ? `SET ${assign} ${expression}`
        : `${expression.slice(0, set.index + set[0].length)}${assign}, ${expression.slice(set.index + set[0].length)}`,
    ExpressionAttributeNames: { ...names, [NAME]: WORKSPACE_INDEX_KEY },
    ExpressionAttributeValues: {
      ...((update.ExpressionAttributeValues as Input | undefined) ?? {}),
      [VALUE]: key.wire ? { S: value } : value,
    },
  };
}
