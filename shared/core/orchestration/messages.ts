/**
 * The run's side of the wire (shared/domain/CONVENTIONS.md "Requests and answers"): breadcrumbs in → engine events, engine
 * effects → breadcrumbs out. The engine (advance.ts) knows neither.
 *
 * In: a `workflow.request.v1` naming the workflow starts a run (so does any other breadcrumb an explicit
 * subscription matched: its context is the input). Everything tagged `reply-to:workflow:<id>` belongs to one of
 * its runs (`run:<run id>`): `tool.response.v1`, `agent.response.v1` (and the older `agent.error.v1`),
 * `workflow.result.v1` / `workflow.error.v1` (and a pre-engine sub-workflow's own answer schema),
 * `human.response.v1`, `workflow.control.v1`, `workflow.timer.v1`.
 *
 * Out: requests tagged `run:<run id>`, `step:<step key>`, `reply-to:workflow:<id>`; the result tagged
 * `request:<request id>` plus the request's own `run:`/`step:`/`reply-to:` tags (so a parent run receives it);
 * controls cancelling sub-runs; and timers, which become `workflow.timer.v1` breadcrumbs when they fire.
 */

import {
  addUsage,
  BudgetStopSchema,
  type BudgetUsed,
  BudgetUsedSchema,
  NO_USAGE,
  RaisedLimitsSchema,
} from '#shared/domain/budget.ts';
import { usageRecordOf } from '#shared/domain/llm-usage.ts';
import {
  AGENT_ERROR_SCHEMA,
  AGENT_REQUEST_SCHEMA,
  AGENT_RESPONSE_SCHEMA,
  CONTROL_SCHEMA,
  correlationTags,
  HUMAN_ERROR_SCHEMA,
  HUMAN_REQUEST_SCHEMA,
  HUMAN_RESPONSE_SCHEMA,
  type IncomingBreadcrumb,
  REPLY_TO_TAG_PREFIX,
  RUN_SCHEMA,
  RUN_TAG_PREFIX,
  requestTag,
  runTag,
  stepTag,
  TIMER_SCHEMA,
  TOOL_REQUEST_SCHEMA,
  TOOL_RESPONSE_SCHEMA,
  tagValue,
  WORKFLOW_ERROR_SCHEMA,
  WORKFLOW_REQUEST_SCHEMA,
  WORKFLOW_RESULT_SCHEMA,
} from '#shared/domain/protocol.ts';
import { type WorkflowDefinition, workflowPrincipal } from '#shared/domain/workflow-definition.ts';
import * as z from '#shared/domain/zod.ts';
import type { Waiter, WaitKey } from '#shared/ports/wait-index.ts';
import type { Effect, RequestEffect, ResultEffect, TimerEffect, WaitEntryEffect } from './effects.ts';
import { type AnswerEvent, CONTROL_ACTIONS, type RunEvent } from './events.ts';
import { runIdFor } from './ids.ts';
import { ParentSchema, type Run } from './run.ts';
import { stepKindOf } from './steps/kinds.ts';

export const SCHEMAS = {
  workflowRequest: WORKFLOW_REQUEST_SCHEMA,
  workflowResult: WORKFLOW_RESULT_SCHEMA,
  workflowError: WORKFLOW_ERROR_SCHEMA,
  toolRequest: TOOL_REQUEST_SCHEMA,
  toolResponse: TOOL_RESPONSE_SCHEMA,
  agentRequest: AGENT_REQUEST_SCHEMA,
  agentResponse: AGENT_RESPONSE_SCHEMA,
  agentError: AGENT_ERROR_SCHEMA,
  humanRequest: HUMAN_REQUEST_SCHEMA,
  humanResponse: HUMAN_RESPONSE_SCHEMA,
  humanError: HUMAN_ERROR_SCHEMA,
  control: CONTROL_SCHEMA,
  timer: TIMER_SCHEMA,
} as const;

export function replyToTag(workflowId: string): string {
  return `${REPLY_TO_TAG_PREFIX}${workflowPrincipal(workflowId)}`;
}

