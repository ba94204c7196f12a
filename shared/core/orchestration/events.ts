/**
 * What happens to a run: the engine's input. `messages.ts` reads these from breadcrumbs (a request, an answer, a
 * human response, a control, a timer); the engine never sees a breadcrumb.
 *
 * Every event carries the id of the breadcrumb it came from, so a redelivered one is recognised: an answer by the
 * step attempt it was applied to, a control by the run's list of applied controls, a timer by the state it fires.
 */
import type { BudgetStop, BudgetUsed, RaisedLimits } from '#shared/domain/budget.ts';
import type { Parent } from './run.ts';

export interface StartEvent {
  readonly type: 'start';
  readonly run_id: string;
  readonly request_id: string;
  readonly definition_id: string;
  readonly workflow_version: number;
  readonly input: unknown;
  readonly depth: number;
  readonly parent?: Parent | undefined;
  readonly reply_tags: readonly string[];
  readonly trigger: { readonly id: string; readonly schema_name: string; readonly context: unknown };
  /** An agent-driven run (run.ts `driver`, `definition`). */
  readonly driver?: string | undefined;
  readonly definition?: Record<string, unknown> | undefined;
}

/** A tool, agent or sub-workflow answered a step's request. */
export interface AnswerEvent {
  readonly type: 'answer';
  /** The answer breadcrumb's id. */
  readonly id: string;
  readonly request_id: string;
  readonly ok: boolean;
  readonly output?: unknown;
  readonly error?: string | undefined;
  /** The answer's writer. */
  readonly by: string;
  /** The model calls the answer records (the whole agent turn's, else its `llm_usage`). */
  readonly usage?: BudgetUsed | undefined;
  /** The agent stopped before a call that would have crossed this budget. */
  readonly budget_stop?: BudgetStop | undefined;
}

/** Who an event comes from: its writer, and what it relays (`authority.ts`). */
interface Actor {
  /** The breadcrumb's writer. */
  readonly by: string;
  /** The breadcrumb's `causation.caused_by` (`<id>@<version>`): the message it relays, if any. */
  readonly relay_of?: string | undefined;
  /** The `user:` writer of `relay_of`, set by the driver once it has read it in the run's workspace. */
  readonly on_behalf_of?: string | undefined;
}

export interface HumanEvent extends Actor {
  readonly type: 'human';
  readonly id: string;
  readonly request_id: string;
  readonly decision: 'approve' | 'reject';
  readonly input?: unknown;
  readonly comment?: string | undefined;
}

export const CONTROL_ACTIONS = ['pause', 'resume', 'cancel', 'retry'] as const;
export type ControlAction = (typeof CONTROL_ACTIONS)[number];

export interface ControlEvent extends Actor {
  readonly type: 'control';
  readonly id: string;
  readonly action: ControlAction;
  readonly from_step?: string | undefined;
  /** `resume`: the run's budget limits raised by the person resuming it. */
  readonly limits?: RaisedLimits | undefined;
}

export interface TimerEvent {
  readonly type: 'timer';
  /** The timer's id (ids.ts `timerIdFor`). */
  readonly id: string;
}

/** A breadcrumb as a wait_for step sees it: its context view (llm_hints applied), never the full record. */
export interface MatchedBreadcrumb {
  readonly id: string;
  readonly version: number;
  readonly schema_name: string;
  readonly tags: readonly string[];
  readonly context: Record<string, unknown>;
  readonly created_by: string;
  readonly [field: string]: unknown;
}

/** A write matched the wait of a wait_for step attempt (found through the wait index, `workflow-kind.ts`). */
export interface MatchEvent {
  readonly type: 'matched';
  /** `<breadcrumb id>@<version>`: a redelivery of the same write is recognised by the attempt's `answer_id`. */
  readonly id: string;
  /** The waiting attempt's id. */
  readonly request_id: string;
  readonly breadcrumb: MatchedBreadcrumb;
}

/** The wait index refused a wait_for attempt's entry (its per-key bound): the attempt fails with why. */
export interface WaitRefusedEvent {
  readonly type: 'wait_refused';
  readonly id: string;
  readonly request_id: string;
  readonly error: string;
}

export type RunEvent =
  | StartEvent
  | AnswerEvent
  | HumanEvent
  | ControlEvent
  | TimerEvent
  | MatchEvent
  | WaitRefusedEvent;
