/**
 * The agent's half of approving its tool calls (`#shared/domain/tool-approval.ts`): a `human.response.v1`
 * answering one of its approvals decides it, once. The approval is the agent's own `human.request.v1` (written and
 * last updated by the agent itself); the response must be a person's (`isPerson`, the rule of human steps), in its
 * first version, or the expiry timer's. The decision is claimed by a write of the approval conditional on the
 * version read, so of two responses (or a redelivery racing another) one decides; the deciding response's
 * redelivery writes the same outputs again (the pipeline's ids replay), any other response changes nothing.
 *
 * Approve → the tool request the round would have written (the edited arguments when given, checked against the
 * tool's input schema: an edit that breaks it decides nothing). Reject → a `tool.response.v1` of status `error`
 * for that call, naming who rejected it and why, written by the agent before it looks whether the round is
 * complete (an executor is not triggered by its own writes, so the turn continues in this invocation when it is,
 * and the round's last tool response finds it otherwise); the model reads it as the call's result. A response
 * after the expiry counts as the expiry.
 */
import { dataChecks } from '#shared/adapters/checks/checks.ts';
import { isPerson } from '#shared/domain/breadcrumb.ts';
import type { AgentDefinition } from '#shared/domain/definitions.ts';
import { NotFoundError, VersionConflictError } from '#shared/domain/errors.ts';
import { formatIssues } from '#shared/domain/lang/json-schema.ts';
import {
  HUMAN_REQUEST_SCHEMA,
  requestTag,
  TOOL_RESPONSE_SCHEMA,
  threadTag,
} from '#shared/domain/protocol.ts';
import { SCHEDULER_PRINCIPAL } from '#shared/domain/timer-message.ts';
import {
  APPROVAL_KIND,
  type ApprovalResponse,
  approvalResponseOf,
  EXPIRED_REASON,
  expiryResponseId,
  isExpired,
  type ToolApproval,
} from '#shared/domain/tool-approval.ts';
import type { BreadcrumbStore } from '#shared/ports/breadcrumb-store.ts';
import { type Log, silentLog } from '#shared/ports/log.ts';
import type { ExecutionInput, OutputBreadcrumb } from '../../executor/contract.ts';
import { type Validate, validateHere } from '../../orchestration/checks.ts';
import { toolRequestOutput } from './tool-rounds.ts';

export interface ApprovalDeps {
  readonly store: BreadcrumbStore;
  readonly log?: Log;
  readonly now?: () => Date;
}

/** Whether a trigger answers an approval (a `human.response.v1` whose `request_id` is an approval's). */
export function isApprovalAnswer(trigger: { schema_name: string; context: unknown }): boolean {
  return trigger.schema_name === 'human.response.v1' && approvalResponseOf(trigger.context) !== undefined;
}

/**
 * What deciding an approval does: the outputs to write, and for a rejection (or expiry) the call's result as the
 * trigger of the round's continuation (`continuedConversation`, `turn-state.ts`), already written.
 */
export interface ApprovalOutcome {
  outputs: OutputBreadcrumb[];
  rejection?: ExecutionInput<AgentDefinition>;
}

const NOTHING: ApprovalOutcome = { outputs: [] };

/** Decides the approval this response answers (see the header); nothing when it decides nothing. */
export async function answerApproval(
  input: ExecutionInput<AgentDefinition>,
  deps: ApprovalDeps,
): Promise<ApprovalOutcome> {
  const log = deps.log ?? silentLog;
  const def = input.definition;
  const workspace = input.trigger.workspace;
  const response = approvalResponseOf(input.trigger.context);
  if (response === undefined) return NOTHING;
  const keys = { agentId: def.agent_id, approvalId: response.approvalId, responseId: input.trigger.id };

  const writer = input.trigger.created_by;
  const expiry = writer === SCHEDULER_PRINCIPAL && input.trigger.id === expiryResponseId(response.approvalId);
  // Only people approve: an agent, a tool, a plain put naming nobody, or an edit of a response decide nothing.
  if (!expiry && !(isPerson(writer) && input.trigger.version === 1)) {
    log.warn('approval response ignored: only a person answers an approval', { ...keys, writer });
    return NOTHING;
  }

  let record: Awaited<ReturnType<BreadcrumbStore['get']>>;
  try {
    record = await deps.store.get(workspace, response.approvalId);
  } catch (error) {
    if (!(error instanceof NotFoundError)) throw error;
    log.info('approval response ignored: no such approval', keys);
    return NOTHING;
  }
  const approval = record.context as unknown as ToolApproval;
  // The agent's own approval, as it wrote and last decided it: nobody else's edit speaks for its turn.
  if (
    record.schema_name !== HUMAN_REQUEST_SCHEMA ||
    record.created_by !== input.principal ||
    record.updated_by !== input.principal ||
    approval.kind !== APPROVAL_KIND ||
    approval.agent_id !== def.agent_id
  ) {
    log.warn('approval response ignored: not an approval of this agent', keys);
    return NOTHING;
  }

  if (approval.status !== 'pending') {
    // The deciding response again (a redelivery after its claim): its outputs again, under the same ids.
    if (approval.response_id === input.trigger.id) return carryOut(input, deps.store, approval);
    log.info('approval response ignored: the approval is already decided', {
      ...keys,
      status: approval.status,
    });
    return NOTHING;
  }

  const now = deps.now?.() ?? new Date();
  const decided = await decide(approval, response, expiry, writer, input.trigger.updated_at, now, (check) =>
    dataChecks().validate(workspace, check),
  );
  if (typeof decided === 'string') {
    log.warn('approval response ignored', { ...keys, problem: decided });
    return NOTHING;
  }
  const next: ToolApproval = { ...decided, response_id: input.trigger.id, decided_at: now.toISOString() };
  try {
    await deps.store.update(
      workspace,
      record.id,
      { context: next as unknown as Record<string, unknown> },
      { principal: input.principal, expectedVersion: record.version, causation: input.causation },
    );
  } catch (error) {
    if (error instanceof VersionConflictError) {
      log.info('approval response ignored: another response decided it first', keys);
      return NOTHING;
    }
    throw error;
  }
  return carryOut(input, deps.store, next);
}

