/**
 * `SendStreamingMessage` / `SubscribeToTask` events, produced from the table: the task first, then — reading its
 * state again every `pollMs` — a `TaskArtifactUpdateEvent` per new artifact and a `TaskStatusUpdateEvent` per
 * change of state (or of what an input-required task asks), ending after the final state or when the time allowed
 * is spent (the client subscribes again). A second source may be merged in: `deltas(taskId)`, model output as
 * appended chunks of a streaming artifact, cut off when the task's states end.
 *
 * `sseBody` writes what the SDK's JSON-RPC handler yields as server-sent events exactly as the SDK's express
 * handler does (`data: <JSON-RPC response>`, a mid-stream error as `event: error`), so its client reads them.
 */
import type { StreamResponse, Task } from '@a2a-js/sdk';
import { A2AError } from '@a2a-js/sdk/errors';
import { JsonRpcTransportHandler } from '@a2a-js/sdk/server';
import { isTerminal, STATE, textPart } from './task.ts';

/** Model output of a task, as it is produced (the streaming issue's channel). */
export interface Delta {
  text: string;
  /** The streaming artifact the chunk belongs to (one per task by default). */
  artifactId?: string;
  /** The chunk replaces the artifact's text so far (the model started over) instead of being appended. */
  replace?: boolean;
}
export type DeltaSource = (taskId: string) => AsyncIterable<Delta>;

export interface StreamBounds {
  pollMs: number;
  /** When to stop (epoch ms). */
  deadline: number;
  signal?: AbortSignal | undefined;
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
  });
}

/** What an input-required status asks, to tell one question from the next. */
export function statusKey(task: Task): string {
  const s = task.status;
  if (s?.state !== STATE.inputRequired) return String(s?.state);
  const part = s.message?.parts[0]?.content;
  return `${s.state}:${part?.$case === 'text' ? part.value : ''}`;
}

/** The task's states as events, from `first` on, reading it with `read` (see the header). */
export async function* taskStates(
  first: Task,
  read: () => Promise<Task>,
  bounds: StreamBounds,
): AsyncGenerator<StreamResponse, void, undefined> {
  yield finalIf(isTerminal(first.status?.state), { payload: { $case: 'task', value: first } });
  let last = statusKey(first);
  const sent = new Set(first.artifacts.map((a) => a.artifactId));
  let task = first;
  while (!isTerminal(task.status?.state)) {
    if (bounds.signal?.aborted || Date.now() + bounds.pollMs > bounds.deadline) return;
    await sleep(bounds.pollMs, bounds.signal);
    if (bounds.signal?.aborted) return;
    task = await read();
    const terminal = isTerminal(task.status?.state);
    for (const artifact of task.artifacts) {
      if (sent.has(artifact.artifactId)) continue;
      sent.add(artifact.artifactId);
      yield finalIf(terminal, {
        payload: {
          $case: 'artifactUpdate',
          value: {
            taskId: task.id,
            contextId: task.contextId,
            artifact,
            append: false,
            lastChunk: true,
            metadata: undefined,
          },
        },
      });
    }
    const key = statusKey(task);
    if (key !== last) {
      last = key;
      yield finalIf(terminal, {
        payload: {
          $case: 'statusUpdate',
          value: { taskId: task.id, contextId: task.contextId, status: task.status, metadata: undefined },
        },
      });
    }
  }
}

/** A delta as an appended chunk of the task's streaming artifact. */
/** What `taskStates` yields from a read that found the task ended (`withDeltas` lets the preview finish first). */
const fromFinalRead = new WeakSet<StreamResponse>();

function finalIf(terminal: boolean, response: StreamResponse): StreamResponse {
  if (terminal) fromFinalRead.add(response);
  return response;
}

/**
 * How long the preview may still take once the task has ended. The channel's final event is sent before the answer
 * is written, so its last chunks are normally already on their way; a channel that lost its final would otherwise
 * hold the stream's end.
 */
export const PREVIEW_DRAIN_MS = 2_000;

function deltaEvent(task: Task, delta: Delta, append: boolean): StreamResponse {
  return {
    payload: {
      $case: 'artifactUpdate',
      value: {
        taskId: task.id,
        contextId: task.contextId,
        artifact: {
          artifactId: delta.artifactId ?? `${task.id}-stream`,
          name: 'answer (streaming)',
          description: 'the answer as the model writes it',
          parts: [textPart(delta.text)],
          metadata: undefined,
          extensions: [],
        },
        append,
        lastChunk: false,
        metadata: undefined,
      },
    },
  };
}

