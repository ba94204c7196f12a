/**
 * `tool` steps, `{ tool: "<name>", input? }`: the run writes a tool.request.v1 and the tool's tool.response.v1
 * answers it. `tool: "<name>@<version>"` pins a version of the tool (`version-pin.ts`).
 */
import { PinnedNameSchema } from '../version-pin.ts';
import * as z from '../zod.ts';
import type { StepKindSchema } from './step-schema.ts';

export interface ToolStepFields {
  tool?: string;
}

export const toolStepSchema: StepKindSchema<'tool', ToolStepFields> = {
  kind: 'tool',
  fields: () => ({ tool: z.optional(PinnedNameSchema) }),
};
