/**
 * `agent` steps, `{ agent: "<id>", input?, message?, mode?, orchestrate? }`: the run writes an agent.request.v1 and
 * the agent's agent.response.v1 answers it. `agent: "<id>@<version>"` pins a version of the agent
 * (`version-pin.ts`). In an orchestrating agent's own plan, a step may not call the agent itself, nor an agent
 * outside its `availableAgents`.
 */
import { AGENT_MODES } from '../protocol.ts';
import { PinnedNameSchema, pinnedName } from '../version-pin.ts';
import * as z from '../zod.ts';
import { addExpressionIssues, type StepKindSchema } from './step-schema.ts';

export interface AgentStepFields {
  agent?: string;
  /** The user message (may be a "=" expression). */
  message?: string;
  mode?: (typeof AGENT_MODES)[number];
  /** The agent orchestrates sub-agents of its own for this request (a nested orchestration). */
  orchestrate?: boolean;
}

export const agentStepSchema: StepKindSchema<'agent', AgentStepFields> = {
  kind: 'agent',
  fields: () => ({
    agent: z.optional(PinnedNameSchema),
    message: z.optional(z.string({ error: 'expected a string' })),
    mode: z.optional(z.enum(AGENT_MODES, { error: `expected one of ${AGENT_MODES.join(', ')}` })),
    orchestrate: z.optional(z.boolean({ error: 'expected true or false' })),
  }),
  ownFields: ['message', 'mode', 'orchestrate'],
  check: (step, checks, issue) => {
    if (checks.expression !== undefined)
      addExpressionIssues(step.message, checks.expression, issue, ['message']);
  },
  orchestrationIssues: (step, { self, available }) => {
    if (step.agent === undefined) return [];
    const agent = pinnedName(step.agent);
    if (agent === self) return [{ path: ['agent'], message: 'an agent cannot call itself as a sub-agent' }];
    if (available !== undefined && !available.includes(agent)) {
      return [
        {
          path: ['agent'],
          message: `"${agent}" is not in availableAgents (${available.join(', ') || 'none'})`,
        },
      ];
    }
    return [];
  },
};
