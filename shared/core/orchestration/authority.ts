/**
 * Who may act on a run. Only people approve: a human step takes a `human.response.v1` written by a `user:`
 * principal, or by the run's own driver when it relays a person's message (an orchestrating agent's
 * `orchestrationAction`: the response's causation names the person's breadcrumb, which the driver reads in the
 * run's workspace and checks was written by a `user:` principal — `on_behalf_of`). Controls (pause, resume,
 * cancel, retry) are taken from people, relayed the same way, and — cancel only — from the driver of the run's
 * parent, which cancels its sub-runs. No agent, tool, plain put or other run acts on a run on its own, and an
 * agent acts on no run it does not drive. A plain put is written as `user:plain-put` when it names no person (or
 * names one of crumbs' own writers): a person, but nobody in particular, so it approves and relays nothing. One
 * naming a person (`user:alice`) counts as that person: whoever may write the table directly is trusted as much.
 *
 * Pure, so the engine decides it inside the transition (a refused response leaves the run as it was: still
 * waiting, its controls still taken) and the decision is the same on every redelivery.
 */
import { isPerson } from '#shared/domain/breadcrumb.ts';
import { workflowPrincipal } from '#shared/domain/workflow-definition.ts';
import type { ControlEvent, HumanEvent } from './events.ts';
import { runDriver } from './messages.ts';
import type { Run } from './run.ts';

// The rule lives beside the principals it reads, so an agent's approvals apply it without the workflow engine.
export { isPerson };

/** The driver of the run that started this one as a step: an agent's orchestration is `workflow: "agent:<id>"`. */
function parentDriver(run: Pick<Run, 'parent'>): string | undefined {
  const workflow = run.parent?.workflow;
  if (workflow === undefined) return undefined;
  return workflow.startsWith('agent:') ? workflow : workflowPrincipal(workflow);
}

/** The person an event acts for: its writer, or the person whose message the run's driver relays. */
export function actingPrincipal(event: HumanEvent | ControlEvent): string {
  return event.on_behalf_of ?? event.by;
}

function relayedByDriver(run: Run, event: HumanEvent | ControlEvent): boolean {
  return event.by === runDriver(run) && isPerson(event.on_behalf_of);
}

/** Why this human response may not answer the run's human step, or undefined when it may. */
export function humanResponseRefusal(run: Run, event: HumanEvent): string | undefined {
  if (isPerson(event.by) || relayedByDriver(run, event)) return undefined;
  return event.by === runDriver(run)
    ? `only a person answers a human step: ${event.by} drives this run but relays no person's message (its causation names no breadcrumb of a user: principal in this workspace)`
    : `only a person answers a human step: this response was written by ${event.by}`;
}

/** Why this control may not act on the run, or undefined when it may. */
export function controlRefusal(run: Run, event: ControlEvent): string | undefined {
  if (isPerson(event.by) || relayedByDriver(run, event)) return undefined;
  if (event.action === 'cancel' && event.by === parentDriver(run)) return undefined;
  return `only a person (or the run's driver relaying one) controls a run; ${event.by} does not`;
}
