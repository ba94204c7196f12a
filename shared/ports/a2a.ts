/**
 * The A2A (Agent2Agent v1.0) client port: read a partner's agent card, send it a message, read a task. The adapter
 * is `shared/adapters/a2a/a2a-client.ts` (the official `@a2a-js/sdk`).
 */

export interface A2aEndpoint {
  /** The agent card's URL; the card says where and how to send messages. */
  readonly cardUrl: string;
  /** Resolved headers (credentials already read from their secret references). */
  readonly headers?: Readonly<Record<string, string>>;
  /**
   * The origins the definition configured (its endpoint's and its card's): every request stays on them, so a card
   * or a redirect naming another origin is refused. Absent: the card URL's origin.
   */
  readonly origins?: readonly string[];
}

export interface A2aCard {
  readonly name: string;
  readonly description?: string;
  readonly version?: string;
  readonly skills: readonly { id: string; name: string; description?: string }[];
}

export const A2A_TASK_STATES = [
  'submitted',
  'working',
  'completed',
  'failed',
  'canceled',
  'rejected',
  'input-required',
  'auth-required',
  'unknown',
] as const;
export type A2aTaskState = (typeof A2A_TASK_STATES)[number];

/** States after which a task never changes (input-required and auth-required wait for the client). */
export const A2A_FINAL_STATES: ReadonlySet<A2aTaskState> = new Set([
  'completed',
  'failed',
  'canceled',
  'rejected',
  'input-required',
  'auth-required',
]);

/** A message part as crumbs reads it: text, structured data, or a file reference. */
export type A2aPart =
  | { readonly kind: 'text'; readonly text: string }
  | { readonly kind: 'data'; readonly data: unknown }
  | { readonly kind: 'file'; readonly url?: string; readonly mediaType?: string; readonly filename?: string };

/** The answer to a message: a direct message, or a task with its state and artifacts. */
export interface A2aReply {
  readonly taskId?: string;
  readonly contextId?: string;
  readonly state: A2aTaskState;
  /** The agent's message (a direct reply, or the task status message). */
  readonly parts: readonly A2aPart[];
  readonly artifacts: readonly { name?: string; parts: readonly A2aPart[] }[];
}

export interface A2aMessage {
  /** Stable per request, so a resend after a crash is recognisably the same message. */
  readonly messageId: string;
  readonly parts: readonly A2aPart[];
  readonly contextId?: string;
}

export interface A2aClient {
  card(endpoint: A2aEndpoint, signal: AbortSignal): Promise<A2aCard>;
  /**
   * Sends the message and follows the task until it ends or the signal aborts. `onTask` is told the task's id as
   * soon as the partner names it (before the task ends), so a caller can keep it and read the task later.
   */
  send(
    endpoint: A2aEndpoint,
    message: A2aMessage,
    signal: AbortSignal,
    onTask?: (taskId: string) => Promise<void>,
  ): Promise<A2aReply>;
  getTask(endpoint: A2aEndpoint, taskId: string, signal: AbortSignal): Promise<A2aReply>;
}
