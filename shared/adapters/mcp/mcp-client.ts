/**
 * The McpClient port on the official MCP TypeScript SDK (`@modelcontextprotocol/sdk`).
 *
 * Transport: Streamable HTTP (MCP 2025-03-26 and later); when the server answers the initializing POST with a 4xx
 * (404, 405: an HTTP+SSE server of the 2024-11-05 spec), the client falls back to the SSE transport, as the spec's
 * backwards-compatibility section says. The rule: every request goes through the guarded fetch the adapter is
 * given (address policy, body cap), bound to the server's origin, so a redirect or an endpoint elsewhere is refused.
 *
 * One connection per call (initialize, the request, close): a Lambda invocation makes few MCP calls, and a session
 * kept across invocations would be one the server may have expired. Tool outputs are validated with the SDK's
 * @cfworker/json-schema provider (the project's validator), not its default Ajv, which is not bundled.
 *
 * Errors: the server's JSON-RPC errors (unknown tool, bad arguments) are NonRetriableError naming the server and
 * tool; a server that cannot be reached, times out or answers a status `isRetriableStatus` retries (408, 409, 429,
 * 5xx) is RetriableError (SQS tries again). A tool that ran and failed is not an error here: its result says
 * `isError: true`.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import {
  StreamableHTTPClientTransport,
  StreamableHTTPError,
} from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { CfWorkerJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/cfworker';
import { isRetriableStatus, NonRetriableError, RetriableError } from '#shared/domain/errors.ts';
import type { McpCallResult, McpClient, McpServer, McpToolInfo } from '#shared/ports/mcp.ts';
import { boundToOrigins } from '../network/guarded-fetch.ts';
import { NetworkGuardError } from '../network/network-guard.ts';

const CLIENT_INFO = { name: 'crumbs', version: '0.1.0' };
const DEFAULT_TIMEOUT_MS = 30_000;
const MAX_TOOLS = 500;

export interface SdkMcpClientOptions {
  /** The guarded fetch every request goes through, bound to the server's origin for each call. */
  readonly fetch: typeof fetch;
}

export class SdkMcpClient implements McpClient {
  constructor(private readonly options: SdkMcpClientOptions) {}

  async listTools(server: McpServer, signal: AbortSignal): Promise<McpToolInfo[]> {
    return this.session(server, signal, 'tools/list', async (client, opts) => {
      const tools: McpToolInfo[] = [];
      let cursor: string | undefined;
      do {
        const page = await client.listTools(cursor !== undefined ? { cursor } : undefined, opts);
        for (const t of page.tools) {
          tools.push({
            name: t.name,
            ...(t.description !== undefined ? { description: t.description } : {}),
            inputSchema: t.inputSchema as Record<string, unknown>,
            ...(t.outputSchema !== undefined
              ? { outputSchema: t.outputSchema as Record<string, unknown> }
              : {}),
          });
        }
        cursor = page.nextCursor;
      } while (cursor !== undefined && tools.length < MAX_TOOLS);
      return tools;
    });
  }

  async callTool(
    server: McpServer,
    call: { name: string; arguments: Record<string, unknown> },
    signal: AbortSignal,
  ): Promise<McpCallResult> {
    return this.session(server, signal, `tool ${call.name}`, async (client, opts) => {
      const result = await client.callTool({ name: call.name, arguments: call.arguments }, undefined, opts);
      const content = Array.isArray(result.content) ? (result.content as Record<string, unknown>[]) : [];
      const structured = result.structuredContent;
      return {
        content,
        ...(structured !== undefined && structured !== null && typeof structured === 'object'
          ? { structuredContent: structured as Record<string, unknown> }
          : {}),
        isError: result.isError === true,
      };
    });
  }

  private async session<T>(
    server: McpServer,
    signal: AbortSignal,
    what: string,
    use: (client: Client, opts: { signal: AbortSignal; timeout: number }) => Promise<T>,
  ): Promise<T> {
    const timeout = server.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    const opts = { signal: AbortSignal.any([signal, AbortSignal.timeout(timeout)]), timeout };
    const client = await this.connect(server, opts);
    try {
      return await use(client, opts);
    } catch (error) {
      throw classify(error, server, what);
    } finally {
      await client.close().catch(() => undefined);
    }
  }

  private async connect(server: McpServer, opts: { signal: AbortSignal; timeout: number }): Promise<Client> {
    const url = new URL(server.url);
    const requestInit = server.headers ? { headers: { ...server.headers } } : undefined;
    // The server's own origin only: a redirect, or an SSE endpoint event naming another origin, is refused.
    const fetch = boundToOrigins(this.options.fetch, [url.origin], "the MCP server's origin");
    const newClient = () =>
      new Client(CLIENT_INFO, { jsonSchemaValidator: new CfWorkerJsonSchemaValidator() });
    const streamable = newClient();
    try {
      await streamable.connect(
        new StreamableHTTPClientTransport(url, {
          fetch,
          ...(requestInit ? { requestInit } : {}),
        }),
        opts,
      );
      return streamable;
    } catch (error) {
      await streamable.close().catch(() => undefined);
      if (!isOldServer(error)) throw classify(error, server, 'initialize');
    }
    const sse = newClient();
    try {
      const transport: Transport = new SSEClientTransport(url, {
        fetch,
        ...(requestInit ? { requestInit } : {}),
      });
      await sse.connect(transport, opts);
      return sse;
    } catch (error) {
      await sse.close().catch(() => undefined);
      throw classify(error, server, 'initialize (SSE)');
    }
  }
}

/** A Streamable HTTP initialize refused with 4xx: the server speaks the older HTTP+SSE transport. */
function isOldServer(error: unknown): boolean {
  return (
    error instanceof StreamableHTTPError &&
    typeof error.code === 'number' &&
    error.code >= 400 &&
    error.code < 500
  );
}

function classify(error: unknown, server: McpServer, what: string): Error {
  if (error instanceof NonRetriableError || error instanceof RetriableError) return error;
  const where = `MCP server ${new URL(server.url).host}, ${what}`;
  if (error instanceof NetworkGuardError)
    return new NonRetriableError(`${where}: ${error.message}`, { cause: error });
  if (error instanceof McpError) {
    // -32001 is the SDK's own request timeout.
    if (error.code === -32001) return new RetriableError(`${where}: timed out`, { cause: error });
    return new NonRetriableError(`${where}: ${error.message}`, { cause: error });
  }
  if (error instanceof StreamableHTTPError && typeof error.code === 'number') {
    const message = `${where}: HTTP ${error.code}`;
    return isRetriableStatus(error.code)
      ? new RetriableError(message, { cause: error })
      : new NonRetriableError(message, { cause: error });
  }
  const message = error instanceof Error ? error.message : String(error);
  return new RetriableError(`${where}: ${message}`, { cause: error });
}
