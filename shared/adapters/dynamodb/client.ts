/**
 * crumbs' DynamoDB document client: one per cold start (`defaultDocumentClient`), or one made from a given
 * low-level client (`crumbsDocumentClient`: tests, benchmarks, the local stack). Numbers convert as
 * `translateConfig` says.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { translateConfig } from './items.ts';

export { translate } from './table-reads.ts';

export function crumbsDocumentClient(client: DynamoDBClient): DynamoDBDocumentClient {
  const documents = DynamoDBDocumentClient.from(client, translateConfig());
  return documents;
}

let defaultClient: DynamoDBDocumentClient | undefined;
/** Module-scope client, created once per cold start. Endpoint and region come from the standard AWS env. */
export function defaultDocumentClient(): DynamoDBDocumentClient {
  defaultClient ??= crumbsDocumentClient(new DynamoDBClient({}));
  return defaultClient;
}
