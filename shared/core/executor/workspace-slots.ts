/**
 * A workspace's share of one executor function (DESIGN.md "Tenants", share). SQS fair queues only reorder a
 * backlog; once a tenant's slow work fills the function's concurrency, quiet tenants wait for it. So each
 * workspace may have at most `cap` executions of this function running past `graceMs` at once.
 *
 * Why a slot only after the grace period: taking a slot before every execution would cost two writes per trigger
 * (take, give back) on the happy path, where work ends in well under a second and cannot starve anyone. Work that
 * is still running at `graceMs` takes one of the workspace's slots (one conditional UpdateItem); with every slot
 * held by live work it is aborted and its message comes back after `retryAfterSeconds` (a retriable failure: the
 * claim is released, nothing was written), so at most `cap` of the function's concurrent instances are ever
 * blocked by one workspace. A message refused on every receive ends in the DLQ and is answered with an error
 * breadcrumb. Slots are leases (`leaseMs`, the function timeout), so a crashed holder frees its slot.
 * Locally the pollers also hold such a workspace's further messages back (`local/event-sources/sqs-poller.ts`).
 */
import { RetriableError } from '#shared/domain/errors.ts';
import type { Log } from '#shared/ports/log.ts';
import type { WorkspaceSlots } from '#shared/ports/workspace-slots.ts';
import { ENV } from '#shared/topology.ts';

export type { WorkspaceSlots };

export interface SlotPolicy {
  slots: WorkspaceSlots;
  cap: number;
  graceMs: number;
  /** How long a slot is held at most (the function timeout). */
  leaseMs: number;
  now?: () => number;
}

export class WorkspaceBusyError extends RetriableError {
  override name = 'WorkspaceBusyError';
}

/**
 * Runs `execute` with `signal`; if it is still running after the grace period it needs a slot, else it is
 * aborted and a `WorkspaceBusyError` thrown.
 */
export async function withWorkspaceSlot<T>(
  policy: SlotPolicy | undefined,
  who: { workspace: string; holder: string },
  parent: AbortSignal,
  execute: (signal: AbortSignal) => Promise<T>,
  log?: Log,
): Promise<T> {
  if (!policy) return execute(parent);
  const controller = new AbortController();
  const onParent = () => controller.abort(parent.reason);
  parent.addEventListener('abort', onParent, { once: true });
  const now = policy.now ?? Date.now;
  let refused = false;
  let taking: Promise<boolean> | undefined;
  const timer = setTimeout(() => {
    const at = now();
    taking = policy.slots.take(who.workspace, who.holder, at + policy.leaseMs, policy.cap, at).then(
      (taken) => {
        if (!taken) {
          refused = true;
          controller.abort(new WorkspaceBusyError(busyMessage(who.workspace, policy)));
        }
        return taken;
      },
      (error: unknown) => {
        // A slot that cannot be counted does not stop the work (the cap fails open for a moment).
        log?.warn('could not take a workspace slot; running on', {
          workspace: who.workspace,
          error: (error as Error).message,
        });
        return false;
      },
    );
  }, policy.graceMs);
  try {
    // After a refusal whatever the aborted work returned (an implementation may answer an abort with an error
    // output) is dropped: the message is retried, nothing was written.
    const result = await execute(controller.signal);
    if (refused) throw busy(who.workspace, policy);
    return result;
  } catch (error) {
    throw refused ? busy(who.workspace, policy) : error;
  } finally {
    clearTimeout(timer);
    parent.removeEventListener('abort', onParent);
    if (taking && (await taking)) {
      await policy.slots.give(who.workspace, who.holder).catch((error: unknown) => {
        log?.warn('could not give back a workspace slot; its lease frees it', {
          workspace: who.workspace,
          error: (error as Error).message,
        });
      });
    }
  }
}

function busyMessage(workspace: string, policy: SlotPolicy): string {
  return `workspace ${workspace} already has ${policy.cap} long-running executions of this function (${ENV.workspaceInFlight}); retried later`;
}

/** Comes back after a quarter of the lease: about when a slot may have freed. */
function busy(workspace: string, policy: SlotPolicy): WorkspaceBusyError {
  return new WorkspaceBusyError(busyMessage(workspace, policy), {
    retryAfterSeconds: Math.max(1, Math.ceil(policy.leaseMs / 4000)),
  });
}
