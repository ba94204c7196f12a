/**
 * Which executor function (runner, `EXECUTOR_RUNNERS` in the topology) runs a definition: its kind's, except
 *   - agents of type tool and tools with `implementation: "mcp"` → `agent-mcp` (the MCP SDK),
 *   - agents of type api and external → `agent-remote` (the A2A SDK, JSONata),
 *   - agents of type function → `agent-sandbox` (the QuickJS sandbox),
 * so the functions everyone uses do not load what few definitions need (DESIGN.md, "Budgets"). The rule manager
 * targets the runner's queue; the message still names the definition's kind.
 */
import type { ExecutorRunner } from '../topology.ts';
import type { ParsedDefinition } from './definitions.ts';

export function executorRunnerOf(parsed: ParsedDefinition): ExecutorRunner {
  switch (parsed.kind) {
    case 'agent':
      switch (parsed.definition.type) {
        case 'tool':
          return 'agent-mcp';
        case 'api':
        case 'external':
          return 'agent-remote';
        case 'function':
          return 'agent-sandbox';
        case 'context':
          return 'agent';
      }
      break;
    case 'tool':
      return parsed.definition.implementation === 'mcp' ? 'agent-mcp' : 'tool';
  }
  return parsed.kind;
}
