/**
 * What a delta channel carries, one JSON text per event (AppSync Events carries events as strings). Each invocation
 * that streams a part of the answer (the first model call, the call after a tool round, a retry of a crashed
 * invocation) opens a `segment` — its start time in ms, so a later part sorts after what it follows or replaces —
 * and numbers its events from `seq` 1. A subscriber applies a segment's events in `seq` order, drops those of a
 * segment older than the one it shows, and starts over at a newer one (as after a `reset`):
 * - `delta`: text to append; `reset`: drop the text so far (a retried model call starts over);
 * - `final`: the answer is stored (`answer_id`, the answer breadcrumb) or the request ended otherwise; last event.
 * Deltas are never stored: a subscriber that missed some reads the answer breadcrumb.
 */
import * as z from '#shared/domain/zod.ts';

export const FINAL_STATUSES = ['completed', 'failed', 'cancelled'] as const;
export type FinalStatus = (typeof FINAL_STATUSES)[number];

const seq = z.number().check(z.int(), z.minimum(1));
const segment = z.number().check(z.int(), z.minimum(0));

export const DeltaEventSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('delta'), segment, seq, text: z.string() }),
  z.object({ type: z.literal('reset'), segment, seq, reason: z.string() }),
  z.object({
    type: z.literal('final'),
    segment,
    seq,
    status: z.enum(FINAL_STATUSES),
    answer_id: z.optional(z.string()),
  }),
]);
export type DeltaEvent = z.infer<typeof DeltaEventSchema>;

/** The event a channel message holds, or undefined when it is not one (a subscriber skips it). */
export function parseDeltaEvent(text: string): DeltaEvent | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  const parsed = DeltaEventSchema.safeParse(value);
  return parsed.success ? parsed.data : undefined;
}
