import { EventBridgeClient, PutEventsCommand } from '@aws-sdk/client-eventbridge';
import type { BusEntry, BusPutResult, EventBus } from '#shared/ports/event-bus.ts';

let defaultClient: EventBridgeClient | undefined;
export function defaultEventBridgeClient(): EventBridgeClient {
  defaultClient ??= new EventBridgeClient({});
  return defaultClient;
}

/** EventBridge adapter of the EventBus port: entries go to their own `bus`, else to the bus it was given. */
export class EventBridgeBus implements EventBus {
  constructor(
    private readonly busName: string,
    private readonly client: EventBridgeClient = defaultEventBridgeClient(),
  ) {}

  async put(entries: readonly BusEntry[]): Promise<BusPutResult> {
    if (entries.length > 10) throw new RangeError('PutEvents takes at most 10 entries');
    const out = await this.client.send(
      new PutEventsCommand({
        Entries: entries.map((e) => ({
          EventBusName: e.bus ?? this.busName,
          Source: e.source,
          DetailType: e.detailType,
          Detail: JSON.stringify(e.detail),
          ...(e.time ? { Time: e.time } : {}),
          ...(e.resources ? { Resources: e.resources } : {}),
        })),
      }),
    );
    return {
      results: entries.map((_, i) => {
        const r = out.Entries?.[i];
        return r?.ErrorCode
          ? { error: { code: r.ErrorCode, message: r.ErrorMessage ?? r.ErrorCode } }
          : { ...(r?.EventId ? { eventId: r.EventId } : {}) };
      }),
    };
  }
}
