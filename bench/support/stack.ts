/**
 * The local stack as the benchmarks start it (free ports, no demo data, token `bench`), and the two ways they
 * reach it: a store that talks to DynamoDB Local directly (the bench's own reads and writes, never counted), and
 * a stack whose DynamoDB, SQS and EventBridge requests pass counting proxies.
 */

import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '#local/aws-env.ts';
import { type LocalStack, type LocalStackOptions, startLocalStack } from '#local/stack.ts';
import { DynamoBreadcrumbStore } from '#shared/adapters/dynamodb/breadcrumb-store.ts';
import { crumbsDocumentClient } from '#shared/adapters/dynamodb/client.ts';
import { topology } from '#shared/topology.ts';
import { type CountingProxy, startCountingProxy } from './counting-proxy.ts';

export type Service = 'dynamodb' | 'sqs' | 'eventbridge';

export function startBenchStack(options: LocalStackOptions = {}): Promise<LocalStack> {
  return startLocalStack({
    apiPort: 0,
    dynamodbPort: 0,
    sqsPort: 0,
    eventbridgePort: 0,
    schedulerPort: 0,
    token: 'bench',
    seedDemo: false,
    ...options,
  });
}

/** A store on DynamoDB Local itself (not through a proxy). */
export function directStore(endpoint: string): DynamoBreadcrumbStore {
  return new DynamoBreadcrumbStore({
    tableName: topology.table.name,
    client: crumbsDocumentClient(
      new DynamoDBClient({ endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS }),
    ),
  });
}

export interface CountedStack {
  stack: LocalStack;
  /** The proxy in front of each service (every request the stack makes passes one). */
  proxies: Record<Service, CountingProxy>;
  /** The bench's own store, straight to DynamoDB Local. */
  store: DynamoBreadcrumbStore;
  stop(): Promise<void>;
}

export async function startCountedStack(options: LocalStackOptions = {}): Promise<CountedStack> {
  const proxies: Partial<Record<Service, CountingProxy>> = {};
  const real: Partial<Record<Service, string>> = {};
  const stack = await startBenchStack({
    ...options,
    interpose: async (service, endpoint) => {
      real[service] = endpoint;
      proxies[service] = await startCountingProxy(endpoint);
      return proxies[service].endpoint;
    },
  });
  const all = proxies as Record<Service, CountingProxy>;
  return {
    stack,
    proxies: all,
    store: directStore(real.dynamodb ?? stack.endpoints.dynamodb),
    stop: async () => {
      await stack.stop();
      for (const p of Object.values(all)) await p.stop();
    },
  };
}
