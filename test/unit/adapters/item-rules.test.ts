/**
 * The item layer's rule that every item is in the workspace index, on every write shape crumbs' client sends: a
 * put alone, in a transaction or a batch, an update with or without a SET clause, in both input shapes (the
 * document client's plain values and the low-level client's attribute values) — and through a real client's
 * middleware, without touching the caller's objects.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { PutCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { crumbsDocumentClient } from '#shared/adapters/dynamodb/client.ts';
import { stampWrites } from '#shared/adapters/dynamodb/item-rules.ts';
import { workspaceIndexKey, workspaceIndexShard } from '#shared/adapters/dynamodb/workspace-index.ts';

const key = { id: '#claim#tool#01J@1', workspace: 'team-a' };
const wsx = workspaceIndexKey('team-a', key.id);

describe('the workspace index rule', () => {
  it('keys an item by its workspace and a shard of its id', () => {
    expect(wsx).toBe(`team-a#w#${workspaceIndexShard(key.id)}`);
    const shards = new Set(Array.from({ length: 200 }, (_, i) => workspaceIndexShard(`01J${i}`)));
    expect(shards.size).toBe(8);
  });

  it('gives every put its key: alone, in a transaction, in a batch, plain or as attribute values', () => {
    expect(stampWrites('PutItemCommand', { TableName: 't', Item: { ...key, kind: 'claim' } })).toEqual({
      TableName: 't',
      Item: { ...key, kind: 'claim', gsi5pk: wsx },
    });
    expect(
      stampWrites('PutItemCommand', {
        Item: { id: { S: key.id }, workspace: { S: 'team-a' }, n: { N: '1' } },
      }),
    ).toEqual({ Item: { id: { S: key.id }, workspace: { S: 'team-a' }, n: { N: '1' }, gsi5pk: { S: wsx } } });
    const transaction = stampWrites('TransactWriteItemsCommand', {
      TransactItems: [
        { Put: { Item: { ...key } } },
        { Delete: { Key: { ...key } } },
        { ConditionCheck: { Key: { ...key }, ConditionExpression: 'attribute_exists(id)' } },
      ],
    });
    expect(transaction.TransactItems).toEqual([
      { Put: { Item: { ...key, gsi5pk: wsx } } },
      { Delete: { Key: { ...key } } },
      { ConditionCheck: { Key: { ...key }, ConditionExpression: 'attribute_exists(id)' } },
    ]);
    const batch = stampWrites('BatchWriteItemCommand', {
      RequestItems: { t: [{ PutRequest: { Item: { ...key } } }, { DeleteRequest: { Key: { ...key } } }] },
    });
    expect(batch.RequestItems).toEqual({
      t: [{ PutRequest: { Item: { ...key, gsi5pk: wsx } } }, { DeleteRequest: { Key: { ...key } } }],
    });
  });

  it('sets it in every update, joining a SET clause or starting one', () => {
    const joined = stampWrites('UpdateItemCommand', {
      Key: key,
      UpdateExpression: 'SET waiters.#a = :w ADD #n :one',
      ExpressionAttributeNames: { '#a': 'x', '#n': 'n' },
      ExpressionAttributeValues: { ':w': 1, ':one': 1 },
    });
    expect(joined).toMatchObject({
      UpdateExpression: 'SET #crumbs_wsx = :crumbs_wsx, waiters.#a = :w ADD #n :one',
      ExpressionAttributeNames: { '#a': 'x', '#n': 'n', '#crumbs_wsx': 'gsi5pk' },
      ExpressionAttributeValues: { ':w': 1, ':one': 1, ':crumbs_wsx': wsx },
    });
    const started = stampWrites('UpdateItemCommand', {
      Key: key,
      UpdateExpression: 'REMOVE waiters.#a ADD #n :minus',
    });
    expect(started.UpdateExpression).toBe('SET #crumbs_wsx = :crumbs_wsx REMOVE waiters.#a ADD #n :minus');
    // `reset` is no SET clause; a lower-case `set` is.
    expect(
      stampWrites('UpdateItemCommand', { Key: key, UpdateExpression: 'ADD reset_count :one' })
        .UpdateExpression,
    ).toBe('SET #crumbs_wsx = :crumbs_wsx ADD reset_count :one');
    expect(
      stampWrites('UpdateItemCommand', { Key: key, UpdateExpression: 'add n :one set a = :a' })
        .UpdateExpression,
    ).toBe('add n :one set #crumbs_wsx = :crumbs_wsx, a = :a');
    // An update that names the key itself (the backfill) is left as written.
    const explicit = {
      Key: key,
      UpdateExpression: 'SET #pk = :pk',
      ExpressionAttributeNames: { '#pk': 'gsi5pk' },
      ExpressionAttributeValues: { ':pk': wsx },
    };
    expect(stampWrites('UpdateItemCommand', explicit)).toEqual(explicit);
  });

  it('leaves reads, deletes and items without a string id and workspace alone', () => {
    const query = { IndexName: 'gsi1', KeyConditionExpression: '#pk = :pk' };
    expect(stampWrites('QueryCommand', query)).toBe(query);
    expect(stampWrites('PutItemCommand', { Item: { id: 1, workspace: 'w' } })).toEqual({
      Item: { id: 1, workspace: 'w' },
    });
  });

  it("runs in crumbs' client on every write it sends, leaving the caller's input as it was", async () => {
    const sent: Record<string, unknown>[] = [];
    const raw = new DynamoDBClient({
      region: 'us-east-1',
      credentials: { accessKeyId: 'x', secretAccessKey: 'x' },
    });
    const client = crumbsDocumentClient(raw);
    // The request is caught before it is signed and sent: what the item rules made of it is what would go out.
    raw.middlewareStack.add(
      (_next, context) => async (args) => {
        // The seal lookups (a GetItem of the workspace's deletion record) answer: no record.
        if (context.commandName !== 'GetItemCommand') sent.push(args.input as Record<string, unknown>);
        return { output: { $metadata: {} } as never, response: {} };
      },
      { step: 'serialize', name: 'capture', priority: 'high' },
    );
    const update = {
      TableName: 't',
      Key: key,
      UpdateExpression: 'ADD #n :one',
      ExpressionAttributeNames: { '#n': 'n' },
      ExpressionAttributeValues: { ':one': 1 },
    };
    await client.send(new UpdateCommand(update));
    await client.send(new UpdateCommand(update));
    await client.send(new PutCommand({ TableName: 't', Item: { ...key, kind: 'budget' } }));
    await client.send(
      new TransactWriteCommand({ TransactItems: [{ Put: { TableName: 't', Item: { ...key } } }] }),
    );
    expect(update.UpdateExpression).toBe('ADD #n :one');
    expect(sent[0]?.UpdateExpression).toBe('SET #crumbs_wsx = :crumbs_wsx ADD #n :one');
    expect(sent[1]?.UpdateExpression).toBe('SET #crumbs_wsx = :crumbs_wsx ADD #n :one');
    expect(sent[2]).toMatchObject({ Item: { ...key, kind: 'budget', gsi5pk: wsx } });
    expect(JSON.stringify(sent[3])).toContain(wsx);
  });
});
