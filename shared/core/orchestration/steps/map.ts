/**
 * Engine half of `map` steps: the items come from the `items` expression when the step starts (kept in the run;
 * a single value is one item, null fails the step); one `step` per item (`<map key>[<i>]`), at most
 * `max_concurrency` in flight; the output is the items' outputs in item order. An item that fails fails the map
 * at once and cancels the others.
 */
import { DEFAULT_MAP_CONCURRENCY, mapStepSchema } from '#shared/domain/steps/map.ts';
import { itemKey, itemPrefix } from '../graph.ts';
import { isActive } from '../run.ts';
import type { StepKind } from './step-kind.ts';

export const mapStep: StepKind<'map'> = {
  kind: 'map',
  schema: mapStepSchema,
  endedBy: 'children',
  counts: { step: false },
  start: async ({ step, base, evaluator, scope, ended }) => {
    const items = await evaluator.expression(step.map?.items ?? '[]', scope());
    if (items === null || items === undefined) return { fail: 'map items: expected an array, got null' };
    // A single value is what JSONata gives for a one-element sequence (`orders.id` of one order): one item.
    const list = Array.isArray(items) ? items : [items];
    return list.length === 0
      ? ended({ ...base, items: [] }, 'succeeded', { output: [] })
      : { ...base, items: list };
  },
  drive: async (t, step, key, chain) => {
    const map = step.map;
    const state = t.run.steps[key];
    if (map === undefined || state === undefined) return;
    const items = state.items ?? [];
    const limit = map.max_concurrency ?? DEFAULT_MAP_CONCURRENCY;
    let inFlight = 0;
    for (let i = 0; i < items.length; i++) {
      const s = t.run.steps[itemKey(key, i)];
      if (s !== undefined && (isActive(s) || (s.status === 'pending' && s.attempts > 0))) inFlight++;
    }
    let allDone = true;
    for (let i = 0; i < items.length; i++) {
      const k = itemKey(key, i);
      const before = t.run.steps[k];
      const fresh = before === undefined || (before.status === 'pending' && before.attempts === 0);
      if (fresh && inFlight >= limit) {
        allDone = false;
        continue;
      }
      const outcome = await t.driveStep(map.step, k, String(i), chain, {
        item: items[i],
        index: i,
        prefix: itemPrefix(k),
      });
      if (fresh && isActive(t.run.steps[k])) inFlight++;
      if (outcome === 'failed') {
        const error = t.run.steps[k]?.error ?? 'failed';
        t.cancelDescendants(key);
        t.failAttempt(key, `item ${i} failed: ${error}`);
        return;
      }
      if (outcome !== 'done') allDone = false;
    }
    if (!allDone) return;
    const output = items.map((_, i) => t.run.steps[itemKey(key, i)]?.output ?? null);
    t.run.steps[key] = t.ended(state, 'succeeded', { output });
  },
  nestedKeys: (_step, key, _prefix, keys) => keys.filter((candidate) => candidate.startsWith(`${key}[`)),
};
