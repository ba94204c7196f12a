/**
 * bench:cost computes the write units of multi-item writes by DynamoDB's rules (bench/support/capacity.ts) because
 * DynamoDB Local under-counts them. The calculator is checked here against what DynamoDB Local does report
 * correctly: single-item puts, overwrites that move an index key, deletes, and single-item transactions (whose
 * index arm DynamoDB Local doubles, unlike DynamoDB: checked as such).
 */
import {
  DeleteItemCommand,
  DynamoDBClient,
  PutItemCommand,
  TransactWriteItemsCommand,
} from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { describe, expect, it } from 'vitest';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '#local/aws-env.ts';
import { topology } from '#shared/topology.ts';
import { CapacityCalculator } from '../../bench/support/capacity.ts';
import { localStack, uniqueWorkspace } from '../support/local.ts';

function total(c: { CapacityUnits?: number } | undefined): number {
  return c?.CapacityUnits ?? Number.NaN;
}

describe('CapacityCalculator', () => {
  it('gives the units DynamoDB Local reports for single-item writes, indexes included', async () => {
    const client = new DynamoDBClient({
      endpoint: localStack().dynamodb,
      region: LOCAL_REGION,
      credentials: LOCAL_CREDENTIALS,
    });
    const calculator = new CapacityCalculator(topology.table);
    const ws = uniqueWorkspace('cap');
    const TableName = topology.table.name;
    const big = 'x'.repeat(1500);
    const items = [
      { id: 'plain', workspace: ws, kind: 'test', n: 12345.678, flag: true, list: ['a', 1, { m: 'v' }] },
      { id: 'head', workspace: ws, kind: 'test', gsi1pk: `${ws}#s#a`, gsi1sk: '2026#head', big },
      { id: 'head', workspace: ws, kind: 'test', gsi1pk: `${ws}#s#b`, gsi1sk: '2026#head', big },
      {
        id: 'version',
        workspace: ws,
        gsi3pk: `${ws}#c#1`,
        gsi3sk: '2026#v',
        kind: 'version',
        title: 't',
        context: { big },
      },
      {
        id: 'tag',
        workspace: ws,
        gsi1pk: `${ws}#t#x`,
        gsi1sk: 's',
        gsi2pk: `${ws}#st#x`,
        gsi2sk: 's',
        ref: 'a',
      },
    ];
    for (const item of items) {
      const Item = marshall(item);
      const out = await client.send(new PutItemCommand({ TableName, Item, ReturnConsumedCapacity: 'TOTAL' }));
      const mine = calculator.observeSingle('PutItem', { Item });
      expect(mine.table + Object.values(mine.indexes).reduce((a, b) => a + b, 0), item.id).toBe(
        total(out.ConsumedCapacity),
      );
    }
    const Key = marshall({ id: 'head', workspace: ws });
    const deleted = await client.send(
      new DeleteItemCommand({ TableName, Key, ReturnConsumedCapacity: 'TOTAL' }),
    );
    const mine = calculator.observeSingle('DeleteItem', { Key });
    expect(mine.table + Object.values(mine.indexes).reduce((a, b) => a + b, 0)).toBe(
      total(deleted.ConsumedCapacity),
    );

    const Item = marshall({ id: 'tx', workspace: ws, kind: 'test', gsi1pk: `${ws}#s#a`, gsi1sk: 's', big });
    const tx = await client.send(
      new TransactWriteItemsCommand({
        TransactItems: [{ Put: { TableName, Item } }],
        ReturnConsumedCapacity: 'TOTAL',
      }),
    );
    const computed = calculator.writeRequest('TransactWriteItems', {
      TransactItems: [{ Put: { TableName, Item } }],
    });
    // The table arm doubles in a transaction, the index arm does not (what DynamoDB charges; capacity.ts names
    // the measurement). DynamoDB Local doubles the index arm too: the conservative reading bench:cost prints beside.
    expect(computed).toEqual({ table: 4, indexes: { gsi1: 2 }, indexUnitsInTransactions: 2 });
    expect(computed.table + 2 * (computed.indexes.gsi1 ?? 0)).toBe(total(tx.ConsumedCapacity?.[0]));
    client.destroy();
  });

  it('counts every item of a multi-item transaction twice, and each index entry once', () => {
    const calculator = new CapacityCalculator(topology.table);
    const put = (item: Record<string, unknown>) => ({ Put: { TableName: 't', Item: marshall(item) } });
    const units = calculator.writeRequest('TransactWriteItems', {
      TransactItems: [
        put({ id: 'h', workspace: 'w', gsi1pk: 'w#s#x', gsi1sk: 's', gsi3pk: 'w#th#t', gsi3sk: 's' }),
        put({ id: 'h#v#1', workspace: 'w', gsi3pk: 'w#c#0', gsi3sk: 's' }),
        put({ id: 'h#t#a', workspace: 'w', gsi1pk: 'w#t#a', gsi1sk: 's', gsi2pk: 'w#st#x#a', gsi2sk: 's' }),
      ],
    });
    expect(units).toEqual({ table: 6, indexes: { gsi1: 2, gsi2: 1, gsi3: 2 }, indexUnitsInTransactions: 5 });
  });
});
