/**
 * Approval of an agent's tool calls. A tool (`tool.def.v1` `approval: "required"`) or an agent (`approval: { tools:
 * [...] }`) says which calls a person approves before they run. Such a call is written as a `human.request.v1` (an
 * approval: `kind: "tool-approval"`, the tool, its arguments, the agent's reason), answered by a person's
 * `human.response.v1 { request_id: <approval id>, decision: approve|reject, arguments?, reason? }` tagged
 * `reply-to:agent:<id>` (the agent's default trigger). Approve writes the tool request the round would have
 * written (with the edited arguments when given), reject answers the call with the rejection as its result. An
 * approval may expire (`timeout_seconds`): a timer then writes a rejection with reason "expired" as
 * `system:scheduler`. Pure: the agent's half is `shared/core/agents/context/approvals.ts`, the API's
 * `shared/core/api/approval-routes.ts`.
 */
import * as z from './zod.ts';

export const APPROVAL_KIND = 'tool-approval';
/** Tag on every approval request: the API lists pending approvals by it. */
export const APPROVAL_TAG = 'approval:tool';
/** Bounds of an approval's expiry: the timer needs a few seconds' lead; 30 days is as long as a turn may wait. */
export const MIN_APPROVAL_TIMEOUT_SECONDS = 5;
export const MAX_APPROVAL_TIMEOUT_SECONDS = 30 * 86_400;
export const EXPIRED_REASON = 'expired';
/** How much of the agent's text and the arguments an approval shows (it is a breadcrumb a person reads). */
export const MAX_REASON_CHARS = 4000;

export const ApprovalTimeoutSchema = z
  .number({ error: 'expected a whole number of seconds' })
  .check(
    z.int('expected a whole number of seconds'),
    z.minimum(MIN_APPROVAL_TIMEOUT_SECONDS, `at least ${MIN_APPROVAL_TIMEOUT_SECONDS} seconds`),
    z.maximum(MAX_APPROVAL_TIMEOUT_SECONDS, `at most ${MAX_APPROVAL_TIMEOUT_SECONDS} seconds (30 days)`),
  );

export type ApprovalStatus = 'pending' | 'approved' | 'rejected' | 'expired';

/** An approval request's context (`human.request.v1`, `kind: "tool-approval"`), as the agent writes and decides it. */
export interface ToolApproval {
  kind: typeof APPROVAL_KIND;
  agent_id: string;
  tool: string;
  arguments: unknown;
  /** The model's text beside the call: why the agent makes it. */
  reason: string;
  /** The tool request's id once approved (the round's `pending` entry). */
  tool_request_id: string;
  thread: string;
  round: number;
  /** The turn that waits for the call (`<trigger id>@<version>`); absent in an approval an older version wrote. */
  turn?: string | undefined;
  prompt: string;
  input_schema?: Record<string, unknown> | undefined;
  /** ISO time after which it counts as rejected ("expired"). */
  expires_at?: string | undefined;
  /** The run and step the turn answers, when a run's agent step asked (the Runs view shows the form there). */
  run_id?: string | undefined;
  step?: string | undefined;
  status: ApprovalStatus;
  decided_by?: string | undefined;
  decided_at?: string | undefined;
  /** The response that decided it: a redelivery of that one finishes the decision, any other is ignored. */
  response_id?: string | undefined;
  decision_reason?: string | undefined;
  edited?: boolean | undefined;
}

/** The approval of the round's call that would be the tool request `toolRequestId`. */
export function approvalIdFor(toolRequestId: string): string {
  return `approval-${toolRequestId}`;
}

export function isApprovalId(id: string): boolean {
  return id.startsWith('approval-');
}

/** The timer that expires an approval writes this response (deterministic: one expiry per approval). */
export function expiryResponseId(approvalId: string): string {
  return `${approvalId}.expired`;
}

export const ApprovalDecisionSchema = z.strictObject({
  decision: z.enum(['approve', 'reject'], { error: 'expected "approve" or "reject"' }),
  arguments: z.optional(z.record(z.string(), z.unknown(), { error: 'expected an object of arguments' })),
  reason: z.optional(
    z
      .string({ error: 'expected a string' })
      .check(z.maxLength(MAX_REASON_CHARS, `at most ${MAX_REASON_CHARS} characters`)),
  ),
});
export type ApprovalDecision = z.infer<typeof ApprovalDecisionSchema>;

/** A `human.response.v1` answering an approval, as the agent reads it; undefined when it is not one. */
export interface ApprovalResponse {
  approvalId: string;
  decision: 'approve' | 'reject';
  arguments?: Record<string, unknown> | undefined;
  reason?: string | undefined;
}

export function approvalResponseOf(context: unknown): ApprovalResponse | undefined {
  if (typeof context !== 'object' || context === null) return undefined;
  const c = context as Record<string, unknown>;
  if (typeof c.request_id !== 'string' || !isApprovalId(c.request_id)) return undefined;
  const parsed = ApprovalDecisionSchema.safeParse({
    decision: c.decision,
    ...(c.arguments !== undefined ? { arguments: c.arguments } : {}),
    ...(c.reason !== undefined ? { reason: c.reason } : {}),
  });
  if (!parsed.success) return undefined;
  return { approvalId: c.request_id, ...parsed.data };
}

/** What a tool definition and the agent say about approving calls of one tool. */
export interface ApprovalPolicy {
  timeoutSeconds?: number | undefined;
}

/**
 * Whether a call of `tool` needs a person's approval, and its expiry: the agent's `approval.tools` or the tool's
 * `approval: "required"`; the agent's `approval.timeout_seconds` before the tool's `approval_timeout_seconds`
 * (the agent that waits knows best how long it may). A tool definition that is not valid data counts as given.
 */
export function approvalPolicy(
  agent: {
    approval?: { tools?: readonly string[] | undefined; timeout_seconds?: number | undefined } | undefined;
  },
  tool: string,
  toolDef: Record<string, unknown> | undefined,
): ApprovalPolicy | undefined {
  const byAgent = agent.approval?.tools?.includes(tool) === true;
  const byTool = toolDef?.approval === 'required';
  if (!byAgent && !byTool) return undefined;
  const toolTimeout = ApprovalTimeoutSchema.safeParse(toolDef?.approval_timeout_seconds);
  const timeoutSeconds =
    agent.approval?.timeout_seconds ?? (toolTimeout.success ? toolTimeout.data : undefined);
  return timeoutSeconds !== undefined ? { timeoutSeconds } : {};
}

/** Whether the approval counts as expired at `now` (its expiry passed). */
export function isExpired(approval: Pick<ToolApproval, 'expires_at'>, now: Date): boolean {
  if (approval.expires_at === undefined) return false;
  const at = Date.parse(approval.expires_at);
  return Number.isFinite(at) && now.getTime() >= at;
}
