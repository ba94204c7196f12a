/**
 * The `context` agent type (seed 004, flow 1) as the agent kind dispatches it: an LLM agent whose prompt is its
 * system prompt, `context` markdown and the assembled context fitted to the prompt budget, one model call per
 * invocation, tools as `tool.request.v1` hops. Its turn is `turn.ts` (`contextTurn`), which writes the answer
 * itself, however many tool rounds later it comes; this module gives it the agent-type shape.
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
