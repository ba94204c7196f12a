/**
 * The MCP client as executor-agent-mcp ships it: bundled with that function's options, where `ajv` is replaced
 * by a module that throws (`shared/adapters/mcp/ajv-unused.ts`), it still lists and calls tools, validating
 * structured output with @cfworker/json-schema, over Streamable HTTP and the SSE fallback.
 */
import { execFile } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { bundleFunction } from '#infra/bundling.ts';
import { bundlingOptionsFor, REPO_ROOT } from '#infra/constructs/bundling-options.ts';
import { topology } from '#shared/topology.ts';
import { startMcpServer } from '../support/mcp-server.ts';

const outRoot = join(REPO_ROOT, '.scratch', 'test-mcp-bundle');
afterAll(() => rmSync(outRoot, { recursive: true, force: true }));

describe('the bundled MCP client of executor-agent-mcp', () => {
  it('carries no Ajv and still lists and calls tools, on Streamable HTTP and SSE servers', async () => {
    const bundle = await bundleFunction(
      'test/support/mcp-bundle-entry.ts',
      join(outRoot, 'index.mjs'),
      bundlingOptionsFor(topology.functions.executors['agent-mcp'].bundling),
    );
    expect(bundle.inputs.filter((input) => /node_modules\/ajv(-formats)?\//.test(input))).toEqual([]);
    for (const transport of ['streamable', 'sse'] as const) {
      const server = await startMcpServer(transport);
      try {
        const { stdout } = await promisify(execFile)(process.execPath, [bundle.outfile, server.url], {
          encoding: 'utf8',
        });
        expect(JSON.parse(stdout), transport).toEqual({
          tools: expect.arrayContaining(['add']),
          result: expect.objectContaining({ structuredContent: { sum: 42 }, isError: false }),
        });
      } finally {
        await server.close();
      }
    }
  });
});
