/**
 * Empties a bus of the rules the rule manager made on it, so CloudFormation can delete the bus: EventBridge refuses
 * to delete a bus that still has rules ("EventBus can't be deleted since it has rules"), and the compiled rules
 * (`crumbs-def-*`) are made at run time, unknown to CloudFormation. It runs as a custom resource of the stateful
 * stack, one per bus (`infra/stacks/stateful-stack.ts`), on its Delete: when the stage is destroyed, and when
 * `crumbs:buses` shrinks and the buses past the new count leave the pool. Rules of other prefixes are left alone.
 *
 * The definitions whose rules it removes keep their status until the rule manager places them again (`crumbs rules
 * sync` in their workspace, `docs/deploy.md`): a rule taken off a bus that is going away cannot be moved first,
 * because the bus's events stop with it.
 *
 * The CloudFormation side (`customResourceResponse`): a Lambda-backed custom resource must PUT its outcome to the
 * pre-signed `ResponseURL` of the event, or the stack waits an hour; the handler always answers, FAILED with the
 * reason when the sweep failed (a failed Delete leaves the bus, and the stack names why).
 */
import type { RuleRegistry } from '#shared/ports/rule-registry.ts';

export interface SweepResult {
  readonly removed: readonly string[];
}

/** Removes every rule named `<prefix>…` from the bus behind `registry`, targets first (EventBridge's order). */
export async function sweepRules(registry: RuleRegistry, prefix: string): Promise<SweepResult> {
  if (prefix.length === 0) throw new Error('refusing to sweep every rule of a bus: the prefix is empty');
  const removed: string[] = [];
  for (const rule of await registry.list(prefix)) {
    if (!rule.name.startsWith(prefix)) continue;
    const targets = await registry.targets(rule.name);
    await registry.removeTargets(
      rule.name,
      targets.map((t) => t.id),
    );
    await registry.delete(rule.name);
    removed.push(rule.name);
  }
  return { removed };
}

/** What CloudFormation sends a custom resource (the fields this one reads). */
export interface CustomResourceEvent {
  RequestType: 'Create' | 'Update' | 'Delete';
  ResponseURL: string;
  StackId: string;
  RequestId: string;
  LogicalResourceId: string;
  PhysicalResourceId?: string;
  ResourceProperties: Record<string, unknown>;
}

export interface CustomResourceResponse {
  Status: 'SUCCESS' | 'FAILED';
  Reason?: string;
  PhysicalResourceId: string;
  StackId: string;
  RequestId: string;
  LogicalResourceId: string;
  Data?: Record<string, string>;
}

/** The sweeper's part of a custom resource event: Delete sweeps the bus the resource names; the rest do nothing. */
export async function handleSweepEvent(
  event: CustomResourceEvent,
  registryFor: (busName: string) => RuleRegistry,
): Promise<CustomResourceResponse> {
  const bus = String(event.ResourceProperties.EventBusName ?? '');
  const prefix = String(event.ResourceProperties.RulePrefix ?? '');
  const physicalId = event.PhysicalResourceId ?? `crumbs-rule-sweep:${bus}`;
  const base = {
    PhysicalResourceId: physicalId,
    StackId: event.StackId,
    RequestId: event.RequestId,
    LogicalResourceId: event.LogicalResourceId,
  };
  if (event.RequestType !== 'Delete') return { Status: 'SUCCESS', ...base };
  try {
    if (!bus) throw new Error('the resource names no EventBusName');
    const { removed } = await sweepRules(registryFor(bus), prefix);
    return { Status: 'SUCCESS', ...base, Data: { Removed: String(removed.length) } };
  } catch (error) {
    return {
      Status: 'FAILED',
      ...base,
      Reason: `could not remove the ${prefix}* rules of ${bus}: ${(error as Error).message}`.slice(0, 1000),
    };
  }
}

/** PUTs the response to the event's pre-signed URL (an S3 URL: no content type, as CloudFormation documents). */
export async function sendCustomResourceResponse(
  url: string,
  response: CustomResourceResponse,
  fetchFn: typeof fetch = fetch,
): Promise<void> {
  const body = JSON.stringify(response);
  const res = await fetchFn(url, {
    method: 'PUT',
    headers: { 'content-type': '', 'content-length': String(Buffer.byteLength(body)) },
    body,
  });
  if (!res.ok) throw new Error(`CloudFormation's response URL answered ${res.status}`);
}
