/**
 * DynamoDB Local refusing a port that something else took: the start fails fast with a message saying so, which
 * is what a start on port 0 retries on with another free port. And a server that answers like DynamoDB on that
 * port is not taken for the one just started: a stack that did would use another stack's tables. It listens on
 * loopback only where the Java runtime can run the launcher, and says so where it cannot.
 */
import { createServer as createHttpServer } from 'node:http';
import { createServer, type Server } from 'node:net';
import { describe, expect, it } from 'vitest';
import { startDynamoDbLocal } from '#local/dynamodb-local.ts';

async function listen(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return (server.address() as { port: number }).port;
}

describe('DynamoDB Local on a taken port', () => {
  it('fails with "address already in use", naming the port', async () => {
    // Something holding the port that is not DynamoDB: connections are dropped, as to a port used elsewhere.
    const holder = createServer((socket) => socket.destroy());
    const port = await listen(holder);
    try {
      await expect(startDynamoDbLocal({ port })).rejects.toThrow(
        `DynamoDB Local could not listen on port ${port}: address already in use`,
      );
    } finally {
      holder.close();
    }
  });

  it.skipIf(process.platform !== 'linux')(
    'is not fooled by another DynamoDB answering on the port (Linux: /proc says who listens)',
    async () => {
      let probes = 0;
      const impostor = createHttpServer((req, res) => {
        req.resume();
        req.on('end', () => {
          probes++;
          res.writeHead(200, { 'content-type': 'application/x-amz-json-1.0' });
          res.end(JSON.stringify({ TableNames: ['someone-elses'] }));
        });
      });
      const port = await listen(impostor);
      try {
        await expect(startDynamoDbLocal({ port })).rejects.toThrow(
          `DynamoDB Local could not listen on port ${port}: address already in use`,
        );
        // The probe did reach the impostor and got DynamoDB's answer; it was refused for who gave it.
        expect(probes).toBeGreaterThan(0);
      } finally {
        impostor.close();
      }
    },
  );

  it('picks a free port when given 0', async () => {
    const ddb = await startDynamoDbLocal({ port: 0 });
    try {
      expect(ddb.endpoint).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(ddb.endpoint).not.toMatch(/:0$/);
      const res = await fetch(ddb.endpoint, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-amz-json-1.0',
          'x-amz-target': 'DynamoDB_20120810.ListTables',
          authorization:
            'AWS4-HMAC-SHA256 Credential=local/20200101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=0',
        },
        body: '{}',
      });
      expect(await res.json()).toEqual({ TableNames: [] });
    } finally {
      await ddb.stop();
    }
  });
});

describe('DynamoDB Local’s address', () => {
  it('listens on loopback only, and falls back to the plain jar, saying so, where Java cannot run source files', async () => {
    const lines: string[] = [];
    const onLoopback = await startDynamoDbLocal({ port: 0 });
    try {
      expect(onLoopback.loopbackOnly).toBe(true);
    } finally {
      await onLoopback.stop();
    }
    // A runtime without the jdk.compiler module, as a JRE is: the launcher cannot start.
    const before = process.env.JDK_JAVA_OPTIONS;
    process.env.JDK_JAVA_OPTIONS = '--limit-modules java.se';
    try {
      const everywhere = await startDynamoDbLocal({ port: 0, log: (line) => lines.push(line) });
      try {
        expect(everywhere.loopbackOnly).toBe(false);
        expect(lines.join('\n')).toMatch(/WARNING .*listens on every interface/);
      } finally {
        await everywhere.stop();
      }
    } finally {
      if (before === undefined) delete process.env.JDK_JAVA_OPTIONS;
      else process.env.JDK_JAVA_OPTIONS = before;
    }
  });
});
