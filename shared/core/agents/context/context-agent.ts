/**
 * The `context` agent type (seed 004, flow 1): the LLM agent crumbs always had — system prompt, `context`
 * markdown and the assembled context fitted to the token budget, one model call per invocation, tools as
 * `tool.request.v1` hops. Its engine is `#shared/core/agents/context/turn.ts` (`contextTurn`); this module
 * only gives it the agent-type shape. The answer, after however many tool rounds, is written by the engine.
 */

import type { AgentType } from '../contract.ts';
import { type ContextAgentDeps, contextTurn } from './turn.ts';

export function createContextAgent(deps: ContextAgentDeps): AgentType<'context'> {
  return {
    type: 'context',
    run: async (run) => ({
      kind: 'outputs',
      outputs: (await contextTurn(run.execution, deps, run.spec, run.task)).outputs,
    }),
  };
}
