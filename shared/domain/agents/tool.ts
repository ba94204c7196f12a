/**
 * `tool` agents: call the MCP tools listed in `yaml.tools` (or `tools`, not both) on the server of their `mcp`
 * transport; with `extract_arguments` a model picks the tool and its arguments from the request's message.
 */
import { type McpTransport, McpTransportSchema } from '../agent-types.ts';
import { DEFAULT_MODEL_ID } from '../llm-model.ts';
import type { AgentTypeSchema } from './agent-type.ts';
import { one } from './one.ts';

export interface ToolSpecFields {
  mcp?: McpTransport;
  tools: readonly string[];
  extractArguments: boolean;
}

export const toolAgentType: AgentTypeSchema<'tool', ToolSpecFields, 'mcp', McpTransport> = {
  type: 'tool',
  runner: 'agent-mcp',
  transport: { kind: 'mcp', schema: McpTransportSchema, headers: (mcp) => mcp.headers },
  spec: ({ def, config, transport, issues }) => {
    const tools = one(issues, ['yaml.tools', config.tools], ['tools', def.tools]);
    if (tools === undefined || tools.length === 0) {
      issues.push({
        path: 'yaml.tools',
        message: 'a tool agent lists the MCP tools it calls (yaml tools: [...])',
      });
    }
    return {
      ...(transport !== undefined ? { mcp: transport } : {}),
      tools: tools ?? [],
      extractArguments: config.extract_arguments === true,
    };
  },
  model: (spec, llm) => (spec.extractArguments ? (llm.model ?? DEFAULT_MODEL_ID) : undefined),
};
