/**
 * Subscribes to one request's delta channel over AppSync Events' WebSocket protocol (AWS, and the local events
 * server; `channel-socket.ts`), until the final event. Resolves once the subscription is in place, so a caller can subscribe before it writes the request and miss
 * nothing. Events reach `onEvent` in `seq` order: duplicates are dropped, early ones wait for the missing ones
 * (a publisher that lost one starts over with a `reset`, so a gap is skipped after `gapTimeoutMs`). The socket class
 * is given (`ws` in Node, the browser's own `WebSocket`), so the dashboard runs this same code.
 */
import { channelFor } from '#shared/core/streaming/channel.ts';
import { type DeltaEvent, parseDeltaEvent } from '#shared/core/streaming/events.ts';
import {
  type ChannelSocket,
  type ChannelSubscribeError,
  openChannelSocket,
  type WebSocketConstructor,
} from './channel-socket.ts';

export type { WebSocketConstructor, WebSocketLike } from './channel-socket.ts';
/** Why the subscription could not be made or ended early (`limited`: refused for capacity). */
export { ChannelSubscribeError as DeltaSubscribeError } from './channel-socket.ts';

export interface SubscribeOptions {
  /** `realtime_url` of `streamingEndpoints` (`wss://<realtime domain>/event/realtime`). */
  readonly realtimeUrl: string;
  /** `http_host` of `streamingEndpoints`. */
  readonly httpHost: string;
  /** The caller's token (the JWT the API takes; locally a local token). */
  readonly token: string;
  readonly workspace: string;
  readonly requestId: string;
  readonly onEvent: (event: DeltaEvent) => void;
  /** Told once when the connection ends before the final event (the caller then reads the answer breadcrumb). */
  readonly onClose?: (error: ChannelSubscribeError) => void;
  /** Default `globalThis.WebSocket` (browsers); Node 20 passes `WebSocket` of the `ws` package. */
  readonly webSocket?: WebSocketConstructor;
  /** How long an early event waits for a missing one before the gap is skipped. Default 3 s. */
  readonly gapTimeoutMs?: number;
  /** How long connecting and subscribing may take. Default 10 s. */
  readonly timeoutMs?: number;
}

export interface DeltaSubscription {
  readonly channel: string;
  /** Resolves with the final event, or undefined when the subscription ended without one. */
  readonly done: Promise<Extract<DeltaEvent, { type: 'final' }> | undefined>;
  close(): void;
}

/**
 * Orders events by (`segment`, `seq`): drops what was delivered and what belongs to an older segment, holds early
 * ones, skips a gap when told to. A newer segment starts over: it is delivered as a `reset` first (the part it
 * follows or replaces is done), then its events from `seq` 1.
 */
export class SeqOrder {
  private segment = -1;
  private next = 1;
  private readonly held = new Map<number, DeltaEvent>();
  constructor(private readonly deliver: (event: DeltaEvent) => void) {}
  /** Takes an event; returns whether some are held waiting for a missing one. */
  push(event: DeltaEvent): boolean {
    if (event.segment < this.segment) return this.held.size > 0;
    if (event.segment > this.segment) {
      if (this.segment >= 0) {
        // No reason of its own: the part before said why it ended (a tool round), or nothing needs saying.
        this.deliver({ type: 'reset', segment: event.segment, seq: 0, reason: '' });
      }
      this.segment = event.segment;
      this.next = 1;
      this.held.clear();
    }
    if (event.seq >= this.next && !this.held.has(event.seq)) this.held.set(event.seq, event);
    this.drain();
    return this.held.size > 0;
  }
  /** Gives up on the missing events before the earliest held one; returns whether some are still held. */
  skipGap(): boolean {
    if (this.held.size === 0) return false;
    this.next = Math.min(...this.held.keys());
    this.drain();
    return this.held.size > 0;
  }
  private drain(): void {
    for (let e = this.held.get(this.next); e !== undefined; e = this.held.get(this.next)) {
      this.held.delete(this.next);
      this.next += 1;
      this.deliver(e);
    }
  }
}

export async function subscribeToRequest(options: SubscribeOptions): Promise<DeltaSubscription> {
  const channel = await channelFor(options.workspace, options.requestId);
  let finished = false;
  let resolveDone: (final: Extract<DeltaEvent, { type: 'final' }> | undefined) => void = () => undefined;
  const done = new Promise<Extract<DeltaEvent, { type: 'final' }> | undefined>((r) => {
    resolveDone = r;
  });
  let gapTimer: ReturnType<typeof setTimeout> | undefined;
  let socket: ChannelSocket | undefined;
  const stop = () => {
    finished = true;
    if (gapTimer) clearTimeout(gapTimer);
    gapTimer = undefined;
  };
  const order = new SeqOrder((event) => {
    if (finished) return;
    options.onEvent(event);
    if (event.type === 'final') {
      stop();
      resolveDone(event);
      socket?.close('final');
    }
  });
  socket = await openChannelSocket({
    realtimeUrl: options.realtimeUrl,
    httpHost: options.httpHost,
    token: options.token,
    channel,
    ...(options.webSocket ? { webSocket: options.webSocket } : {}),
    ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
    onClose: (error) => {
      if (finished) return;
      stop();
      options.onClose?.(error);
      resolveDone(undefined);
    },
    onData: (text) => {
      const delta = parseDeltaEvent(text);
      if (delta === undefined || finished) return;
      const waiting = order.push(delta);
      // The clock starts when a gap opens and is not restarted by later events: a lost event costs at most
      // gapTimeoutMs however fast the rest arrive.
      if (!waiting && gapTimer) {
        clearTimeout(gapTimer);
        gapTimer = undefined;
      } else if (waiting && !gapTimer) {
        const skip = () => {
          gapTimer = undefined;
          if (order.skipGap()) gapTimer = setTimeout(skip, options.gapTimeoutMs ?? 3000);
        };
        gapTimer = setTimeout(skip, options.gapTimeoutMs ?? 3000);
      }
    },
  });
  const opened = socket;
  return {
    channel,
    done,
    close: () => {
      if (finished) return;
      stop();
      resolveDone(undefined);
      opened.close();
    },
  };
}
