/**
 * The leases every stream crumbs holds for a caller takes first (`shared/core/streaming/stream-leases.ts`): kept in
 * the table as the workspace's (and the token's) `#slots#streams` item, so every Lambda instance — and, under
 * `crumbs dev`, the local API — counts the same.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { DynamoWorkspaceSlots } from '#shared/adapters/dynamodb/workspace-slots.ts';
import { DEFAULT_STREAM_LIMITS, StreamLeases } from '#shared/core/streaming/stream-leases.ts';
import type { Log } from '#shared/ports/log.ts';

export function streamLeasesFor(
  tableName: string,
  log: Log = new Logger({ serviceName: 'crumbs-streams' }),
): StreamLeases {
  return new StreamLeases(new DynamoWorkspaceSlots(tableName, 'streams'), DEFAULT_STREAM_LIMITS, log);
}
