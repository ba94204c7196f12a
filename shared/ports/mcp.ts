/**
 * The MCP client port: list and call the tools of a Model Context Protocol server (Streamable HTTP, or the older
 * HTTP+SSE transport). The adapter is `shared/adapters/mcp/mcp-client.ts` (the official SDK).
 */

export interface McpServer {
  readonly url: string;
  /** Resolved headers (credentials already read from their secret references). */
  readonly headers?: Readonly<Record<string, string>>;
  readonly timeoutMs?: number;
}

export interface McpToolInfo {
  readonly name: string;
  readonly description?: string;
  /** The tool's JSON Schema for its arguments (`inputSchema`). */
  readonly inputSchema: Record<string, unknown>;
  readonly outputSchema?: Record<string, unknown>;
}

/** MCP's `CallToolResult`: `content` blocks, optional `structuredContent`, and `isError` for a tool's own failure. */
export interface McpCallResult {
  readonly content: readonly Record<string, unknown>[];
  readonly structuredContent?: Record<string, unknown>;
  readonly isError: boolean;
}

export interface McpClient {
  listTools(server: McpServer, signal: AbortSignal): Promise<McpToolInfo[]>;
  callTool(
    server: McpServer,
    call: { name: string; arguments: Record<string, unknown> },
    signal: AbortSignal,
  ): Promise<McpCallResult>;
}
