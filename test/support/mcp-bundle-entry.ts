/**
 * Entry for the bundled MCP client test (`test/infra/mcp-bundle.test.ts`): bundled as executor-agent-mcp is,
 * it lists and calls the tools of the MCP server whose URL it is given and prints what it got as JSON.
 */
import { SdkMcpClient } from '#shared/adapters/mcp/mcp-client.ts';
import { guardedFetch } from '#shared/adapters/network/guarded-fetch.ts';

const url = process.argv[2] ?? '';
const client = new SdkMcpClient({ fetch: guardedFetch({ allowPrivate: true }) });
const signal = AbortSignal.timeout(20_000);
const tools = await client.listTools({ url }, signal);
const result = await client.callTool({ url }, { name: 'add', arguments: { a: 40, b: 2 } }, signal);
process.stdout.write(JSON.stringify({ tools: tools.map((t) => t.name), result }));
