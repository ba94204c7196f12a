/**
 * `crumbs mcp serve`: an MCP server on stdio that relays every message to a crumbs workspace's MCP endpoint
 * (`POST {endpoint}/v1/workspaces/{ws}/mcp`, Streamable HTTP, stateless) with the user's token, so a desktop client
 * that speaks stdio connects with one line of config. The endpoint is stateless, so the relay is too: each
 * JSON-RPC message is one POST, its JSON answer goes back on stdout; the protocol version the endpoint agreed at
 * `initialize` rides on the later requests (`MCP-Protocol-Version`), as the transport spec asks.
 *
 * An answer that comes as server-sent events (an agent's call with a progress token: its answer as progress
 * notifications, then the result) is relayed event by event as it arrives, so the stdio client sees the progress.
 *
 * Only JSON-RPC goes to stdout. A request the endpoint refuses (401, 403, a 5xx, unreachable) is answered with a
 * JSON-RPC error naming the status and the endpoint's reason, so the client shows why; notifications get nothing.
 */

import type { Readable, Writable } from 'node:stream';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { EventSourceParserStream } from 'eventsource-parser/stream';
import { FRONT_DOOR } from '#shared/topology.ts';

export interface McpRelayOptions {
  /** `{endpoint}/v1/workspaces/{ws}/mcp` */
  readonly url: string;
  /** The bearer token, or a function giving the current one (a signed-in session, refreshed as it expires). */
  readonly token: string | undefined | (() => Promise<string | undefined>);
  readonly stdin?: Readable;
  readonly stdout?: Writable;
  readonly fetch?: typeof fetch;
  /** Diagnostics (stderr): never stdout, which carries only the protocol. */
  readonly log?: (line: string) => void;
  /**
   * Each POST's limit; default a minute past the endpoint's own (a streamed call lasts up to
   * `FRONT_DOOR.streamCapSeconds`).
   */
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
    let token: string | undefined;
    try {
      token = typeof options.token === 'function' ? await options.token() : options.token;
    } catch (error) {
      if (id !== undefined) await fail(id, (error as Error).message);
      return;
    }
    let response: Response;
    try {
      response = await doFetch(options.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          ...(token ? { authorization: `Bearer ${token}` } : {}),
          ...(protocolVersion ? { 'mcp-protocol-version': protocolVersion } : {}),
        },
        body: JSON.stringify(message),
        signal: AbortSignal.timeout(options.timeoutMs ?? (FRONT_DOOR.streamCapSeconds + 60) * 1000),
      });
    } catch (error) {
      if (id !== undefined) await fail(id, `cannot reach ${options.url}: ${(error as Error).message}`);
      return;
    }
    if (
      response.ok &&
      response.body &&
      response.headers.get('content-type')?.startsWith('text/event-stream')
    ) {
      await relayEvents(message, response.body);
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

  /** Each event's JSON-RPC message to stdout as it comes; a request whose answer never came gets an error. */
  async function relayEvents(message: JSONRPCMessage, body: ReadableStream<Uint8Array>): Promise<void> {
    const id = 'id' in message && 'method' in message ? message.id : undefined;
    let answered = false;
    try {
      const events = body.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream());
      for await (const event of events as unknown as AsyncIterable<{ event?: string; data: string }>) {
        if ((event.event ?? 'message') !== 'message' || event.data === '') continue;
        let m: JSONRPCMessage;
        try {
          m = JSON.parse(event.data) as JSONRPCMessage;
        } catch {
          options.log?.(`mcp serve: skipped an event that is not JSON: ${event.data.slice(0, 200)}`);
          continue;
        }
        if (id !== undefined && 'id' in m && m.id === id && ('result' in m || 'error' in m)) answered = true;
        await transport.send(m);
      }
    } catch (error) {
      options.log?.(`mcp serve: the event stream from ${options.url} broke: ${(error as Error).message}`);
    }
    if (id !== undefined && !answered)
      await fail(id, `${options.url} ended its event stream without an answer`);
  }

  async function fail(id: string | number, message: string): Promise<void> {
    options.log?.(`mcp serve: ${message}`);
    await transport.send({ jsonrpc: '2.0', id, error: { code: -32000, message } });
  }

  await transport.start();
  await closed;
}
