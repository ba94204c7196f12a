/**
 * Executor for agents of seed 004's `tool` type and for tools with `implementation: "mcp"`: both call tools on MCP
 * servers (Streamable HTTP, or SSE for older servers). Triggered by the agent-mcp queue (the rules of those
 * definitions: the agent.request.v1 naming an agent, its subscriptions, a tool.request.v1 naming an mcp tool).
 * Every call goes through the network guard (CRUMBS_ALLOW_PRIVATE_NETWORK), with credentials from their secret
 * references (Secrets Manager under crumbs/agents/ on AWS); writes agent.response.v1 and tool.response.v1.
 * Its own function because the MCP SDK would otherwise load in the cold start of functions that never call it.
 */
import { SdkMcpClient } from '#shared/adapters/mcp/mcp-client.ts';
import { guardedFetch } from '#shared/adapters/network/guarded-fetch.ts';
import { privateNetworkAllowed } from '#shared/adapters/network/network-guard.ts';
import { secretsFromEnv } from '#shared/adapters/secrets/secret-source.ts';
import { createAgentKind } from '#shared/core/agents/agent-kind.ts';
import { mcpTool, mcpToolResolver } from '#shared/core/agents/mcp-tools.ts';
import { createToolAgent } from '#shared/core/agents/tool-agent.ts';
import { metered } from '#shared/core/executor/usage-record.ts';
import { createToolKind } from '#shared/core/tools/tool-kind.ts';
import { parseYaml } from '#shared/domain/yaml.ts';
import { toolCatalog } from '#shared/tools/catalog.ts';
import { createExecutorHandler } from '../wiring/executor-handler.ts';
import { llmFromEnv } from '../wiring/llm-from-env.ts';

// The stack's private-network switch, read at the first call (the local stack imports handlers before it may set
// it), and the only thing that lets these calls reach loopback or private addresses.
let stackAllowsPrivate: boolean | undefined;
const allowPrivate = (): boolean => {
  stackAllowsPrivate ??= privateNetworkAllowed();
  return stackAllowsPrivate;
};
const secrets = secretsFromEnv();
const mcp = new SdkMcpClient({ fetch: guardedFetch({ allowPrivate }) });

export const handler = createExecutorHandler('agent-mcp', {
  implementations: ({ store, log, clock }) => {
    // A tool agent's argument extraction answers to the agent's request budget and the workspace's daily budget.
    const llm = llmFromEnv(process.env, { log });
    return {
      agent: metered(
        createAgentKind({
          types: {
            tool: createToolAgent({ mcp, secrets, llm, resolveTool: mcpToolResolver(store, secrets) }),
          },
          store,
          clock,
          llm,
          parseYaml,
          log,
        }),
      ),
      tool: createToolKind({ store, log, clock, tools: toolCatalog([mcpTool({ mcp, secrets })]) }),
    };
  },
  // An MCP call gives up after its timeout (30 s by default); stop 10 s before the Lambda does.
  timeoutEarlyInMillis: 10_000,
});
