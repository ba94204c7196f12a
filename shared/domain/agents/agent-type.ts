/**
 * An agent type's domain half: the transport it takes, and how an `agent.def.v1` of the type becomes the
 * configuration it runs with (`agent-spec.ts` builds the part every type shares, then asks the type for its
 * own). Structure only, no IO. One module per type beside this one, listed once in `types.ts`; the type's
 * implementation is in `shared/core/agents/` and is wired per function (a function carries only the types it
 * serves: their SDKs are heavy).
 */

import type { ExecutorRunner } from '../../topology.ts';
import type { AgentYaml } from '../agent-types.ts';
import type { AgentDefinition, ExpressionCheck } from '../definitions.ts';
import type { FieldIssue } from '../errors.ts';
import type * as z from '../zod.ts';

/** What a type's `spec` is given. */
export interface SpecInput<X> {
  readonly def: AgentDefinition;
  /** The parsed `yaml` (`agent-types.ts` `AgentYaml`; keys it does not name are kept for the types to read). */
  readonly config: AgentYaml;
  /** The definition's transport when it is this type's kind; undefined when absent or of another kind. */
  readonly transport: X | undefined;
  /** Whether the definition has no transport at all (of another kind is already an issue at `transport.kind`). */
  readonly noTransport: boolean;
  readonly issues: FieldIssue[];
  /** Checks JSONata transforms, when the caller gives a check (`definition-validation.ts`). */
  readonly expression?: ExpressionCheck;
}

/**
 * `T` is the type's name, `F` the fields its spec adds to the shared ones, `K`/`X` its transport kind and
 * parsed transport. `types.ts` composes `AgentSpec` and `Transport` from these.
 */
export interface AgentTypeSchema<
  T extends string = string,
  F = unknown,
  K extends string = string,
  X = unknown,
> {
  readonly type: T;
  /**
   * The executor function that runs agents of this type (`runners.ts`): a type whose SDK is heavy gets a function
   * of its own, so the functions everyone uses do not load it.
   */
  readonly runner: ExecutorRunner;
  /** `transport: { kind, <kind>: {...} }` of this type; absent: it takes none. */
  readonly transport?: {
    readonly kind: K;
    readonly schema: z.ZodMiniType<X, unknown>;
    /** Headers written as literals where credentials belong are refused (`checkHeaders`). */
    headers?(transport: X): Record<string, unknown> | undefined;
  };
  /** The type's own fields of the spec, or undefined when it cannot run (its issues pushed). */
  spec(input: SpecInput<X>): F | undefined;
  /** The model the type calls (`agentModel`); absent or undefined: none. */
  model?(spec: F, llm: { readonly model?: string }): string | undefined;
  /** Type only: the spec's fields. */
  readonly specType?: F;
}
