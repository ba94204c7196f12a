/** `json.transform`: a JSONata expression over `input.data` (time-boxed, see jsonata.ts). */
import { evaluateJsonata } from '../domain/lang/jsonata.ts';
import type { Tool } from './tool.ts';

export interface JsonTransformInput {
  expression: string;
  data?: unknown;
}

export const jsonTransformTool: Tool<JsonTransformInput, { result: unknown }> = {
  name: 'json.transform',
  description: 'Evaluates a JSONata expression over `data` and returns `{ result }`.',
  inputSchema: {
    type: 'object',
    properties: { expression: { type: 'string', minLength: 1 }, data: {} },
    required: ['expression'],
  },
  async run(input) {
    return { result: await evaluateJsonata(input.expression, input.data ?? null) };
  },
};
