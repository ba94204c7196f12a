/**
 * `function` agents: their `function_code` runs in a QuickJS sandbox within the memory and time limits of their
 * `function` transport (defaults when it is absent).
 */
import { type FunctionTransport, FunctionTransportSchema } from '../agent-types.ts';
import * as z from '../zod.ts';
import type { AgentTypeSchema } from './agent-type.ts';

const DEFAULT_FUNCTION_LIMITS: FunctionTransport = { timeout_ms: 5_000, memory_mb: 32 };

export interface FunctionSpecFields {
  code: string;
  limits: FunctionTransport;
}

export const functionAgentType: AgentTypeSchema<
  'function',
  FunctionSpecFields,
  'function',
  FunctionTransport
> = {
  type: 'function',
  runner: 'agent-sandbox',
  transport: { kind: 'function', schema: z._default(FunctionTransportSchema, DEFAULT_FUNCTION_LIMITS) },
  spec: ({ def, transport, issues }) => {
    if (def.function_code === undefined || def.function_code.trim() === '') {
      issues.push({
        path: 'function_code',
        message: 'a function agent needs function_code: "async function handler(input, ctx) { … }"',
      });
      return undefined;
    }
    return { code: def.function_code, limits: transport ?? DEFAULT_FUNCTION_LIMITS };
  },
};
