/**
 * Creates the emulated resources from the topology declaration (idempotently): the table with its indexes, stream
 * and TTL; the queues with their DLQs and redrive policies; the compiled rule targets' DLQ. The CDK app builds the
 * AWS ones from the same declaration (`infra/`).
 */

import {
  CreateTableCommand,
  DescribeTableCommand,
  type DynamoDBClient,
  type Projection,
  ResourceInUseException,
  UpdateTableCommand,
  UpdateTimeToLiveCommand,
} from '@aws-sdk/client-dynamodb';
import {
  CreateEventBusCommand,
  type EventBridgeClient,
  PutRuleCommand,
  PutTargetsCommand,
  ResourceAlreadyExistsException,
} from '@aws-sdk/client-eventbridge';
import {
  ConflictException,
  CreateScheduleGroupCommand,
  type SchedulerClient,
} from '@aws-sdk/client-scheduler';
import { CreateQueueCommand, GetQueueAttributesCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { crumbsDocumentClient } from '#shared/adapters/dynamodb/client.ts';
import {
  backfillWorkspaceIndex,
  markWorkspaceIndexComplete,
  workspaceIndexComplete,
} from '#shared/adapters/dynamodb/workspace-index.ts';
import { embeddedSchemas } from '#shared/core/stream/vector-search.ts';
import {
  type GsiDeclaration,
  indexerPattern,
  type QueueDeclaration,
  ruleManagerPattern,
  type TableDeclaration,
  topology,
} from '#shared/topology.ts';

export async function ensureTable(
  client: DynamoDBClient,
  table: TableDeclaration = topology.table,
): Promise<{ streamArn: string; created: boolean }> {
  let created = true;
  try {
    await client.send(
      new CreateTableCommand({
        TableName: table.name,
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: attributeDefinitions([
          table.partitionKey,
          table.sortKey,
          ...table.gsis.flatMap((g) => [g.partitionKey, g.sortKey]),
        ]),
        KeySchema: [
          { AttributeName: table.partitionKey, KeyType: 'HASH' },
          { AttributeName: table.sortKey, KeyType: 'RANGE' },
        ],
        GlobalSecondaryIndexes: table.gsis.map((g) => ({
          IndexName: g.name,
          KeySchema: [
            { AttributeName: g.partitionKey, KeyType: 'HASH' },
            { AttributeName: g.sortKey, KeyType: 'RANGE' },
          ],
          Projection: projection(g),
        })),
        StreamSpecification: { StreamEnabled: true, StreamViewType: 'NEW_AND_OLD_IMAGES' },
      }),
    );
    await client.send(
      new UpdateTimeToLiveCommand({
        TableName: table.name,
        TimeToLiveSpecification: { AttributeName: table.ttlAttribute, Enabled: true },
      }),
    );
  } catch (error) {
    if (!(error instanceof ResourceInUseException)) throw error;
    created = false;
  }
  const described = await client.send(new DescribeTableCommand({ TableName: table.name }));
  const streamArn = described.Table?.LatestStreamArn;
  if (!streamArn) throw new Error(`table ${table.name} has no stream`);
  // A table kept in a data directory by an older crumbs lacks indexes added since: add them (one per update, as
  // DynamoDB allows).
  const existing = new Set((described.Table?.GlobalSecondaryIndexes ?? []).map((g) => g.IndexName));
  for (const g of table.gsis.filter((g) => !existing.has(g.name))) {
    await client.send(
      new UpdateTableCommand({
        TableName: table.name,
        AttributeDefinitions: attributeDefinitions([g.partitionKey, g.sortKey]),
        GlobalSecondaryIndexUpdates: [
          {
            Create: {
              IndexName: g.name,
              KeySchema: [
                { AttributeName: g.partitionKey, KeyType: 'HASH' },
                { AttributeName: g.sortKey, KeyType: 'RANGE' },
              ],
              Projection: projection(g),
            },
          },
        ],
      }),
    );
  }
  return { streamArn, created };
}

/** Every key attribute is a string; an index may key on a table key (the workspace index sorts by `id`). */
function attributeDefinitions(names: readonly string[]): { AttributeName: string; AttributeType: 'S' }[] {
  return [...new Set(names)].map((name) => ({ AttributeName: name, AttributeType: 'S' }));
}

function projection(g: GsiDeclaration): Projection {
  return g.include
    ? { ProjectionType: 'INCLUDE', NonKeyAttributes: [...g.include] }
    : { ProjectionType: 'ALL' };
}

/**
 * The workspace index of the table `ensureTable` made or found complete: a new table holds nothing written before the
 * index, so it is marked complete at once; a table kept in a data directory by an older crumbs gets its items the
 * index key first (the backfill, one Scan — a local table is small).
 */
export async function ensureWorkspaceIndex(
  client: DynamoDBClient,
  created: boolean,
  tableName: string = topology.table.name,
): Promise<{ backfilled: number }> {
  const documents = crumbsDocumentClient(client);
  if (!created && (await workspaceIndexComplete(documents, tableName))) return { backfilled: 0 };
  let backfilled = 0;
  let cursor: string | undefined;
  if (!created) {
    do {
      const page = await backfillWorkspaceIndex(documents, tableName, cursor !== undefined ? { cursor } : {});
      backfilled += page.stamped;
      cursor = page.cursor;
    } while (cursor !== undefined);
  }
  await markWorkspaceIndexComplete(documents, tableName, new Date());
  return { backfilled };
}

export interface ProvisionedQueue {
  url: string;
  arn: string;
  dlqUrl: string;
  dlqArn: string;
}

export async function ensureQueue(client: SQSClient, queue: QueueDeclaration): Promise<ProvisionedQueue> {
  const dlq = await client.send(new CreateQueueCommand({ QueueName: queue.dlqName }));
  const dlqUrl = dlq.QueueUrl!;
  const dlqArn = await queueArn(client, dlqUrl);
  const main = await client.send(
    new CreateQueueCommand({
      QueueName: queue.name,
      Attributes: {
        VisibilityTimeout: String(queue.visibilityTimeoutSeconds),
        RedrivePolicy: JSON.stringify({
          deadLetterTargetArn: dlqArn,
          maxReceiveCount: String(queue.maxReceiveCount),
        }),
      },
    }),
  );
  const url = main.QueueUrl!;
  return { url, arn: await queueArn(client, url), dlqUrl, dlqArn };
}

/** A queue with no DLQ of its own (a dead-letter destination, such as the rule targets' DLQ). */
export async function ensureDeadLetterQueue(
  client: SQSClient,
  name: string,
): Promise<{ url: string; arn: string }> {
  const out = await client.send(new CreateQueueCommand({ QueueName: name }));
  const url = out.QueueUrl!;
  return { url, arn: await queueArn(client, url) };
}

async function queueArn(client: SQSClient, url: string): Promise<string> {
  const out = await client.send(
    new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] }),
  );
  const arn = out.Attributes?.QueueArn;
  if (!arn) throw new Error(`queue ${url} has no ARN`);
  return arn;
}

