/**
 * Publisher. Triggered by the breadcrumbs table's DynamoDB stream (batch, bisect on error, partial batch
 * failures). Reads stream images; adopts plain puts into the table; puts change events on the crumbs bus and on the
 * other buses of the pool that hold rules of the event's workspace (reads `bus-placement` breadcrumbs, cached);
 * sheds events over the breadth budget (adds to `#budget#` counters past a step, writes one loop-stop record);
 * adds the model usage the new writes record to `#usage#` counters, once per counter per batch; sends each change's
 * summary to its workspace's change channel (AppSync Events, when configured), beside the routing.
 * (Embeddings are the indexer's, from those events.)
 */
import middy from '@middy/core';
import type { DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';
import { DynamoBreadcrumbStore, defaultDocumentClient } from '#shared/adapters/dynamodb/breadcrumb-store.ts';
import { DynamoBudgetCounters } from '#shared/adapters/dynamodb/budget-counters.ts';
import { DynamoUsageTotals } from '#shared/adapters/dynamodb/usage-totals.ts';
import { sealedWorkspaces } from '#shared/adapters/dynamodb/workspace-seal.ts';
import { defaultEventBridgeClient, EventBridgeBus } from '#shared/adapters/eventbridge/event-bus.ts';
import { deltaChannelFromEnv } from '#shared/adapters/events/appsync-publisher.ts';
import { busPoolOf, PublisherEnvSchema, parseEnv } from '#shared/config.ts';
import { BreadthBudget } from '#shared/core/stream/breadth-budget.ts';
import { publishStreamBatch } from '#shared/core/stream/publisher.ts';
import { ChannelChangeFeed } from '#shared/core/streaming/change-channels.ts';
import { PlacementRoutes } from '#shared/routing/bus-placement.ts';
import { ENV } from '#shared/topology.ts';
import { instrumented, powertools } from '../wiring/powertools.ts';

const env = parseEnv(PublisherEnvSchema);
const pt = powertools('crumbs-publisher', [defaultDocumentClient(), defaultEventBridgeClient()]);
const { logger, metrics } = pt;
const store = new DynamoBreadcrumbStore({ tableName: env[ENV.tableName] });
const bus = new EventBridgeBus(env[ENV.busName]);
const routes = new PlacementRoutes(store, busPoolOf(env), env[ENV.busPlacementCacheMs]);
const budget = new BreadthBudget({
  counters: new DynamoBudgetCounters(env[ENV.tableName]),
  store,
  limits: {
    threadBudget: env[ENV.threadBudget],
    workspaceEventRate: env[ENV.workspaceEventRate],
    workspaceEventWindowSeconds: env[ENV.workspaceEventWindowSeconds],
  },
  log: logger,
});

// The model usage the new writes record, summed into the workspace's counters once per batch.
const usage = new DynamoUsageTotals(env[ENV.tableName]);
// Workspaces a deletion has sealed: their records are passed over (the table refuses their writes anyway).
const seals = sealedWorkspaces(defaultDocumentClient(), env[ENV.tableName]);

// Live views' change channels: a publish outlasting this holds the batch's end no longer (routing never waits).
const changeChannel = deltaChannelFromEnv(process.env, { timeoutMs: env[ENV.changePublishTimeoutMs] });
const changeFeed = changeChannel ? new ChannelChangeFeed(changeChannel, logger) : undefined;

export const handler = instrumented(
  middy(async (event: DynamoDBStreamEvent): Promise<DynamoDBBatchResponse> => {
    const outcome = await publishStreamBatch(event.Records, {
      bus,
      routes,
      adopter: store,
      tagItems: store,
      budget,
      usage,
      seals,
      changeFeed,
      log: logger,
      tracing: pt.tracing,
    });
    metrics.addMetric('ChangeEventsPublished', 'Count', outcome.published);
    metrics.addMetric('ChangeEventsShed', 'Count', outcome.shed);
    metrics.addMetric('PlainPutsAdopted', 'Count', outcome.adopted);
    metrics.addMetric('PlainPutsRejected', 'Count', outcome.rejected);
    if (outcome.feed) {
      metrics.addMetric('ChangeSummariesPublished', 'Count', outcome.feed.published);
      metrics.addMetric('ChangeSummariesFailed', 'Count', outcome.feed.failed);
    }
    return { batchItemFailures: outcome.batchItemFailures };
  }),
  pt,
);