/**
 * The states, with the deltas merged in as they come (after the task event, before the final state); the deltas
 * stop when the states end. Without a delta source, the states alone.
 */
export async function* withDeltas(
  first: Task,
  states: AsyncGenerator<StreamResponse, void, undefined>,
  deltas: DeltaSource | undefined,
): AsyncGenerator<StreamResponse, void, undefined> {
  if (deltas === undefined) {
    yield* states;
    return;
  }
  // Deltas are a preview: a source that fails ends them, never the stream (the states carry the answer).
  type Next =
    | { from: 'states'; r: IteratorResult<StreamResponse> }
    | { from: 'deltas'; r: IteratorResult<Delta> };
  let chunks: AsyncIterator<Delta> | undefined;
  const started = new Set<string>();
  const chunkEvent = (delta: Delta): StreamResponse => {
    const id = delta.artifactId ?? `${first.id}-stream`;
    const event = deltaEvent(first, delta, started.has(id) && delta.replace !== true);
    started.add(id);
    return event;
  };
  try {
    // The task comes first, whatever the deltas do (a stream's first event is the task).
    const opening = await states.next();
    if (opening.done) return;
    yield opening.value;
    const source = deltas(first.id)[Symbol.asyncIterator]();
    chunks = source;
    const nextDelta = (): Promise<Next> =>
      source.next().then(
        (r) => ({ from: 'deltas', r }),
        () => ({ from: 'deltas', r: { done: true, value: undefined } }),
      );
    let stateNext: Promise<Next> | undefined = states.next().then((r) => ({ from: 'states', r }));
    let deltaNext: Promise<Next> | undefined = nextDelta();
    while (stateNext !== undefined) {
      const got: Next = await Promise.race(deltaNext ? [stateNext, deltaNext] : [stateNext]);
      if (got.from === 'states') {
        if (got.r.done) return;
        if (deltaNext !== undefined && fromFinalRead.has(got.r.value)) {
          // The task ended: the preview's last chunks come before the answer and the final status, not after.
          const until = Date.now() + PREVIEW_DRAIN_MS;
          while (deltaNext !== undefined) {
            const left = until - Date.now();
            const timer = new AbortController();
            const next: Next | undefined =
              left <= 0
                ? undefined
                : await Promise.race([deltaNext, sleep(left, timer.signal).then(() => undefined)]);
            timer.abort();
            if (next === undefined || next.from !== 'deltas' || next.r.done) {
              deltaNext = undefined;
              break;
            }
            yield chunkEvent(next.r.value);
            deltaNext = nextDelta();
          }
        }
        yield got.r.value;
        stateNext = states.next().then((r) => ({ from: 'states', r }));
      } else if (got.r.done) {
        deltaNext = undefined;
      } else {
        yield chunkEvent(got.r.value);
        deltaNext = nextDelta();
      }
    }
  } finally {
    // Not awaited: a source waiting for its next chunk would hold the stream's end until it came.
    void chunks?.return?.()?.catch(() => undefined);
    await states.return();
  }
}

/** SSE headers, as the SDK's express handler sends them. */
export const SSE_HEADERS = {
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache',
  connection: 'keep-alive',
  'x-accel-buffering': 'no',
};

/**
 * The JSON-RPC responses of a stream as server-sent events (the first already read), and a mid-stream failure as
 * an `event: error` carrying the JSON-RPC error, as the SDK's express handler writes them.
 */
export async function* sseBody(
  first: unknown,
  rest: AsyncIterator<unknown>,
  requestId: string | number | null,
  onUnexpectedError: (error: unknown) => void = () => undefined,
): AsyncGenerator<string, void, undefined> {
  yield `data: ${JSON.stringify(first)}\n\n`;
  try {
    for (;;) {
      const next = await rest.next();
      if (next.done) return;
      yield `data: ${JSON.stringify(next.value)}\n\n`;
    }
  } catch (error) {
    // An A2A error says what the client did wrong; anything else is ours, and its text stays in the log.
    if (!(error instanceof A2AError)) onUnexpectedError(error);
    const response = {
      jsonrpc: '2.0',
      id: requestId,
      error:
        error instanceof A2AError
          ? JsonRpcTransportHandler.mapToJSONRPCError(error)
          : { code: -32603, message: 'Internal error' },
    };
    yield `event: error\ndata: ${JSON.stringify(response)}\n\n`;
  } finally {
    await rest.return?.(undefined);
  }
}