/** Who drives a run: its workflow's executor, or the orchestrating agent (run.ts `driver`). */
export function runDriver(run: Pick<Run, 'workflow' | 'driver'>): string {
  return run.driver ?? workflowPrincipal(run.workflow);
}

/** The `reply-to:` tag of everything addressed to a run (answers, human responses, controls, timers). */
export function runReplyToTag(run: Pick<Run, 'workflow' | 'driver'>): string {
  return `${REPLY_TO_TAG_PREFIX}${runDriver(run)}`;
}

// ---------------------------------------------------------------------------------------------------------------
// Shapes of what runs read (the API validates what it writes with the same schemas)

const NonEmpty = z.string().check(z.minLength(1));

export const WorkflowRequestSchema = z.object({
  workflow: NonEmpty,
  input: z.optional(z.unknown()),
  request_id: z.optional(NonEmpty),
  depth: z.optional(z.number().check(z.int(), z.minimum(0))),
  parent: z.optional(ParentSchema),
});

export const HumanResponseSchema = z.object({
  request_id: NonEmpty,
  decision: z.enum(['approve', 'reject'], { error: 'expected "approve" or "reject"' }),
  input: z.optional(z.unknown()),
  comment: z.optional(z.string({ error: 'expected a string' })),
});
export type HumanResponse = z.infer<typeof HumanResponseSchema>;

export const ControlSchema = z.object({
  run_id: NonEmpty,
  action: z.enum(CONTROL_ACTIONS, { error: `expected one of ${CONTROL_ACTIONS.join(', ')}` }),
  from_step: z.optional(NonEmpty),
  /** `resume`: budget limits the person raises (`limits.ts`). */
  limits: z.optional(RaisedLimitsSchema),
});
export type Control = z.infer<typeof ControlSchema>;

const AnswerSchema = z.object({
  request_id: z.optional(z.string()),
  status: z.optional(z.string()),
  output: z.optional(z.unknown()),
  text: z.optional(z.unknown()),
  error: z.optional(z.unknown()),
  /** `agent.error.v1` names the request it answers here. */
  response_to: z.optional(z.string()),
  workflow_id: z.optional(z.string()),
});

const TimerFiredSchema = z.object({ timer_id: NonEmpty });

// ---------------------------------------------------------------------------------------------------------------
// In

export type RunMessage = { readonly run_id: string; readonly event: RunEvent } | { readonly ignored: string };

function errorText(error: unknown): string | undefined {
  if (error === undefined || error === null) return undefined;
  if (typeof error === 'string') return error;
  if (typeof error === 'object' && 'message' in error && typeof error.message === 'string')
    return error.message;
  return JSON.stringify(error);
}

function start(
  trigger: IncomingBreadcrumb,
  ref: DefinitionAt,
  request?: z.infer<typeof WorkflowRequestSchema>,
): RunMessage {
  const run_id = runIdFor(trigger.id);
  return {
    run_id,
    event: {
      type: 'start',
      run_id,
      request_id: request?.request_id ?? trigger.id,
      definition_id: ref.id,
      workflow_version: ref.version,
      input: request === undefined ? trigger.context : (request.input ?? {}),
      depth: request?.depth ?? 0,
      parent: request?.parent,
      reply_tags: correlationTags(trigger.tags),
      trigger: { id: trigger.id, schema_name: trigger.schema_name, context: trigger.context },
    },
  };
}

/** The definition breadcrumb a run follows: its id and version. */
export interface DefinitionAt {
  readonly id: string;
  readonly version: number;
}

/** What a breadcrumb that triggered the workflow means for which run. */
export function readRunMessage(
  trigger: IncomingBreadcrumb,
  definition: WorkflowDefinition,
  ref: DefinitionAt,
): RunMessage {
  const workflowId = definition.workflow_id;
  const addressed = trigger.tags.includes(replyToTag(workflowId));
  if (!addressed) {
    if (trigger.schema_name === SCHEMAS.workflowRequest) {
      const request = WorkflowRequestSchema.safeParse(trigger.context);
      if (!request.success)
        return { ignored: `workflow.request.v1 ${trigger.id} is malformed: ${request.error.message}` };
      if (request.data.workflow !== workflowId)
        return { ignored: `request ${trigger.id} names another workflow` };
      return start(trigger, ref, request.data);
    }
    // A breadcrumb an explicit subscription matched: it is the input.
    return start(trigger, ref);
  }
  return readAddressedMessage(trigger);
}

