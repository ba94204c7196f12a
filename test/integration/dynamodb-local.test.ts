/**
 * DynamoDB Local refusing a port that something else took: the start fails fast with a message saying so, which
 * is what the local stack retries on with another free port when the port was picked for it (local/stack.ts).
 */
import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { startDynamoDbLocal } from '#local/dynamodb-local.ts';

describe('DynamoDB Local on a taken port', () => {
  it('fails with "address already in use", naming the port', async () => {
    // Something holding the port that is not DynamoDB: connections are dropped, as to a port used elsewhere.
    const holder = createServer((socket) => socket.destroy());
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', () => resolve()));
    const port = (holder.address() as { port: number }).port;
    try {
      await expect(startDynamoDbLocal({ port })).rejects.toThrow(
        `DynamoDB Local could not listen on port ${port}: address already in use`,
      );
    } finally {
      holder.close();
    }
  });
});
