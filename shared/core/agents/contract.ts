/**
 * The contract between the agent kind (`agent-kind.ts`) and each agent type. The kind reads the trigger into an
 * `AgentTask` (`agentTaskOf`: an `agent.request.v1`, or any other trigger as a message), resolves the definition's
 * `AgentSpec` and hands both to the implementation of `spec.type`, which works through the ports it is given and
 * returns an `AgentOutcome`:
 *
 *   answer    the content of the one `agent.response.v1` answering the task; the kind writes it with the tags
 *             and fields of `shared/domain/CONVENTIONS.md` ("Requests and answers"), plus the extra outputs.
 *   outputs   breadcrumbs to write now, the answer among them or left to a later invocation (the context type's
 *             tool rounds).
 *
 * Errors: a type throws RetriableError for what may pass (429, 5xx, a partner still working) and
 * NonRetriableError for what will not (answered with status `error`); a type's own failure (an MCP tool's
 * `isError`, a failed A2A task, a throwing function) is an answer with status `error`. A type never waits inside
 * the Lambda beyond one bounded call. `mode` (`modes.ts`) and orchestration (`orchestration-agent.ts`) build on it.
 */

import { ORCHESTRATION_ACTIONS, type OrchestrationAction } from '#shared/domain/agent-modes.ts';
import type { AgentSpec } from '#shared/domain/agent-spec.ts';
import type { AgentMode, AgentTypeName } from '#shared/domain/agent-types.ts';
import type { AgentDefinition } from '#shared/domain/definitions.ts';
import { NonRetriableError } from '#shared/domain/errors.ts';
import { AGENT_MODES, AGENT_REQUEST_SCHEMA, correlationTags, requestIdOf } from '#shared/domain/protocol.ts';
import { STREAM_ID_PATTERN } from '#shared/domain/streaming.ts';
import * as z from '#shared/domain/zod.ts';
import type { Log } from '#shared/ports/log.ts';
import type { ExecutionInput, OutputBreadcrumb } from '../executor/contract.ts';

/** The request breadcrumb's context (shared/domain/CONVENTIONS.md). Unknown keys are ignored. */
export const AgentRequestSchema = z.object({
  agent: z.string().check(z.minLength(1)),
  message: z.optional(z.string()),
  input: z.optional(z.unknown()),
  mode: z.optional(z.enum(AGENT_MODES, { error: `expected one of ${AGENT_MODES.join(', ')}` })),
  request_id: z.optional(z.string().check(z.minLength(1), z.maxLength(200))),
  /** Deliverables are one per (conversation, type): later builds in the conversation update it. */
  conversation_id: z.optional(z.string().check(z.minLength(1), z.maxLength(200))),
  depth: z.optional(z.number().check(z.int(), z.minimum(0))),
  /** The deepest an orchestration started for this request may go (the caller's own limit). */
  max_depth: z.optional(z.number().check(z.int(), z.minimum(0))),
  /** Orchestrate sub-agents for this request (seed 004's `payload.orchestrate`). */
  orchestrate: z.optional(z.boolean({ error: 'expected true or false' })),
  orchestrationAction: z.optional(
    z.enum(ORCHESTRATION_ACTIONS, { error: `expected one of ${ORCHESTRATION_ACTIONS.join(', ')}` }),
  ),
  /** The run an action (other than execute) applies to. */
  run_id: z.optional(z.string().check(z.minLength(1), z.maxLength(200))),
  /** rollback: the step to run again (with every step after it). */
  from_step: z.optional(z.string().check(z.minLength(1))),
  /** human-response: the checkpoint step (when several wait), the decision and an optional comment. */
  step: z.optional(z.string().check(z.minLength(1))),
  decision: z.optional(z.enum(['approve', 'reject'], { error: 'expected "approve" or "reject"' })),
  comment: z.optional(z.string().check(z.maxLength(4000))),
  /**
   * The model's answer is streamed to the request's channel under this key (chosen by the client, which subscribes
   * before it writes the request; `shared/core/streaming/`). Absent: nothing is streamed and nothing extra is paid.
   */
  stream_id: z.optional(
    z
      .string()
      .check(z.regex(STREAM_ID_PATTERN, 'expected 8-64 letters, digits or "-" (the client\'s stream key)')),
  ),
});
export type AgentRequest = z.infer<typeof AgentRequestSchema>;

/** What the agent is asked, whatever the trigger. */
export interface AgentTask {
  /** The request's `request_id`, else the trigger breadcrumb's id. */
  readonly requestId: string;
  readonly message?: string;
  readonly input?: unknown;
  readonly mode?: AgentMode;
  /** The trigger's `run:*`, `step:*`, `reply-to:*` tags: copied onto the answer, never onto tool requests. */
  readonly correlationTags: readonly string[];
  readonly conversationId?: string;
  /** The request's `stream_id`: the answer is streamed to its channel as it is generated. */
  readonly streamId?: string;
  /** How deep the request is nested (sub-agent and sub-workflow requests); 0 for a request a person made. */
  readonly depth: number;
  readonly maxDepth?: number;
  /** execute (`orchestrate: true`), or an action on the run named by `control.runId`. */
  readonly orchestration?: {
    readonly action: OrchestrationAction;
    readonly runId?: string;
    readonly fromStep?: string;
    readonly step?: string;
    readonly decision?: 'approve' | 'reject';
    readonly comment?: string;
  };
}

