/**
 * Engine half of `tool` steps: the attempt resolves its `input` and writes a tool.request.v1; the tool's
 * tool.response.v1 ends it. A tool the workspace does not define fails the step at once.
 */
import { ToolDefinitionSchema } from '#shared/domain/definitions.ts';
import { TOOL_DEF_SCHEMA } from '#shared/domain/protocol.ts';
import { toolStepSchema } from '#shared/domain/steps/tool.ts';
import type { StepKind } from './step-kind.ts';

export const toolStep: StepKind<'tool'> = {
  kind: 'tool',
  schema: toolStepSchema,
  endedBy: 'reply',
  counts: { step: true },
  start: async ({ step, base, evaluator, scope }) => ({
    ...base,
    input: await evaluator.resolve(step.input ?? {}, scope()),
  }),
  request: {
    fields: (_definition, _run, step, state) => ({ target: step.tool, input: state.input ?? {} }),
    breadcrumb: ({ effect, tags, title, driver, schemas }) => ({
      id: effect.id,
      schema_name: schemas.toolRequest,
      title: `${title}: ${effect.target}`,
      tags,
      context: {
        tool: effect.target,
        input: effect.input ?? {},
        requestId: effect.id,
        requestedBy: driver,
      },
    }),
    answeredBy: {
      schema: TOOL_DEF_SCHEMA,
      nameOf: (context) => {
        const tool = ToolDefinitionSchema.safeParse(context);
        return tool.success ? tool.data.name : undefined;
      },
    },
  },
};
