/**
 * `crumbs chat` and `crumbs ask` print an answer as the model writes it: before the request is written they
 * subscribe to its delta channel (`GET …/streams/{id}` says where; `shared/core/streaming/subscriber.ts` speaks
 * AppSync Events' protocol, the same against AWS and `crumbs dev`), then print deltas as they arrive and, once the
 * final event names the stored answer, the answer itself where it differs from what was streamed (a delta lost
 * on the way, text held past the stream's cap). The stored answer is the truth; the stream is a preview.
 *
 * On a terminal every event redraws the text since the answer began (a `reset` — a broken call tried again, a tool
 * round — drops what it replaces, and says why in a dim line); with `--stream` on a pipe the text is appended.
 * Ctrl-C asks the request to stop (`POST …/requests/{id}/cancel`); a second one leaves at once. When the stack has
 * no channel, or subscribing fails, the command waits for the answer as it does with `--no-stream`.
 */
import { randomUUID } from 'node:crypto';
import WebSocket from 'ws';
import type { Breadcrumb, CrumbsClient } from '#shared/client/crumbs-client.ts';
import type { DeltaEvent } from '#shared/core/streaming/events.ts';
import type { WebSocketConstructor } from '#shared/core/streaming/subscriber.ts';
import type { CliIo, OptionValues } from './args.ts';
import { UsageError } from './args.ts';

type FinalEvent = Extract<DeltaEvent, { type: 'final' }>;

export const STREAM_OPTIONS = {
  stream: { type: 'boolean' },
  'no-stream': { type: 'boolean' },
} as const;

/** The flags' usage lines, their descriptions starting at `column`. */
export function streamUsage(column: number): string {
  const line = (flag: string, text: string) => `  ${flag.padEnd(column - 2)}${text}`;
  return [
    line('--stream', 'print the answer as it is written even when stdout is not a terminal'),
    line('--no-stream', 'wait for the whole answer (the default when stdout is not a terminal)'),
  ].join('\n');
}

/** How the answer is shown: redrawn on a terminal, appended on a pipe, or not streamed. */
export type StreamMode = 'terminal' | 'append' | 'off';

export function streamModeOf(values: OptionValues, io: CliIo, json: boolean): StreamMode {
  if (values.stream === true && values['no-stream'] === true) {
    throw new UsageError('--stream and --no-stream exclude each other');
  }
  if (values['no-stream'] === true || json) return 'off';
  if (io.stdoutIsTerminal === true) return 'terminal';
  return values.stream === true ? 'append' : 'off';
}

const SAVE = '\x1b7';
const RESTORE_AND_CLEAR = '\x1b8\x1b[J';
const dim = (s: string) => `\x1b[2m${s}\x1b[22m`;

/** What a streamed answer printed, and how it ended. */
export interface LiveAnswer {
  readonly streamId: string;
  /** Resolves with the final event, or undefined when the channel ended without one. */
  readonly done: Promise<FinalEvent | undefined>;
  /** Prints the stored answer's text where the stream showed something else; ends the line. */
  settle(storedText: string | undefined): void;
  /** Asks the request to stop on Ctrl-C once it is written; returns the unsubscribe. */
  cancelOnInterrupt(requestId: string): () => void;
  close(): void;
}

/**
 * Subscribes to a new stream for a request about to be written; undefined when streaming is off, the stack has no
 * channel, or the subscription failed (said on stderr): the caller then waits for the whole answer.
 */
export async function openLiveAnswer(
  client: CrumbsClient,
  io: CliIo,
  mode: StreamMode,
): Promise<LiveAnswer | undefined> {
  if (mode === 'off') return undefined;
  const streamId = randomUUID();
  const info = await client.streamInfo(streamId).catch(() => undefined);
  if (info === undefined) return undefined;
  let text = '';
  let status: string | undefined;
  let printed = false;
  const draw = () => {
    if (mode !== 'terminal') return;
    io.stdout(`${RESTORE_AND_CLEAR}${text}${status !== undefined ? dim(`\n… ${status}`) : ''}`);
  };
  const onEvent = (event: DeltaEvent) => {
    if (event.type === 'delta') {
      text += event.text;
      status = undefined;
      if (mode === 'append') io.stdout(event.text);
      printed = true;
    } else if (event.type === 'reset') {
      if (mode === 'append' && text !== '') io.stdout('\n');
      text = '';
      // A new part of the answer says no reason: the last one (a tool round) still holds.
      status = event.reason || status;
    } else return;
    draw();
  };
  let subscription: Awaited<ReturnType<CrumbsClient['subscribeToStream']>>;
  try {
    subscription = await client.subscribeToStream(info, {
      onEvent,
      webSocket: WebSocket as unknown as WebSocketConstructor,
    });
  } catch (error) {
    io.stderr(`crumbs: not streaming (${(error as Error).message}); waiting for the whole answer\n`);
    return undefined;
  }
  if (mode === 'terminal') io.stdout(SAVE);
  return {
    streamId,
    done: subscription.done,
    settle(storedText) {
      status = undefined;
      if (storedText !== undefined && storedText !== text) {
        if (mode === 'terminal') io.stdout(`${RESTORE_AND_CLEAR}${storedText}`);
        else io.stdout(`${printed ? '\n' : ''}${storedText}`);
        text = storedText;
      } else if (mode === 'terminal') draw();
      io.stdout('\n');
    },
    cancelOnInterrupt(requestId) {
      let asked = false;
      const onSignal = () => {
        if (asked) {
          (io.exit ?? process.exit)(130);
          return;
        }
        asked = true;
        io.stderr('\ncrumbs: cancelling… (Ctrl-C again to leave at once)\n');
        client.cancelRequest(requestId, 'Ctrl-C in the CLI').catch((error: unknown) => {
          io.stderr(`crumbs: the cancel was refused: ${(error as Error).message}\n`);
        });
      };
      if (io.onSignal) return io.onSignal((signal) => signal === 'SIGINT' && onSignal());
      process.on('SIGINT', onSignal);
      return () => process.off('SIGINT', onSignal);
    },
    close: () => subscription.close(),
  };
}

/**
 * The answer of a streamed request: the breadcrumb the final event names, or — when the channel ended without
 * one — whatever `poll` finds. Polls slowly meanwhile too, in case the channel lost the final event.
 */
export async function streamedAnswer(
  live: LiveAnswer,
  client: CrumbsClient,
  poll: () => Promise<Breadcrumb | undefined>,
  deadline: number,
): Promise<{ answer: Breadcrumb | undefined; final: FinalEvent | undefined }> {
  let final: FinalEvent | undefined;
  let ended = false;
  void live.done.then((f) => {
    final = f;
    ended = true;
  });
  let lastPoll = Date.now();
  for (;;) {
    if (final !== undefined) {
      const answer = await readAnswer(client, final.answer_id, deadline);
      if (answer !== undefined) return { answer, final };
    }
    if (ended || Date.now() - lastPoll >= 2_000) {
      lastPoll = Date.now();
      const answer = await poll();
      if (answer !== undefined) return { answer, final };
    }
    if (Date.now() > deadline) return { answer: undefined, final };
    await new Promise((resolve) => setTimeout(resolve, ended ? 400 : 50));
  }
}

async function readAnswer(
  client: CrumbsClient,
  id: string | undefined,
  deadline: number,
): Promise<Breadcrumb | undefined> {
  if (id === undefined) return undefined;
  for (;;) {
    try {
      return await client.getFull(id);
    } catch {
      if (Date.now() > deadline) return undefined;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
}
