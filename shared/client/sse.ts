/**
 * Parses a `text/event-stream` body (the change stream answers whole bodies, long-polled) into events, with the
 * last `id:` seen — also from frames without data, which only move the position (as EventSource does).
 * Used by the CLI client and the dashboard.
 */

export interface SseMessage {
  id: string | undefined;
  event: string;
  data: string;
}

export function parseEventStream(text: string): {
  messages: SseMessage[];
  lastEventId: string | undefined;
  retryMs: number | undefined;
} {
  const messages: SseMessage[] = [];
  let lastEventId: string | undefined;
  let retryMs: number | undefined;
  for (const block of text.replace(/\r\n?/g, '\n').split('\n\n')) {
    let data: string[] = [];
    let event = 'message';
    let id: string | undefined;
    for (const line of block.split('\n')) {
      if (line === '' || line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
      if (field === 'data') data.push(value);
      else if (field === 'event') event = value;
      else if (field === 'id' && !value.includes('\0')) id = value;
      else if (field === 'retry' && /^\d+$/.test(value)) retryMs = Number(value);
    }
    if (id !== undefined) lastEventId = id;
    if (data.length > 0) messages.push({ id: id ?? lastEventId, event, data: data.join('\n') });
    data = [];
  }
  return { messages, lastEventId, retryMs };
}