/**
 * A decided approval's effect: the tool request as an output (approved), or the call's result written now and
 * handed back as the continuation's trigger (rejected, expired). Same ids on every redelivery: a replay.
 */
async function carryOut(
  input: ExecutionInput<AgentDefinition>,
  store: BreadcrumbStore,
  approval: ToolApproval,
): Promise<ApprovalOutcome> {
  const [output] = decisionOutputs(input.definition.agent_id, approval);
  if (output === undefined) return NOTHING;
  if (approval.status === 'approved') return { outputs: [output] };
  const id = `${input.trigger.id.slice(0, 200)}.result`;
  const { breadcrumb } = await store.create(
    input.trigger.workspace,
    {
      schema_name: output.schema_name,
      title: output.title ?? '',
      tags: output.tags ?? [],
      context: output.context,
    },
    { principal: input.principal, id, causation: input.causation },
  );
  return {
    outputs: [],
    rejection: {
      ...input,
      trigger: {
        id: breadcrumb.id,
        schema_name: breadcrumb.schema_name,
        title: breadcrumb.title,
        tags: breadcrumb.tags,
        version: breadcrumb.version,
        updated_at: breadcrumb.updated_at,
        context: breadcrumb.context,
        workspace: input.trigger.workspace,
        created_by: breadcrumb.created_by,
      },
    },
  };
}

/**
 * The approval as this response decides it, or why the response decides nothing. Edited arguments are checked with
 * `validate` (the workspace's data checks in the executor).
 */
export async function decide(
  approval: ToolApproval,
  response: ApprovalResponse,
  expiry: boolean,
  writer: string,
  answeredAt: string,
  now: Date,
  validate: Validate = validateHere,
): Promise<ToolApproval | string> {
  // Past its expiry an approval counts as rejected, whoever answers (the timer, or a person too late).
  const late = isExpired(approval, new Date(Date.parse(answeredAt) || now.getTime()));
  if (expiry || late) {
    return {
      ...approval,
      status: 'expired',
      decided_by: SCHEDULER_PRINCIPAL,
      decision_reason: EXPIRED_REASON,
    };
  }
  if (response.decision === 'reject') {
    return {
      ...approval,
      status: 'rejected',
      decided_by: writer,
      ...(response.reason !== undefined ? { decision_reason: response.reason } : {}),
    };
  }
  if (response.arguments !== undefined) {
    const problem = await argumentsProblem(approval, response.arguments, validate);
    if (problem !== undefined) return problem;
  }
  return {
    ...approval,
    status: 'approved',
    decided_by: writer,
    ...(response.arguments !== undefined ? { arguments: response.arguments, edited: true } : {}),
    ...(response.reason !== undefined ? { decision_reason: response.reason } : {}),
  };
}

/** Why edited arguments do not fit the tool's input schema (as the approval recorded it), or undefined. */
export async function argumentsProblem(
  approval: Pick<ToolApproval, 'tool' | 'input_schema'>,
  args: unknown,
  validate: Validate = validateHere,
): Promise<string | undefined> {
  if (approval.input_schema === undefined) return undefined;
  try {
    const issues = await validate({
      cacheKey: `approval:${approval.tool}:${JSON.stringify(approval.input_schema)}`,
      schema: approval.input_schema,
      what: `the ${approval.tool} tool's input schema`,
      value: args,
      root: 'arguments',
    });
    return issues.length === 0 ? undefined : formatIssues(issues);
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}

/** What a decided approval writes: the tool request (approved), or the call's rejected result. */
export function decisionOutputs(agentId: string, approval: ToolApproval): OutputBreadcrumb[] {
  if (approval.status === 'approved') {
    return [
      toolRequestOutput(
        agentId,
        approval.tool,
        approval.arguments ?? {},
        approval.tool_request_id,
        approval.thread,
        approval.round,
        approval.turn,
      ),
    ];
  }
  if (approval.status === 'pending') return [];
  const why =
    approval.status === 'expired'
      ? 'nobody approved it in time (the approval expired)'
      : `${approval.decided_by ?? 'a person'} rejected it${approval.decision_reason ? `: ${approval.decision_reason}` : ' (no reason given)'}`;
  return [
    {
      schema_name: TOOL_RESPONSE_SCHEMA,
      title: `${approval.tool} ${approval.status}`,
      tags: ['tool:response', requestTag(approval.tool_request_id), threadTag(approval.thread)],
      context: {
        request_id: approval.tool_request_id,
        tool: approval.tool,
        status: 'error',
        error: `the call of ${approval.tool} was not made: ${why}`,
        approval: approval.status,
        ...(approval.decision_reason !== undefined ? { reason: approval.decision_reason } : {}),
        requestedBy: agentId,
        thread: approval.thread,
        ...(approval.turn !== undefined ? { turn: approval.turn } : {}),
        duration_ms: 0,
      },
    },
  ];
}