/**
 * The crumbs bus and the static rules, each with its queue as the one target: the rule manager's (definition
 * changes) and the indexer's (changes of embedded schemas, as `CRUMBS_EMBED_SCHEMAS` says here).
 */
export async function ensureBusAndSystemRules(
  client: EventBridgeClient,
  queues: { ruleManager: string; indexer: string },
): Promise<void> {
  try {
    await client.send(new CreateEventBusCommand({ Name: topology.bus.name }));
  } catch (error) {
    if (!(error instanceof ResourceAlreadyExistsException)) throw error;
  }
  const systemRules = [
    {
      name: topology.bus.ruleManagerRuleName,
      pattern: ruleManagerPattern(),
      description: 'crumbs: definition changes and rules-sync requests → rule manager',
      target: { Id: 'rule-manager', Arn: queues.ruleManager },
    },
    {
      name: topology.bus.indexerRuleName,
      pattern: indexerPattern(embeddedSchemas()),
      description: 'crumbs: changes of schemas with embeddings → indexer',
      target: { Id: 'indexer', Arn: queues.indexer },
    },
  ];
  for (const rule of systemRules) {
    await client.send(
      new PutRuleCommand({
        Name: rule.name,
        EventBusName: topology.bus.name,
        EventPattern: JSON.stringify(rule.pattern),
        Description: rule.description,
      }),
    );
    await client.send(
      new PutTargetsCommand({ Rule: rule.name, EventBusName: topology.bus.name, Targets: [rule.target] }),
    );
  }
}

/**
 * The pool's other buses (`topology.bus.pool`; the first is made by `ensureBusAndSystemRules`). Buses a larger
 * pool of an earlier start left behind are kept, with their rules: the rule manager places no rules there,
 * and `crumbs rules sync` leaves them alone.
 */
export async function ensurePoolBuses(client: EventBridgeClient, pool: readonly string[]): Promise<void> {
  for (const name of pool.slice(1)) {
    try {
      await client.send(new CreateEventBusCommand({ Name: name }));
    } catch (error) {
      if (!(error instanceof ResourceAlreadyExistsException)) throw error;
    }
  }
}

/** The schedule group every timer and schedule lives in (`topology.timers.scheduleGroup`). */
export async function ensureScheduleGroup(client: SchedulerClient): Promise<void> {
  try {
    await client.send(new CreateScheduleGroupCommand({ Name: topology.timers.scheduleGroup }));
  } catch (error) {
    if (!(error instanceof ConflictException)) throw error;
  }
}
