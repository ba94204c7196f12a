/**
 * A metering HTTP proxy for benchmarks: forwards every request to a local AWS service endpoint (JSON protocols:
 * DynamoDB, DynamoDB Streams, SQS, EventBridge), lets the benchmark rewrite the request body before it goes on
 * (e.g. add `ReturnConsumedCapacity`) and shows it each request with its response, so it can meter what AWS bills.
 *
 * Why a proxy rather than SDK middleware: the handlers build their own module-scope clients; a proxy in front of
 * the local endpoint meters every call of every function without a line of benchmark code in production modules.
 * The local services do not check SigV4 signatures, so a rewritten body still goes through.
 */
import { createServer, request } from 'node:http';
import { gunzipSync } from 'node:zlib';

export interface MeteredCall {
  /** The X-Amz-Target operation, e.g. `DynamoDB_20120810.PutItem`. */
  readonly operation: string;
  readonly requestBody: unknown;
  readonly requestBytes: number;
  readonly status: number;
  readonly responseBody: unknown;
}

export interface MeteringProxyOptions {
  /** Returns the body to send on (parsed JSON in, JSON out); absent: sent as received. */
  rewrite?: (operation: string, body: Record<string, unknown>) => Record<string, unknown>;
  onCall: (call: MeteredCall) => void;
}

export interface MeteringProxy {
  readonly endpoint: string;
  stop(): Promise<void>;
}

export async function startMeteringProxy(
  target: string,
  options: MeteringProxyOptions,
): Promise<MeteringProxy> {
  const to = new URL(target);
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const operation = String(req.headers['x-amz-target'] ?? `${req.method} ${req.url}`);
      let raw = Buffer.concat(chunks);
      let requestBody: unknown = parseJson(raw);
      if (options.rewrite && isObject(requestBody)) {
        requestBody = options.rewrite(operation, requestBody);
        raw = Buffer.from(JSON.stringify(requestBody));
      }
      const headers = { ...req.headers, 'content-length': String(raw.length) };
      const upstream = request(
        { hostname: to.hostname, port: to.port, path: req.url, method: req.method, headers },
        (up) => {
          const out: Buffer[] = [];
          up.on('data', (c: Buffer) => out.push(c));
          up.on('end', () => {
            const body = Buffer.concat(out);
            res.writeHead(up.statusCode ?? 502, up.headers);
            res.end(body);
            const plain = up.headers['content-encoding'] === 'gzip' ? safeGunzip(body) : body;
            options.onCall({
              operation,
              requestBody,
              requestBytes: raw.length,
              status: up.statusCode ?? 502,
              responseBody: parseJson(plain),
            });
          });
        },
      );
      upstream.on('error', () => {
        res.writeHead(502);
        res.end();
      });
      upstream.end(raw);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function parseJson(buffer: Buffer): unknown {
  if (buffer.length === 0) return undefined;
  try {
    return JSON.parse(buffer.toString('utf8')) as unknown;
  } catch {
    return undefined;
  }
}

function safeGunzip(buffer: Buffer): Buffer {
  try {
    return gunzipSync(buffer);
  } catch {
    return buffer;
  }
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