/** The content of the `agent.response.v1` answering a task. */
export type AgentAnswer =
  | {
      readonly status: 'success';
      readonly output?: unknown;
      readonly text?: string;
      readonly logs?: readonly string[];
    }
  | {
      readonly status: 'error';
      readonly error: string;
      readonly output?: unknown;
      readonly text?: string;
      readonly logs?: readonly string[];
    };

export type AgentOutcome =
  | {
      readonly kind: 'answer';
      readonly answer: AgentAnswer;
      readonly outputs?: readonly OutputBreadcrumb[];
      /** More fields for the answer's context (a mode's `plan_id`, `deliverable_id`; an orchestration's `run_id`). */
      readonly details?: Record<string, unknown>;
    }
  | { readonly kind: 'outputs'; readonly outputs: readonly OutputBreadcrumb[] };

/** What a type gets for one task. */
export interface AgentRun<S extends AgentSpec = AgentSpec> {
  readonly spec: S;
  readonly definition: AgentDefinition;
  readonly task: AgentTask;
  /** The agent's workspace: the only one it reads or writes. */
  readonly workspace: string;
  /** `agent:<id>`: created_by of what it writes. */
  readonly principal: string;
  /** The pipeline's input: the trigger, the assembled context, causation. */
  readonly execution: ExecutionInput<AgentDefinition>;
  /** Aborted before the Lambda's deadline; every call a type makes takes it. */
  readonly signal: AbortSignal;
  readonly log: Log;
}

export type SpecOf<T extends AgentTypeName> = Extract<AgentSpec, { type: T }>;

/** One agent type: one module each (`context-agent.ts`, `tool-agent.ts`, …). */
export interface AgentType<T extends AgentTypeName = AgentTypeName> {
  readonly type: T;
  run(run: AgentRun<SpecOf<T>>): Promise<AgentOutcome>;
}

/** The implementations an executor runs, by type; a function carries only the types it serves. */
export type AgentTypes = { readonly [T in AgentTypeName]?: AgentType<T> };

export function answer(a: AgentAnswer, outputs?: readonly OutputBreadcrumb[]): AgentOutcome {
  return { kind: 'answer', answer: a, ...(outputs !== undefined ? { outputs } : {}) };
}

/** The limit on `depth` (nested sub-agent and sub-workflow requests): a deeper request fails clearly. */
export const MAX_REQUEST_DEPTH = 8;

type Trigger = ExecutionInput<unknown>['trigger'];

/**
 * What a trigger asks of the agent: an `agent.request.v1` says it (an unusable one is a NonRetriableError naming
 * the field); any other trigger is a message (its `message` / `content` / `text`) or, failing that, its context
 * as `input`. The request id is `requestIdOf` (the protocol's rule).
 */
export function agentTaskOf(trigger: Trigger): AgentTask {
  const context = trigger.context !== null && typeof trigger.context === 'object' ? trigger.context : {};
  const tags = correlationTags(trigger.tags);
  if (trigger.schema_name === AGENT_REQUEST_SCHEMA) {
    const parsed = AgentRequestSchema.safeParse(context);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new NonRetriableError(
        `the agent.request.v1 is not usable: ${issue?.path.join('.') || '(root)'}: ${issue?.message ?? 'invalid'}`,
      );
    }
    const r = parsed.data;
    if (r.depth !== undefined && r.depth > MAX_REQUEST_DEPTH) {
      throw new NonRetriableError(
        `the request is nested ${r.depth} deep; at most ${MAX_REQUEST_DEPTH} (depth)`,
      );
    }
    const action = r.orchestrationAction ?? (r.orchestrate === true ? 'execute' : undefined);
    if (action !== undefined && action !== 'execute' && r.run_id === undefined) {
      throw new NonRetriableError(`orchestrationAction "${action}" needs run_id (the orchestration's run)`);
    }
    if (action === 'rollback' && r.from_step === undefined) {
      throw new NonRetriableError('orchestrationAction "rollback" needs from_step (the step to run again)');
    }
    return {
      requestId: requestIdOf(trigger),
      ...(r.message !== undefined ? { message: r.message } : {}),
      ...(r.input !== undefined ? { input: r.input } : {}),
      ...(r.mode !== undefined ? { mode: r.mode } : {}),
      correlationTags: tags,
      ...(r.conversation_id !== undefined ? { conversationId: r.conversation_id } : {}),
      ...(r.stream_id !== undefined ? { streamId: r.stream_id } : {}),
      depth: r.depth ?? 0,
      ...(r.max_depth !== undefined ? { maxDepth: r.max_depth } : {}),
      ...(action !== undefined
        ? {
            orchestration: {
              action,
              ...(r.run_id !== undefined ? { runId: r.run_id } : {}),
              ...(r.from_step !== undefined ? { fromStep: r.from_step } : {}),
              ...(r.step !== undefined ? { step: r.step } : {}),
              ...(r.decision !== undefined ? { decision: r.decision } : {}),
              ...(r.comment !== undefined ? { comment: r.comment } : {}),
            },
          }
        : {}),
    };
  }
  const c = context as Record<string, unknown>;
  const text = ['message', 'content', 'text', 'prompt', 'question']
    .map((k) => c[k])
    .find((v): v is string => typeof v === 'string' && v.trim() !== '');
  // A message (a chat's `user.message.v1`) streams its answer as a request does when it names a usable key.
  const streamId =
    typeof c.stream_id === 'string' && STREAM_ID_PATTERN.test(c.stream_id) ? c.stream_id : undefined;
  return {
    requestId: trigger.id,
    ...(text !== undefined ? { message: text } : { input: c }),
    correlationTags: tags,
    ...(streamId !== undefined ? { streamId } : {}),
    depth: 0,
  };
}
