/**
 * Engine half of `agent` steps: the attempt resolves its `input` and `message` and writes an agent.request.v1
 * (one level deeper, with the run's `max_depth` for the agent's own orchestration); the agent's agent.response.v1
 * ends it. Its model calls count against the run's budget (`limits.ts`); its request carries its share of what
 * remains (`budget`), which the agent applies as a request budget.
 */
import { AGENT_DEF_SCHEMA, LEGACY_AGENT_DEF_SCHEMA } from '#shared/domain/protocol.ts';
import { agentStepSchema } from '#shared/domain/steps/agent.ts';
import { pinnedName } from '#shared/domain/version-pin.ts';
import type { StepKind } from './step-kind.ts';
import { pinOf } from './step-kind.ts';

export const agentStep: StepKind<'agent'> = {
  kind: 'agent',
  schema: agentStepSchema,
  endedBy: 'reply',
  counts: { step: true, llmCall: true, deeper: true },
  start: async ({ step, base, evaluator, scope }) => {
    const input = step.input === undefined ? undefined : await evaluator.resolve(step.input, scope());
    const message = step.message === undefined ? undefined : await evaluator.text(step.message, scope());
    return {
      ...base,
      ...(input !== undefined ? { input } : {}),
      ...(message !== undefined ? { message } : {}),
    };
  },
  request: {
    fields: (definition, _run, step, state) => ({
      ...(step.agent !== undefined ? { target: pinnedName(step.agent) } : {}),
      ...pinOf(step.agent),
      ...(state.input !== undefined ? { input: state.input } : {}),
      ...(state.message !== undefined ? { message: state.message } : {}),
      ...(step.mode !== undefined ? { mode: step.mode } : {}),
      ...(step.orchestrate === true ? { orchestrate: true } : {}),
      max_depth: definition.max_depth,
      ...(state.budget !== undefined ? { budget: state.budget } : {}),
    }),
    breadcrumb: ({ run, effect, tags, title, schemas }) => ({
      id: effect.id,
      schema_name: schemas.agentRequest,
      title: `${title}: ${effect.target}`,
      tags,
      context: {
        agent: effect.target,
        ...(effect.input !== undefined ? { input: effect.input } : {}),
        ...(effect.message !== undefined ? { message: effect.message } : {}),
        ...(effect.mode !== undefined ? { mode: effect.mode } : {}),
        ...(effect.orchestrate === true ? { orchestrate: true } : {}),
        request_id: effect.id,
        ...(effect.definition_version !== undefined ? { definition_version: effect.definition_version } : {}),
        depth: effect.depth,
        ...(effect.budget !== undefined ? { budget: { ...effect.budget, of: `run ${run.run_id}` } } : {}),
        ...(effect.max_depth !== undefined ? { max_depth: effect.max_depth } : {}),
      },
    }),
    versioned: { schemas: [AGENT_DEF_SCHEMA, LEGACY_AGENT_DEF_SCHEMA] },
  },
};
