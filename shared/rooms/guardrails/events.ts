/**
 * `guardrail.event.v1`: one breadcrumb per intervention — the policy (and its version), the point, the check, the
 * action, the agent, request and thread, and the matched spans' types and positions; never their text. Written as
 * the invocation's outputs, so they carry its causation and show on the thread.
 */
import { type OutputBreadcrumb, threadTag } from '#shared/domain/protocol.ts';
import { GUARDRAIL_EVENT_SCHEMA } from './definition.ts';
import type { GuardFinding } from './guard.ts';

export interface EventSubject {
  readonly agentId: string;
  readonly agentVersion?: number;
  readonly requestId: string;
  readonly thread: string;
}

/** One event per policy, point, check and action, with that group's spans. */
export function guardrailEvents(
  findings: readonly GuardFinding[],
  subject: EventSubject,
): OutputBreadcrumb[] {
  const groups = new Map<string, GuardFinding[]>();
  for (const f of findings) {
    const key = [f.policy, f.point, f.check, f.action].join('|');
    groups.set(key, [...(groups.get(key) ?? []), f]);
  }
  return [...groups.values()].map((group) => {
    const first = group[0] as GuardFinding;
    return {
      schema_name: GUARDRAIL_EVENT_SCHEMA,
      title: `guardrail ${first.policy}: ${first.action} at ${first.point} (${first.check})`,
      tags: ['guardrail:event', `guardrail:${first.policy}`, threadTag(subject.thread)],
      context: {
        policy: first.policy,
        policy_version: first.policyVersion,
        point: first.point,
        check: first.check,
        action: first.action,
        agent_id: subject.agentId,
        ...(subject.agentVersion !== undefined ? { agent_version: subject.agentVersion } : {}),
        request_id: subject.requestId,
        thread: subject.thread,
        matches: group.map((f) => ({
          type: f.type,
          part: f.part,
          piece: f.piece,
          ...(f.start !== undefined ? { start: f.start, end: f.end } : {}),
        })),
      },
    };
  });
}