/**
 * What a breadcrumb addressed to a run (tagged `reply-to:<driver>`) means for it: a control, a human response, a
 * timer, or an answer to one of its requests. The workflow executor and orchestrating agents read them alike.
 */
export function readAddressedMessage(trigger: IncomingBreadcrumb): RunMessage {
  const context = trigger.context;
  const by = trigger.created_by;
  switch (trigger.schema_name) {
    case SCHEMAS.control: {
      const control = ControlSchema.safeParse(context);
      if (!control.success)
        return { ignored: `control ${trigger.id} is malformed: ${control.error.message}` };
      return {
        run_id: control.data.run_id,
        event: {
          type: 'control',
          id: trigger.id,
          action: control.data.action,
          from_step: control.data.from_step,
          ...(control.data.limits !== undefined ? { limits: control.data.limits } : {}),
          by,
          relay_of: trigger.caused_by,
        },
      };
    }
    case SCHEMAS.humanResponse: {
      const runId = tagValue(trigger.tags, RUN_TAG_PREFIX);
      const response = HumanResponseSchema.safeParse(context);
      if (runId === undefined) return { ignored: `human response ${trigger.id} has no run: tag` };
      if (!response.success)
        return { ignored: `human response ${trigger.id} is malformed: ${response.error.message}` };
      return {
        run_id: runId,
        event: {
          type: 'human',
          id: trigger.id,
          request_id: response.data.request_id,
          decision: response.data.decision,
          input: response.data.input,
          comment: response.data.comment,
          by,
          relay_of: trigger.caused_by,
        },
      };
    }
    case SCHEMAS.timer: {
      const runId = tagValue(trigger.tags, RUN_TAG_PREFIX);
      const timer = TimerFiredSchema.safeParse(context);
      if (runId === undefined || !timer.success) return { ignored: `timer ${trigger.id} is malformed` };
      return { run_id: runId, event: { type: 'timer', id: timer.data.timer_id } };
    }
    default: {
      const runId = tagValue(trigger.tags, RUN_TAG_PREFIX);
      if (runId === undefined) return { ignored: `${trigger.schema_name} ${trigger.id} has no run: tag` };
      const answer = AnswerSchema.safeParse(context);
      if (!answer.success) return { ignored: `${trigger.schema_name} ${trigger.id} is not an answer` };
      const a = answer.data;
      const requestId = a.request_id ?? a.response_to;
      if (requestId === undefined)
        return { ignored: `${trigger.schema_name} ${trigger.id} names no request_id` };
      let ok: boolean;
      let output: unknown = a.output ?? null;
      switch (trigger.schema_name) {
        case SCHEMAS.toolResponse:
          ok = a.status === 'success';
          break;
        case SCHEMAS.agentResponse:
          ok = a.status === 'success';
          output = a.output ?? a.text ?? null;
          break;
        case SCHEMAS.agentError:
        case SCHEMAS.workflowError:
          ok = false;
          break;
        default:
          // workflow.result.v1, or a pre-engine sub-workflow's own answer schema.
          if (a.workflow_id === undefined && trigger.schema_name !== SCHEMAS.workflowResult) {
            return { ignored: `${trigger.schema_name} ${trigger.id} is not an answer runs read` };
          }
          ok = a.status === 'succeeded' || a.status === 'success';
      }
      return {
        run_id: runId,
        event: {
          type: 'answer',
          id: trigger.id,
          request_id: requestId,
          ok,
          output,
          error: ok
            ? undefined
            : (errorText(a.error) ?? `${trigger.schema_name} with status ${a.status ?? 'none'}`),
          by,
          ...answerUsage(trigger),
        },
      };
    }
  }
}

/**
 * The model usage an answer records, for the run's budget: an agent turn's `turn_usage` (every call of the turn,
 * its tool rounds included), else its `llm_usage` (the calls of the invocation that wrote it); only in what
 * crumbs' own writers wrote (a person's write could claim anything), as the usage totals count them.
 */
