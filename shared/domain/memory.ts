/**
 * The memory room's protocol on one page (the data, on the domain floor beside the other definitions; the room's
 * behaviour is in `shared/rooms/memory/`): the `memory.def.v1` definition, the records it writes, their tags, and
 * the requests and outcomes around them. Everything here is data; the room's behaviour is in `consolidate.ts`
 * (the deterministic check), `extraction.ts` (the executor kind), `recall.ts` (prompt assembly) and `routes.ts`
 * (the API), registered once each (README.md beside this file).
 *
 * - `memory.def.v1` — a strategy (facts, preferences, summaries, custom), the conversations that feed it
 *   (`sources`, trigger selectors), the model, batching, the per-actor cap. Compiled into a rule like every
 *   definition; runs on the agent runner as the `memory` kind.
 * - `memory.record.v1` — one remembered fact, preference or summary of one person (`actor`), tagged
 *   `actor:<sub>`, `memory:<memory_id>`, naming the turns it came from (`source_turns`). A superseding fact is a new
 *   version of the same record (history keeps the old one; recall reads the current one); a retracted fact is
 *   deleted. Its context never travels in change events (the publisher leaves it out, `PRIVATE_CONTEXT_SCHEMAS`).
 * - `memory.extract.v1` — "extract now" for one session of one actor: written by the idle timer (or by anyone
 *   who wants a session's memory now, e.g. at the end of a conversation).
 * - `memory.extraction.v1` — the outcome of every turn the kind handled (`status`: `extracted`, `pending`,
 *   `nothing`), tagged `turn:<trigger id>`: the documented way to wait for extraction. It holds ids and counts,
 *   never remembered text.
 * - `memory.error.v1` — an extraction that failed; nothing half-written (records are written only after the
 *   whole batch passed the check).
 */
import { NameSchema, wholeNumber } from './definition-fields.ts';
import { MEMORY_ERROR_SCHEMA, MEMORY_EXTRACT_SCHEMA } from './memory-names.ts';
import type { OutputBreadcrumb } from './protocol.ts';
import { type Selector, type SelectorInput, SelectorSchema } from './selector.ts';
import * as z from './zod.ts';

export {
  MEMORY_DEF_SCHEMA,
  MEMORY_ERROR_SCHEMA,
  MEMORY_EXTRACT_SCHEMA,
  MEMORY_EXTRACTION_SCHEMA,
  MEMORY_RECORD_SCHEMA,
} from './memory-names.ts';

export const ACTOR_TAG = 'actor:';
export const MEMORY_TAG = 'memory:';
export const TURN_TAG = 'turn:';
export const SESSION_TAG = 'session:';

export const actorTag = (actor: string) => `${ACTOR_TAG}${actor}`;
export const memoryTag = (memoryId: string) => `${MEMORY_TAG}${memoryId}`;
export const turnTag = (turnId: string) => `${TURN_TAG}${turnId}`;
export const sessionTag = (session: string) => `${SESSION_TAG}${session}`;

export const STRATEGIES = ['facts', 'preferences', 'summaries', 'custom'] as const;
export type Strategy = (typeof STRATEGIES)[number];

/** The operator's ceiling on records per actor and memory; a definition may ask for fewer. */
export const MAX_RECORDS_PER_ACTOR = 500;
export const DEFAULT_RECORDS_PER_ACTOR = 200;
/** Turns read per extraction (the newest of the session). */
export const MAX_TURNS_PER_EXTRACTION = 40;
/** A remembered text's length. */
export const MAX_RECORD_CHARS = 1000;

/** The conversations that feed a memory when it names none: every person's message in the workspace. */
const DEFAULT_SOURCES: Selector[] = [{ schema_name: 'user.message.v1', role: 'trigger' }];

