/**
 * Network guard benchmark: what the guard costs per request. Sequential GETs of a small body from a loopback
 * server, through Node's global fetch (keep-alive, no checks) and through `guardedFetch` (the name resolved and
 * checked, a connection of its own pinned to the checked address, the body capped), and a 4 MiB body through
 * both. Prints the median and p95 per request.
 *
 *   node bin/run-ts.js bench/network.bench.ts [--requests 500]
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import { guardedFetch } from '#shared/adapters/network/guarded-fetch.ts';

const { values } = parseArgs({ options: { requests: { type: 'string', default: '500' } } });
const requests = Number(values.requests);
const big = Buffer.alloc(4 * 1024 * 1024, 97);

const server = createServer((req, res) => {
  if (req.url === '/big') res.end(big);
  else res.end('{"ok":true}');
});
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const base = `http://localhost:${(server.address() as AddressInfo).port}`;

async function measure(name: string, fetchIt: typeof fetch, path: string, n: number): Promise<void> {
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const start = performance.now();
    const response = await fetchIt(`${base}${path}`);
    await response.arrayBuffer();
    times.push(performance.now() - start);
  }
  times.sort((a, b) => a - b);
  const at = (q: number) => (times[Math.min(times.length - 1, Math.floor(q * times.length))] ?? 0).toFixed(2);
  process.stdout.write(
    `${name.padEnd(34)} ${String(n).padStart(5)} requests  median ${at(0.5)} ms  p95 ${at(0.95)} ms\n`,
  );
}

const guarded = guardedFetch({ allowPrivate: true });
const plain: typeof fetch = (input, init) => fetch(input, init);
// Warm both paths (module loading, first connections) before measuring.
await measure('warm-up', plain, '/small', 20);
await measure('warm-up', guarded, '/small', 20);
await measure('global fetch, small body', plain, '/small', requests);
await measure('guardedFetch, small body', guarded, '/small', requests);
await measure('global fetch, 4 MiB body', plain, '/big', Math.max(10, requests / 10));
await measure('guardedFetch, 4 MiB body', guarded, '/big', Math.max(10, requests / 10));
server.closeAllConnections();
server.close();
