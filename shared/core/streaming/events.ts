/**
 * What a delta channel carries, one JSON text per event (AppSync Events carries events as strings). `seq` starts at
 * 1 and grows by one per event of the request; a subscriber applies them in `seq` order:
 * - `delta`: text to append; `reset`: drop the text so far (a retried model call starts over);
 * - `final`: the answer is stored (`answer_id`, the answer breadcrumb) or the request ended otherwise; last event.
 * Deltas are never stored: a subscriber that missed some reads the answer breadcrumb.
 */
import * as z from '#shared/domain/zod.ts';

export const FINAL_STATUSES = ['completed', 'failed', 'cancelled'] as const;
export type FinalStatus = (typeof FINAL_STATUSES)[number];

const seq = z.number().check(z.int(), z.minimum(1));

export const DeltaEventSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('delta'), seq, text: z.string() }),
  z.object({ type: z.literal('reset'), seq, reason: z.string() }),
  z.object({
    type: z.literal('final'),
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