export const MemoryDefinitionSchema = z
  .object({
    memory_id: NameSchema,
    description: z.optional(z.string()),
    strategy: z.enum(STRATEGIES, { error: `expected one of ${STRATEGIES.join(', ')}` }),
    /** A custom strategy's instructions (what is worth keeping, how to say it). */
    prompt: z.optional(z.string().check(z.minLength(1), z.maxLength(8000))),
    /** The model; absent: the stack's default. */
    model: z.optional(z.string().check(z.minLength(1))),
    /** Which turns feed it (trigger selectors); absent: people's messages (`user.message.v1`). */
    sources: z._default(
      z.array(SelectorSchema, { error: 'expected an array of selectors' }),
      DEFAULT_SOURCES,
    ),
    /**
     * Whose memory it is: `actor` (the person — the token's `sub` behind the turn; the default), `agent` (the
     * agent's own, shared by the people it talks to in this workspace) or `workspace`.
     */
    namespace: z._default(z.enum(['actor', 'agent', 'workspace']), 'actor'),
    batch: z._default(
      z.strictObject({
        /** Extract once this many turns of a session are waiting (1: after every turn). */
        every_turns: z._default(wholeNumber(1, 50), 1),
        /** Also extract what waits once the session has been idle this long (a timer). */
        idle_seconds: z.optional(wholeNumber(5, 7 * 24 * 3600)),
      }),
      { every_turns: 1 },
    ),
    /** Records per actor this memory keeps at most (the operator's ceiling applies). */
    max_records: z._default(wholeNumber(1, MAX_RECORDS_PER_ACTOR), DEFAULT_RECORDS_PER_ACTOR),
    hop_limit: z._default(wholeNumber(1, 256), 16),
  })
  .check(
    z.refine((d) => d.strategy !== 'custom' || d.prompt !== undefined, {
      message: 'a custom strategy needs its prompt',
      path: ['prompt'],
    }),
  );
export type MemoryDefinition = z.output<typeof MemoryDefinitionSchema>;

export const MemoryRecordSchema = z.object({
  memory_id: z.string(),
  strategy: z.enum(STRATEGIES),
  actor: z.string(),
  /** What the record is about, normalized ("home_city", "units"): two records of an actor never share one. */
  key: z.string(),
  text: z.string(),
  /** The turns (breadcrumb ids) it came from, the person's own among them. */
  source_turns: z.array(z.string()),
  /** The session (conversation) it was last confirmed in. */
  session: z.string(),
});
export type MemoryRecord = z.infer<typeof MemoryRecordSchema>;

/** The trigger selector every memory has besides its sources: the "extract now" requests naming it. */
export function extractRequestSelector(memoryId: string): SelectorInput {
  return {
    schema_name: MEMORY_EXTRACT_SCHEMA,
    role: 'trigger',
    context_match: [{ path: '$.memory_id', op: 'eq', value: memoryId }],
  };
}

/** What an agent declares to recall memory (`agent.def.v1` `memory`): which memories, how many records, how similar. */
export const MemoryUseSchema = z.strictObject(
  {
    /** The `memory_id`s whose records this agent may recall. */
    use: z
      .array(z.string().check(z.minLength(1)), { error: 'expected an array of memory ids' })
      .check(z.minLength(1), z.maxLength(10)),
    top_k: z._default(z.number().check(z.int(), z.minimum(1), z.maximum(20)), 5),
    /** Vector similarity a record needs to be recalled (0–1). */
    min_score: z._default(z.number().check(z.minimum(0), z.maximum(1)), 0.2),
  },
  { error: 'expected { use: [memory ids], top_k?, min_score? }' },
);
export type MemoryUse = z.output<typeof MemoryUseSchema>;

/** The person a turn came from: `user:<sub>` → `<sub>`; anything else is no person. */
export function actorOf(createdBy: string): string | undefined {
  return createdBy.startsWith('user:') ? createdBy.slice('user:'.length) : undefined;
}

/** The error answer of an extraction that failed: nothing of it was written. */
export function memoryErrorAnswer(
  definition: MemoryDefinition,
  trigger: { id: string } | undefined,
  error: string,
): OutputBreadcrumb {
  return {
    schema_name: MEMORY_ERROR_SCHEMA,
    title: `${definition.memory_id}: extraction failed`,
    tags: [memoryTag(definition.memory_id), 'memory:error', ...(trigger ? [turnTag(trigger.id)] : [])],
    context: { memory_id: definition.memory_id, trigger_id: trigger?.id ?? null, error },
  };
}
