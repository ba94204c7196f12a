/**
 * `crumbs mcp serve`: an MCP server on stdio that relays every message to a crumbs workspace's MCP endpoint
 * (`POST {endpoint}/v1/workspaces/{ws}/mcp`, Streamable HTTP, stateless) with the user's token, so a desktop client
 * that speaks stdio connects with one line of config. The endpoint is stateless, so the relay is too: each
 * JSON-RPC message is one POST, its JSON answer goes back on stdout; the protocol version the endpoint agreed at
 * `initialize` rides on the later requests (`MCP-Protocol-Version`), as the transport spec asks.
 *
 * Only JSON-RPC goes to stdout. A request the endpoint refuses (401, 403, a 5xx, unreachable) is answered with a
 * JSON-RPC error naming the status and the endpoint's reason, so the client shows why; notifications get nothing.
 */

import type { Readable, Writable } from 'node:stream';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

export interface McpRelayOptions {
  /** `{endpoint}/v1/workspaces/{ws}/mcp` */
  readonly url: string;
  readonly token: string | undefined;
  readonly stdin?: Readable;
  readonly stdout?: Writable;
  readonly fetch?: typeof fetch;
  /** Diagnostics (stderr): never stdout, which carries only the protocol. */
  readonly log?: (line: string) => void;
  /** Each POST's limit; a tool call waits up to 25 s at the endpoint. */
  readonly timeoutMs?: number;
}

/** Relays until stdin ends; resolves then. */
export async function relayMcp(options: McpRelayOptions): Promise<void> {
  const transport = new StdioServerTransport(options.stdin, options.stdout);
  const doFetch = options.fetch ?? fetch;
  let protocolVersion: string | undefined;
  const closed = new Promise<void>((resolve) => {
    transport.onclose = resolve;
    (options.stdin ?? process.stdin).once('end', () => {
      void transport.close();
    });
  });
  transport.onerror = (error) => options.log?.(`mcp serve: ${error.message}`);
  transport.onmessage = (message) => {
    void relay(message).catch((error: unknown) => options.log?.(`mcp serve: ${(error as Error).message}`));
  };

  async function relay(message: JSONRPCMessage): Promise<void> {
    const id = 'id' in message && 'method' in message ? message.id : undefined;
    let response: Response;
    try {
      response = await doFetch(options.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
          ...(protocolVersion ? { 'mcp-protocol-version': protocolVersion } : {}),
        },
        body: JSON.stringify(message),
        signal: AbortSignal.timeout(options.timeoutMs ?? 60_000),
      });
    } catch (error) {
      if (id !== undefined) await fail(id, `cannot reach ${options.url}: ${(error as Error).message}`);
      return;
    }
    const text = await response.text();
    if (response.status === 202 || text === '') return;
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      if (id !== undefined)
        await fail(id, `${options.url} answered ${response.status}: ${text.slice(0, 200)}`);
      return;
    }
    const messages = (Array.isArray(body) ? body : [body]) as JSONRPCMessage[];
    if (messages.every((m) => m !== null && typeof m === 'object' && 'jsonrpc' in m)) {
      for (const m of messages) {
        if ('result' in m && id !== undefined && 'method' in message && message.method === 'initialize') {
          const agreed = (m.result as { protocolVersion?: unknown }).protocolVersion;
          if (typeof agreed === 'string') protocolVersion = agreed;
        }
        await transport.send(m);
      }
      return;
    }
    // Not JSON-RPC: the API's own refusal (a problem document), e.g. a 401 or 403 from the token check.
    const p = body as { title?: string; detail?: string; message?: string };
    if (id !== undefined) {
      await fail(
        id,
        `${options.url} answered ${response.status}: ${p.detail ?? p.title ?? p.message ?? ''}`.trim(),
      );
    }
  }

  async function fail(id: string | number, message: string): Promise<void> {
    options.log?.(`mcp serve: ${message}`);
    await transport.send({ jsonrpc: '2.0', id, error: { code: -32000, message } });
  }

  await transport.start();
  await closed;
}
