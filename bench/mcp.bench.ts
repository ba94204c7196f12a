/**
 * The MCP server on the local stack, through the official SDK client over Streamable HTTP:
 * - how long a new `tool.def.v1` takes to appear in `tools/list` (PUT through the API → first list naming it), p50
 *   over `--appear` definitions;
 * - a `tools/call` of the built-in `calculator` end to end (the call writes a tool.request.v1, the tool executor
 *   answers, the server reads the answer back), p50 / p99 over `--calls` calls, one at a time.
 *
 *   node bin/run-ts.js bench/mcp.bench.ts [--appear 20] [--calls 50]
 */
import { parseArgs } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CrumbsClient } from '#cli/api-client.ts';
import { percentile } from './support/counting-proxy.ts';
import { startBenchStack } from './support/stack.ts';

const { values } = parseArgs({
  options: { appear: { type: 'string', default: '20' }, calls: { type: 'string', default: '50' } },
});
const stack = await startBenchStack();
const ws = 'bench-mcp';
const api = new CrumbsClient({ endpoint: stack.endpoints.api, token: 'bench', workspace: ws });
const mcp = new Client({ name: 'bench', version: '1' });
try {
  await mcp.connect(
    new StreamableHTTPClientTransport(new URL(`${stack.endpoints.api}/v1/workspaces/${ws}/mcp`), {
      requestInit: { headers: { authorization: 'Bearer bench' } },
    }),
  );

  const appear: number[] = [];
  for (let i = 0; i < Number(values.appear); i++) {
    const name = i === 0 ? 'calculator' : `calc_${i}`;
    const started = performance.now();
    await api.put(`tool-${name}`, {
      schema_name: 'tool.def.v1',
      title: name,
      tags: [],
      context: { name, implementation: 'calculator', description: 'Evaluates arithmetic.' },
    });
    for (;;) {
      const { tools } = await mcp.listTools();
      if (tools.some((t) => t.name === name)) break;
      await new Promise((r) => setTimeout(r, 10));
    }
    appear.push(performance.now() - started);
  }

  await mcp.callTool({ name: 'calculator', arguments: { expression: '1+1' } });
  const calls: number[] = [];
  for (let i = 0; i < Number(values.calls); i++) {
    const started = performance.now();
    const result = await mcp.callTool({ name: 'calculator', arguments: { expression: `${i} * 2 + 1` } });
    calls.push(performance.now() - started);
    const got = (result.structuredContent as { result?: number } | undefined)?.result;
    if (got !== i * 2 + 1) throw new Error(`calculator answered ${JSON.stringify(result)} for ${i} * 2 + 1`);
  }

  const ms = (xs: number[], p: number) =>
    `${percentile(
      [...xs].sort((a, b) => a - b),
      p,
    ).toFixed(0)} ms`;
  console.log(
    `tool.def.v1 written → in tools/list (n=${appear.length}): p50 ${ms(appear, 0.5)}, p95 ${ms(appear, 0.95)}`,
  );
  console.log(
    `tools/call calculator end to end (n=${calls.length}): p50 ${ms(calls, 0.5)}, p99 ${ms(calls, 0.99)}`,
  );
} finally {
  await mcp.close().catch(() => undefined);
  await stack.stop();
}