function answerUsage(trigger: IncomingBreadcrumb): Pick<AnswerEvent, 'usage' | 'budget_stop'> {
  const by = trigger.created_by;
  if (!by.startsWith('agent:') && !by.startsWith('tool:')) return {};
  const context = (trigger.context ?? {}) as Record<string, unknown>;
  const stop = BudgetStopSchema.safeParse(context.budget_stop);
  const turn = BudgetUsedSchema.safeParse(context.turn_usage);
  let usage: BudgetUsed | undefined = turn.success ? turn.data : undefined;
  if (usage === undefined) {
    const record = usageRecordOf(context);
    if (record !== undefined) {
      usage = { ...NO_USAGE };
      for (const call of record.calls) {
        usage = addUsage(usage, {
          tokens: call.input_tokens + call.output_tokens,
          cost_nusd: call.cost_nusd ?? 0,
          calls: call.calls ?? 1,
        });
      }
    }
  }
  return {
    ...(usage !== undefined ? { usage } : {}),
    ...(stop.success ? { budget_stop: stop.data } : {}),
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Out

/** A breadcrumb the run writes, id chosen (create-if-absent). */
export interface RunWrite {
  readonly id: string;
  readonly schema_name: string;
  readonly title: string;
  readonly tags: string[];
  readonly context: Record<string, unknown>;
}

/** The tags runs are listed by (`GET …/runs?workflow=&status=`). */
export function runListTag(filter: {
  workflow?: string | undefined;
  status?: string | undefined;
}): string | undefined {
  if (filter.status !== undefined) {
    return filter.workflow !== undefined
      ? `run-status:${filter.workflow}:${filter.status}`
      : `run-status:${filter.status}`;
  }
  return filter.workflow !== undefined ? `workflow:${filter.workflow}` : undefined;
}

/** The run breadcrumb itself. */
export function runBreadcrumb(run: Run): RunWrite {
  return {
    id: run.run_id,
    schema_name: RUN_SCHEMA,
    title: `${run.workflow}: ${run.status}`,
    tags: [
      `workflow:${run.workflow}`,
      runTag(run.run_id),
      `run-status:${run.status}`,
      `run-status:${run.workflow}:${run.status}`,
    ],
    context: run as unknown as Record<string, unknown>,
  };
}

function correlation(run: Run, step: string): string[] {
  return [runTag(run.run_id), stepTag(step), runReplyToTag(run)];
}

/** A step's request, as its kind writes it (`steps/`). */
function requestBreadcrumb(run: Run, effect: RequestEffect): RunWrite {
  const request = stepKindOf(effect.kind).request;
  if (request === undefined) throw new Error(`a ${effect.kind} step writes no request`);
  return request.breadcrumb({
    run,
    effect,
    tags: correlation(run, effect.step),
    title: `${run.workflow} › ${effect.step}`,
    driver: runDriver(run),
    schemas: SCHEMAS,
  });
}

function resultBreadcrumb(definition: WorkflowDefinition, run: Run, effect: ResultEffect): RunWrite {
  const tags = [
    requestTag(run.request_id),
    ...run.reply_tags,
    `workflow:${run.workflow}`,
    ...definition.answer.tags,
  ];
  const base = { workflow_id: run.workflow, run_id: run.run_id, request_id: run.request_id };
  if (effect.status === 'succeeded') {
    // A workflow without `output` answers with `result` and every top-level step's output too, which its callers read.
    const legacy =
      definition.output === undefined
        ? {
            result: effect.output ?? null,
            steps: Object.fromEntries(
              Object.entries(run.steps)
                .filter(([key]) => !key.includes('['))
                .map(([key, state]) => [key, state.output ?? null]),
            ),
          }
        : {};
    return {
      id: effect.id,
      schema_name: definition.answer.schema_name,
      title: `${run.workflow}: succeeded`,
      tags,
      context: { ...base, status: 'succeeded', output: effect.output ?? null, ...legacy },
    };
  }
  return {
    id: effect.id,
    schema_name: SCHEMAS.workflowError,
    title: `${run.workflow}: ${effect.status}`,
    tags: [...tags, 'workflow:error'],
    context: {
      ...base,
      status: effect.status,
      error: effect.error ?? effect.status,
      ...(effect.failed_step !== undefined ? { step: effect.failed_step } : {}),
    },
  };
}

/** The breadcrumb a timer writes when it fires (`workflow.timer.v1`, by `system:scheduler`). */
export function timerBreadcrumb(run: Run, effect: TimerEffect): RunWrite {
  return {
    id: effect.id,
    schema_name: SCHEMAS.timer,
    title: `${run.workflow} › ${effect.step}: ${effect.purpose} timer`,
    tags: correlation(run, effect.step),
    context: {
      timer_id: effect.id,
      run_id: run.run_id,
      step: effect.step,
      attempt: effect.attempt,
      purpose: effect.purpose,
      at: effect.at,
    },
  };
}

/** How the driver carries out one effect. */
export type Action =
  | { readonly type: 'write'; readonly breadcrumb: RunWrite }
  | { readonly type: 'set_timer'; readonly id: string; readonly at: string; readonly breadcrumb: RunWrite }
  | { readonly type: 'cancel_timer'; readonly id: string }
  | { readonly type: 'wait'; readonly key: RunWaitKey; readonly waiter: Waiter }
  | { readonly type: 'unwait'; readonly key: RunWaitKey; readonly attempt_id: string };

/** A wait index key within the run's workspace. */
export type RunWaitKey = Omit<WaitKey, 'workspace'>;

/** The wait index key of a wait_for attempt's entry (in the run's workspace). */
export function waitKeyOf(run: Run, entry: WaitEntryEffect): RunWaitKey {
  return {
    workflow: run.workflow,
    step: entry.step_id,
    ...(entry.correlation !== undefined ? { correlation: entry.correlation } : {}),
  };
}

/** A wait_for attempt's entry: its key in the run's workspace, and the attempt. */
export function waitOf(run: Run, entry: WaitEntryEffect): { key: RunWaitKey; waiter: Waiter } {
  return {
    key: waitKeyOf(run, entry),
    waiter: {
      attempt_id: entry.attempt_id,
      run_id: run.run_id,
      step: entry.step,
      since: entry.since,
      until: entry.until,
    },
  };
}

export function actionOf(definition: WorkflowDefinition, run: Run, effect: Effect): Action {
  switch (effect.type) {
    case 'wait_entry':
      return { type: 'wait', ...waitOf(run, effect) };
    case 'remove_wait':
      return { type: 'unwait', key: waitKeyOf(run, effect.entry), attempt_id: effect.entry.attempt_id };
    case 'request':
      return { type: 'write', breadcrumb: requestBreadcrumb(run, effect) };
    case 'result':
      return { type: 'write', breadcrumb: resultBreadcrumb(definition, run, effect) };
    case 'timer':
      return { type: 'set_timer', id: effect.id, at: effect.at, breadcrumb: timerBreadcrumb(run, effect) };
    case 'cancel_timer':
      return { type: 'cancel_timer', id: effect.id };
    case 'cancel_run':
      return {
        type: 'write',
        breadcrumb: {
          id: effect.id,
          schema_name: SCHEMAS.control,
          title: `${run.workflow} › ${effect.step}: cancel sub-run`,
          tags: [runTag(effect.run_id), replyToTag(effect.workflow)],
          context: { run_id: effect.run_id, action: 'cancel' },
        },
      };
    case 'response_error':
      return {
        type: 'write',
        breadcrumb: {
          id: effect.id,
          schema_name: SCHEMAS.humanError,
          title: `${run.workflow} › ${effect.step}: response not accepted`,
          tags: [
            requestTag(effect.request_id),
            `response:${effect.response_id}`,
            runTag(run.run_id),
            stepTag(effect.step),
          ],
          context: {
            request_id: effect.request_id,
            response_id: effect.response_id,
            run_id: run.run_id,
            step: effect.step,
            error: effect.error,
          },
        },
      };
  }
}
