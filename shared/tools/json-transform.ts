/**
 * `json.transform`: a JSONata expression over `input.data`, time-boxed (jsonata.ts) and run through the data checks:
 * past a few milliseconds in a worker thread, in its workspace's share (`shared/adapters/checks/`).
 */
import { dataChecks } from '../adapters/checks/checks.ts';
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
  async run(input, ctx) {
    const checks = ctx.checks ?? dataChecks();
    return {
      result: await checks.evaluate(
        ctx.workspace,
        {
          expression: input.expression,
          data: input.data ?? null,
        },
        ctx.signal,
      ),
    };
  },
};
