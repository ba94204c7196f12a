/** The event bus port: what the publisher (and anything else that emits) needs from EventBridge. */
export interface BusEntry {
  source: string;
  detailType: string;
  detail: Record<string, unknown>;
  time?: Date;
  resources?: string[];
  /** The bus to put it on (a bus of the pool); absent: the adapter's own bus. */
  bus?: string;
}

export interface BusPutResult {
  /** Same order as the entries; `error` set for entries the bus did not accept. */
  results: { eventId?: string; error?: { code: string; message: string } }[];
}

export interface EventBus {
  /** At most 10 entries (EventBridge's PutEvents limit). */
  put(entries: readonly BusEntry[]): Promise<BusPutResult>;
}
