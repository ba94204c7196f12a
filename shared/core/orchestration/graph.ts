/**
 * The step graph of a workflow definition: every step by id (ids are unique across the definition, nested steps
 * included), and the instance keys of the run's `steps` (see run.ts; what a kind nests is `steps/kinds.ts`):
 *
 *   top-level step / parallel branch   `<prefix><id>`     the prefix is "" at the top, `<item key>.` in a map item
 *   map item                           `<map key>[<i>]`
 */
import { nestedSteps } from '#shared/domain/steps/kinds.ts';
import type { StepDefinition, WorkflowDefinition } from '#shared/domain/workflow-definition.ts';

export interface StepGraph {
  readonly byId: ReadonlyMap<string, StepDefinition>;
}

const graphs = new WeakMap<WorkflowDefinition, StepGraph>();

export function graphOf(definition: WorkflowDefinition): StepGraph {
  let graph = graphs.get(definition);
  if (graph === undefined) {
    const byId = new Map<string, StepDefinition>();
    const visit = (step: StepDefinition): void => {
      byId.set(step.id, step);
      for (const [nested] of nestedSteps(step)) visit(nested);
    };
    for (const step of definition.steps) visit(step);
    graph = { byId };
    graphs.set(definition, graph);
  }
  return graph;
}

export function itemKey(mapKey: string, index: number): string {
  return `${mapKey}[${index}]`;
}

/** The prefix of the steps nested in a map item. */
export function itemPrefix(key: string): string {
  return `${key}.`;
}

const ITEM_SUFFIX = /\[(\d+)\]$/;

/** The definition of the step an instance key stands for; undefined when the definition has no such step. */
export function stepAt(graph: StepGraph, key: string): StepDefinition | undefined {
  const item = ITEM_SUFFIX.exec(key);
  if (item !== null) return stepAt(graph, key.slice(0, item.index))?.map?.step;
  const dot = key.lastIndexOf('.');
  return graph.byId.get(dot < 0 ? key : key.slice(dot + 1));
}
