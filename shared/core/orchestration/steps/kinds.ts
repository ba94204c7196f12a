/**
 * The engine's step kinds, one line each: the record's type makes it list exactly the kinds of the domain's
 * registration (`shared/domain/steps/kinds.ts`), so a kind with a schema and no engine half does not compile.
 * The engine (`advance.ts`, `effects.ts`, `messages.ts`, `limits.ts`, `driver.ts`) asks this module, never a
 * kind by name.
 */
import type { StepDefinition, StepKindName } from '#shared/domain/workflow-definition.ts';
import { stepKind } from '#shared/domain/workflow-definition.ts';
import { agentStep } from './agent.ts';
import { humanStep } from './human.ts';
import { mapStep } from './map.ts';
import { parallelStep } from './parallel.ts';
import type { StepKind } from './step-kind.ts';
import { toolStep } from './tool.ts';
import { waitStep } from './wait.ts';
import { waitForStep } from './wait-for.ts';
import { workflowStep } from './workflow.ts';

const STEP_KINDS: { readonly [K in StepKindName]: StepKind<K> } = {
  tool: toolStep,
  agent: agentStep,
  workflow: workflowStep,
  parallel: parallelStep,
  map: mapStep,
  human: humanStep,
  wait: waitStep,
  wait_for: waitForStep,
};

export function stepKindOf(kind: StepKindName): StepKind {
  return STEP_KINDS[kind] as StepKind;
}

/** The engine half of a parsed step's kind. */
export function kindOfStep(step: StepDefinition): StepKind {
  return stepKindOf(stepKind(step));
}

/**
 * The keys of every instance nested in the step at `key` (branches, items and what they hold), among `keys`:
 * what a rerun of that step clears.
 */
export function descendantKeys(
  step: StepDefinition,
  key: string,
  prefix: string,
  keys: Iterable<string>,
): string[] {
  const all = [...keys];
  const collect = (s: StepDefinition, k: string, p: string): string[] =>
    kindOfStep(s).nestedKeys?.(s, k, p, all, collect) ?? [];
  return [...new Set(collect(step, key, prefix))];
}
