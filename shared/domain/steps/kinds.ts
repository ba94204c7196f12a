/**
 * The step kinds a workflow knows, listed once: adding a kind is one module beside this one (its fields and
 * checks, `step-schema.ts`) and one line here, plus its engine half (`shared/core/orchestration/steps/kinds.ts`,
 * which the compiler holds to this list). The order is the order of a step's fields and of "expected one of …".
 */
import type * as z from '../zod.ts';
import { agentStepSchema } from './agent.ts';
import { humanStepSchema } from './human.ts';
import { mapStepSchema } from './map.ts';
import { parallelStepSchema } from './parallel.ts';
import type { StepCommonFields, StepKindSchema } from './step-schema.ts';
import { toolStepSchema } from './tool.ts';
import { waitStepSchema } from './wait.ts';
import { waitForStepSchema } from './wait-for.ts';
import { workflowStepSchema } from './workflow.ts';

export const STEP_KIND_SCHEMAS = [
  toolStepSchema,
  agentStepSchema,
  workflowStepSchema,
  parallelStepSchema,
  mapStepSchema,
  humanStepSchema,
  waitStepSchema,
  waitForStepSchema,
] as const;

export type StepKindName = (typeof STEP_KIND_SCHEMAS)[number]['kind'];

export const STEP_KINDS = STEP_KIND_SCHEMAS.map((k) => k.kind) as readonly StepKindName[] as readonly [
  StepKindName,
  ...StepKindName[],
];

type FieldsOf<S> = S extends StepKindSchema<string, infer F> ? F : never;
type Intersection<U> = (U extends unknown ? (u: U) => void : never) extends (i: infer I) => void ? I : never;

/** The fields of every kind (each optional: a step carries exactly one kind's key). */
export type StepKindFields = Intersection<FieldsOf<(typeof STEP_KIND_SCHEMAS)[number]>>;

/** A parsed step. */
export type StepDefinition = StepCommonFields & StepKindFields;

const BY_KIND = new Map<string, StepKindSchema>(STEP_KIND_SCHEMAS.map((k) => [k.kind, k as StepKindSchema]));

export function stepKindSchema(kind: StepKindName): StepKindSchema {
  const schema = BY_KIND.get(kind);
  if (schema === undefined) throw new Error(`no step kind "${kind}"`);
  return schema;
}

/** The kinds whose key the step carries (exactly one in a valid step). */
export function kindsOf(step: Partial<Record<string, unknown>>): StepKindName[] {
  return STEP_KINDS.filter((k) => step[k] !== undefined);
}

/** The kind of a parsed step (the definition's checks guarantee exactly one). */
export function stepKind(step: StepDefinition): StepKindName {
  for (const kind of STEP_KINDS)
    if ((step as unknown as Record<string, unknown>)[kind] !== undefined) return kind;
  throw new Error(`step "${step.id}" has no kind`);
}

/** The steps nested in `step` (parallel branches, a map's step), with their path below it. */
export function nestedSteps(step: StepDefinition): readonly (readonly [StepDefinition, PropertyKey[]])[] {
  return kindsOf(step as unknown as Record<string, unknown>).flatMap(
    (k) => stepKindSchema(k).nested?.(step) ?? [],
  );
}

/** A zod shape's parsed type is declared by its kind module; this is the schema type `fields` receives. */
export type StepSchemaType = z.ZodMiniType<StepDefinition>;
