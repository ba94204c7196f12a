/**
 * Engine half of `tool` steps: the attempt resolves its `input` and writes a tool.request.v1 naming the version of
 * the tool it runs; the tool's tool.response.v1 ends it. A tool the workspace does not define (or a pinned version
 * it does not have) fails the step at once.
 */
import { TOOL_DEF_SCHEMA } from '#shared/domain/protocol.ts';
import { toolStepSchema } from '#shared/domain/steps/tool.ts';
import { pinnedName } from '#shared/domain/version-pin.ts';
import type { StepKind } from './step-kind.ts';
import { pinOf } from './step-kind.ts';

export const toolStep: StepKind<'tool'> = {
  kind: 'tool',
  schema: toolStepSchema,
  endedBy: 'reply',
  // The `llm` tool calls a model: the request carries a share of the run's budgets (`limits.ts`).
  counts: { step: true, mayCallModel: true },
  start: async ({ step, base, evaluator, scope }) => ({
    ...base,
    input: await evaluator.resolve(step.input ?? {}, scope()),
  }),
  request: {
    fields: (_definition, _run, step, state) => ({
      ...(step.tool !== undefined ? { target: pinnedName(step.tool) } : {}),
      input: state.input ?? {},
      ...pinOf(step.tool),
      ...(state.budget !== undefined ? { budget: state.budget } : {}),
    }),
    breadcrumb: ({ run, effect, tags, title, driver, schemas }) => ({
      id: effect.id,
      schema_name: schemas.toolRequest,
      title: `${title}: ${effect.target}`,
      tags,
      context: {
        tool: effect.target,
        input: effect.input ?? {},
        requestId: effect.id,
        requestedBy: driver,
        ...(effect.definition_version !== undefined ? { definition_version: effect.definition_version } : {}),
        ...(effect.budget !== undefined ? { budget: { ...effect.budget, of: `run ${run.run_id}` } } : {}),
      },
    }),
    versioned: { schemas: [TOOL_DEF_SCHEMA] },
  },
};
