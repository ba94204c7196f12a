/**
 * The step graph of a workflow definition: every step by id (ids are unique across the definition, nested steps
 * included), and the instance keys of the run's `steps` (see run.ts):
 *
 *   top-level step / parallel branch   `<prefix><id>`     the prefix is "" at the top, `<item key>.` in a map item
 *   map item                           `<map key>[<i>]`
 */
import {
  type StepDefinition,
  type StepKind,
  stepKind,
  type WorkflowDefinition,
} from '#shared/domain/workflow-definition.ts';

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
      for (const branch of step.parallel ?? []) visit(branch);
      if (step.map !== undefined) visit(step.map.step);
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

export function kindAt(graph: StepGraph, key: string): StepKind | undefined {
  const step = stepAt(graph, key);
  return step === undefined ? undefined : stepKind(step);
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
  const out: string[] = [];
  const all = [...keys];
  const collect = (s: StepDefinition, k: string, p: string): void => {
    for (const branch of s.parallel ?? []) {
      const branchKey = `${p}${branch.id}`;
      if (all.includes(branchKey)) out.push(branchKey);
      collect(branch, branchKey, p);
    }
    if (s.map !== undefined) {
      const itemStart = `${k}[`;
      for (const candidate of all) if (candidate.startsWith(itemStart)) out.push(candidate);
    }
  };
  collect(step, key, prefix);
  return [...new Set(out)];
}
