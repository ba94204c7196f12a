/**
 * crumbs' DynamoDB document client: one per cold start (`defaultDocumentClient`), or one made from a given
 * low-level client (`crumbsDocumentClient`: tests, benchmarks, the local stack). Numbers convert as
 * `translateConfig` says, and every write follows the item layer's rules (`item-rules.ts`).
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { applyItemRules } from './item-rules.ts';
import { translateConfig } from './items.ts';

export { translate } from './table-reads.ts';

export function crumbsDocumentClient(client: DynamoDBClient): DynamoDBDocumentClient {
  const documents = DynamoDBDocumentClient.from(client, translateConfig());
  applyItemRules(documents);
  return documents;
}

let defaultClient: DynamoDBDocumentClient | undefined;
/** Module-scope client, created once per cold start. Endpoint and region come from the standard AWS env. */
export function defaultDocumentClient(): DynamoDBDocumentClient {
  defaultClient ??= crumbsDocumentClient(new DynamoDBClient({}));
  return defaultClient;
}
