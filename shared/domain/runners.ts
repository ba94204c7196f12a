/**
 * Which executor function (runner, `EXECUTOR_RUNNERS` in the topology) runs a definition: its kind's, except
 *   - an agent → its type's `runner` (`agents/<type>.ts`: tool → `agent-mcp` for the MCP SDK, api and external
 *     → `agent-remote` for the A2A SDK and JSONata, function → `agent-sandbox` for QuickJS, context → `agent`),
 *   - tools with `implementation: "mcp"` → `agent-mcp` (the MCP SDK), `implementation: "function"` →
 *     `agent-sandbox` (QuickJS, as function agents),
 * so the functions everyone uses do not load what few definitions need (DESIGN.md, "Budgets"). The rule manager
 * targets the runner's queue; the message still names the definition's kind.
 */
import type { ExecutorKind, ExecutorRunner } from '../topology.ts';
import { agentTypeSchema } from './agents/types.ts';
import type { ParsedDefinition } from './definitions.ts';

export function executorRunnerOf(parsed: ParsedDefinition): ExecutorRunner {
  switch (parsed.kind) {
    case 'agent':
      return agentTypeSchema(parsed.definition.type).runner;
    case 'tool':
      if (parsed.definition.implementation === 'mcp') return 'agent-mcp';
      return parsed.definition.implementation === 'function' ? 'agent-sandbox' : 'tool';
    case 'memory':
      // Memory extraction calls a model like a context agent: the agent runner serves it.
      return 'agent';
  }
  return parsed.kind;
}

/** The runner of a kind when nothing more is known of the definition (a status written before runners existed). */
export function defaultRunnerOf(kind: ExecutorKind): ExecutorRunner {
  return kind === 'memory' ? 'agent' : kind;
}
