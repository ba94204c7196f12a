/**
 * The agent types, listed once: adding a type is one module beside this one (its transport and spec,
 * `agent-type.ts`) and one line here, plus its implementation in `shared/core/agents/` wired into the function
 * that serves it. `AgentSpec` and `Transport` are composed from this list; the order is the order of "expected one
 * of …". `context` is first: it is what an agent without a `type` is.
 */
import { checkHeaders } from '../agent-types.ts';
import * as z from '../zod.ts';
import type { AgentTypeSchema } from './agent-type.ts';
import { apiAgentType } from './api.ts';
import { contextAgentType } from './context.ts';
import { externalAgentType } from './external.ts';
import { functionAgentType } from './function.ts';
import { toolAgentType } from './tool.ts';

export const AGENT_TYPE_SCHEMAS = [
  contextAgentType,
  toolAgentType,
  apiAgentType,
  externalAgentType,
  functionAgentType,
] as const;

type Listed = (typeof AGENT_TYPE_SCHEMAS)[number];

export type AgentTypeName = Listed['type'];
export const AGENT_TYPES = AGENT_TYPE_SCHEMAS.map((t) => t.type) as readonly AgentTypeName[] as readonly [
  AgentTypeName,
  ...AgentTypeName[],
];

/** Each type's own spec fields, with its name as `type`. */
export type AgentTypeSpec = Listed extends infer M
  ? M extends AgentTypeSchema<infer T, infer F, string, unknown>
    ? { type: T } & F
    : never
  : never;

/** `transport: { kind, <kind>: {...} }`, one shape per type that takes one. */
export type Transport = Listed extends infer M
  ? M extends { transport?: { kind: infer K extends string; schema: z.ZodMiniType<infer X, unknown> } }
    ? [K] extends [never]
      ? never
      : { kind: K } & { [P in K]: X }
    : never
  : never;

const WITH_TRANSPORT = AGENT_TYPE_SCHEMAS.flatMap((t) =>
  'transport' in t && t.transport !== undefined
    ? [t.transport as NonNullable<AgentTypeSchema['transport']>]
    : [],
);
export const TRANSPORT_KINDS = WITH_TRANSPORT.map((t) => t.kind);

export const TransportSchema = z
  .discriminatedUnion(
    'kind',
    WITH_TRANSPORT.map((t) => z.object({ kind: z.literal(t.kind), [t.kind]: t.schema })) as unknown as [
      z.ZodMiniObject,
      ...z.ZodMiniObject[],
    ],
    { error: `expected { kind: ${TRANSPORT_KINDS.map((k) => `"${k}"`).join(' | ')}, <kind>: {...} }` },
  )
  .check(
    z.superRefine((transport, ctx) => {
      const kind = WITH_TRANSPORT.find((t) => t.kind === transport.kind);
      const own = (transport as Record<string, unknown>)[String(transport.kind)];
      checkHeaders(kind?.headers?.(own), ctx, [String(transport.kind), 'headers']);
    }),
  ) as unknown as z.ZodMiniType<Transport, unknown>;

const BY_TYPE = new Map<string, AgentTypeSchema>(
  AGENT_TYPE_SCHEMAS.map((t) => [t.type, t as unknown as AgentTypeSchema]),
);

export function agentTypeSchema(type: AgentTypeName): AgentTypeSchema {
  const schema = BY_TYPE.get(type);
  if (schema === undefined) throw new Error(`no agent type "${type}"`);
  return schema;
}
