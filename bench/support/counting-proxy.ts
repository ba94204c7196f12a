/**
 * A counting HTTP proxy for benchmarks (and tests that inject faults): forwards every request to a local AWS
 * service endpoint and counts it by operation (the X-Amz-Target header of the JSON protocols: DynamoDB, DynamoDB
 * Streams, SQS, EventBridge).
 */
import { createServer, request } from 'node:http';

/** One forwarded request: its operation, and when it was sent and answered (performance.now()). */
export interface ProxiedCall {
  operation: string;
  startedAt: number;
  endedAt: number;
  /** The HTTP status of the answer (400: a DynamoDB condition failed, among others). */
  status: number;
}

export interface CountingProxy {
  readonly endpoint: string;
  /** Calls `listener` for every request answered after this call, until the function it returns is called. */
  watch(listener: (call: ProxiedCall) => void): () => void;
  counts(): Record<string, number>;
  total(filter?: (operation: string) => boolean): number;
  reset(): void;
  stop(): Promise<void>;
}

export interface CountingProxyOptions {
  /**
   * Requests to answer with a 500 (an AWS JSON `InternalFailure`) instead of forwarding — fault injection for tests;
   * asked once per request, with its operation. Refused requests are counted too.
   */
  refuse?: (operation: string) => boolean;
}

export async function startCountingProxy(
  target: string,
  options: CountingProxyOptions = {},
): Promise<CountingProxy> {
  const to = new URL(target);
  const counts = new Map<string, number>();
  const listeners = new Set<(call: ProxiedCall) => void>();
  const server = createServer((req, res) => {
    const operation = String(req.headers['x-amz-target'] ?? `${req.method} ${req.url}`);
    counts.set(operation, (counts.get(operation) ?? 0) + 1);
    if (options.refuse?.(operation)) {
      req.resume();
      res.writeHead(500, { 'content-type': 'application/x-amz-json-1.1' });
      res.end(JSON.stringify({ __type: 'InternalFailure', message: 'refused by the counting proxy' }));
      return;
    }
    const startedAt = performance.now();
    const upstream = request(
      { hostname: to.hostname, port: to.port, path: req.url, method: req.method, headers: req.headers },
      (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
        up.on('end', () => {
          const call = { operation, startedAt, endedAt: performance.now(), status: up.statusCode ?? 0 };
          for (const listener of listeners) listener(call);
        });
      },
    );
    upstream.on('error', () => {
      res.writeHead(502);
      res.end();
    });
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    watch: (listener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    counts: () => Object.fromEntries(counts),
    total: (filter = () => true) => [...counts].filter(([op]) => filter(op)).reduce((n, [, c]) => n + c, 0),
    reset: () => counts.clear(),
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? Number.NaN;
}
