/**
 * The memory kind: extraction after turns, asynchronously. A `memory.def.v1` is compiled into a rule like every
 * definition (its `sources` and the `memory.extract.v1` requests naming it); the agent runner runs this kind.
 *
 * Per trigger:
 * 1. A source turn is noted in its session's state (`memory.session.v1`, one per memory × session, written
 *    conditionally on its version): who said it (a person, `user:<sub>`, or not) and its id.
 * 2. Batching: while fewer than `batch.every_turns` of a person's turns wait, nothing is extracted (`pending`), and
 *    with `batch.idle_seconds` a one-time timer (the repo's one timer mechanism) is set to write a
 *    `memory.extract.v1` for the session when it has been idle that long. A `summaries` memory extracts only then
 *    (or on an explicit `memory.extract.v1`): one summary per finished session.
 * 3. Extraction reads the waiting turns (context views), the person's current records of this memory, asks the model
 *    for proposals (JSON: add / supersede / merge / retract / reject, each naming its source turns), and commits
 *    them through `consolidate` — the deterministic check — then writes: creates, updates (a new version: history
 *    keeps the old one), deletes. Proposals are parsed and checked before anything is written, so a model answer that
 *    fails leaves an error record (`memory.error.v1`) and no half-written memory. A retry converges: the check sees
 *    what an interrupted attempt wrote (a duplicate merges, the same supersede is a no-op).
 * 4. Every trigger is answered by one `memory.extraction.v1` (tagged `turn:<trigger id>`): what a caller waits for.
 *
 * Namespaces: `actor` keeps each person's records apart (tag `actor:<sub>`, the vector engine's scope); `workspace`
 * keeps one set for the workspace (actor `workspace`). A turn not written by a person (`user:` principal) is context,
 * never the only source of a record. On-behalf-of claims are not read: the actor is the principal that wrote the turn.
 */
import { createHash } from 'node:crypto';
import type { Breadcrumb } from '#shared/domain/breadcrumb.ts';
import { NonRetriableError, NotFoundError, VersionConflictError } from '#shared/domain/errors.ts';
import type { OutputBreadcrumb } from '#shared/domain/protocol.ts';
import * as z from '#shared/domain/zod.ts';
import type { Clock } from '#shared/ports/breadcrumb-store.ts';
import type { ExecutorStore } from '#shared/ports/executor-store.ts';
import type { LlmClient } from '#shared/ports/llm.ts';
import type { Log } from '#shared/ports/log.ts';
import type { Timers } from '#shared/ports/timers.ts';
import type { ExecutionInput, ExecutorKindImplementation } from '../../core/executor/contract.ts';
import { extractionAnswer, type MemoryOutcome, memoryErrorAnswer } from './answers.ts';
import { type CurrentRecord, consolidate, PROPOSAL_OPS, type Proposal, type Write } from './consolidate.ts';
import { strategyInstructions } from './prompts.ts';
import {
  actorTag,
  MAX_TURNS_PER_EXTRACTION,
  MEMORY_EXTRACT_SCHEMA,
  MEMORY_RECORD_SCHEMA,
  type MemoryDefinition,
  type MemoryRecord,
  memoryTag,
  sessionTag,
} from './protocol.ts';
import { actorRecords } from './records.ts';

export const MEMORY_SESSION_SCHEMA = 'memory.session.v1';
const DEFAULT_MODEL = 'default';
const MAX_TURN_CHARS = 4000;
const WORKSPACE_ACTOR = 'workspace';

const SessionStateSchema = z.object({
  memory_id: z.string(),
  session: z.string(),
  /** Turns not yet extracted, oldest first. */
  pending: z.array(z.object({ id: z.string(), by: z.string() })),
  /** How many turns the session has seen (the idle timer of the latest one wins). */
  seen: z.number(),
});
type SessionState = z.infer<typeof SessionStateSchema>;

const ProposalsSchema = z.object({
  proposals: z.array(
    z.object({
      op: z.enum(PROPOSAL_OPS),
      key: z.optional(z.string()),
      text: z.optional(z.string()),
      target: z.optional(z.string()),
      source_turns: z.optional(z.array(z.string())),
    }),
  ),
});

const ExtractRequestSchema = z.object({
  memory_id: z.string(),
  session: z.string().check(z.minLength(1), z.maxLength(200)),
});

export interface MemoryKindDeps {
  store: ExecutorStore;
  llm: LlmClient;
  clock: Clock;
  log: Log;
  /** Idle timers; without, `batch.idle_seconds` is not honoured (only every N turns and explicit requests). */
  timers?: Timers;
  /** Called once per record written (created, superseded, merged), before the write: the guardrails' hook. */
  onMemoryWrite?: (record: MemoryRecord & { workspace: string }) => Promise<void> | void;
}

export function createMemoryKind(deps: MemoryKindDeps): ExecutorKindImplementation<MemoryDefinition> {
  return {
    execute: async (input) => ({ outputs: [await handleTurn(input, deps)] }),
    errorOutput: ({ definition, trigger, error }) => memoryErrorAnswer(definition, trigger, error),
  };
}

/** The session a turn belongs to: its conversation, else its thread. */
export function sessionOf(trigger: {
  id: string;
  context: unknown;
  causation?: { thread: string } | undefined;
}): string {
  const c = trigger.context;
  if (c !== null && typeof c === 'object' && !Array.isArray(c)) {
    const conversation = (c as Record<string, unknown>).conversation_id;
    if (typeof conversation === 'string' && conversation !== '') return conversation.slice(0, 200);
  }
  return trigger.causation?.thread ?? trigger.id;
}

function hashId(...parts: string[]): string {
  return createHash('sha256').update(parts.join('\u0000')).digest('hex').slice(0, 32);
}

async function handleTurn(
  input: ExecutionInput<MemoryDefinition>,
  deps: MemoryKindDeps,
): Promise<OutputBreadcrumb> {
  const def = input.definition;
  const trigger = input.trigger;
  const workspace = trigger.workspace;
  const explicit = trigger.schema_name === MEMORY_EXTRACT_SCHEMA;
  let session: string;
  if (explicit) {
    const request = ExtractRequestSchema.safeParse(trigger.context);
    if (!request.success) throw new NonRetriableError('a memory.extract.v1 needs { memory_id, session }');
    session = request.data.session;
  } else session = sessionOf(trigger);

  const stateId = `mem-session-${hashId(def.memory_id, session)}`;
  const state = await noteTurn(
    deps.store,
    workspace,
    stateId,
    def,
    session,
    explicit ? undefined : trigger,
    input.principal,
  );
  const waiting = state.pending.filter((t) => t.by.startsWith('user:')).length;
  const due = explicit
    ? state.pending.length > 0
    : def.strategy !== 'summaries' && waiting >= def.batch.every_turns;
  const outcomeBase = { session, created: [], updated: [], deleted: [], refused: 0, turns: [] };
  if (!due) {
    if (!explicit && def.batch.idle_seconds !== undefined && deps.timers) {
      const at = new Date(deps.clock.now().getTime() + def.batch.idle_seconds * 1000);
      const id = `mem-idle-${hashId(stateId, String(state.seen))}`;
      await deps.timers.set({
        workspace,
        id,
        at,
        breadcrumb: {
          id,
          schema_name: MEMORY_EXTRACT_SCHEMA,
          title: `${def.memory_id}: session idle`,
          tags: [memoryTag(def.memory_id), sessionTag(session)],
          context: { memory_id: def.memory_id, session, reason: 'idle' },
        },
      });
    }
    const status = explicit || waiting === 0 ? 'nothing' : 'pending';
    return extractionAnswer(def, trigger.id, { status, actor: '', ...outcomeBase });
  }

  const batch = state.pending.slice(-MAX_TURNS_PER_EXTRACTION);
  const turns = await readTurns(deps.store, workspace, batch);
  // One extraction per person of the batch (a session normally has one); others' turns are context only.
  const people =
    def.namespace === 'workspace'
      ? [WORKSPACE_ACTOR]
      : [...new Set(turns.filter((t) => t.by.startsWith('user:')).map((t) => t.by.slice('user:'.length)))];
  const outcome: MemoryOutcome = {
    status: 'extracted',
    actor: people.join(','),
    ...outcomeBase,
    turns: [],
    created: [],
    updated: [],
    deleted: [],
  };
  outcome.turns = turns.map((t) => t.id);
  for (const actor of people) {
    const written = await extractFor(input, deps, { actor, session, turns });
    outcome.created.push(...written.created);
    outcome.updated.push(...written.updated);
    outcome.deleted.push(...written.deleted);
    outcome.refused += written.refused;
  }
  await clearPending(
    deps.store,
    workspace,
    stateId,
    batch.map((t) => t.id),
    input.principal,
  );
  return extractionAnswer(def, trigger.id, outcome);
}

interface SessionTurn {
  id: string;
  by: string;
  text: string;
}

async function noteTurn(
  store: ExecutorStore,
  workspace: string,
  stateId: string,
  def: MemoryDefinition,
  session: string,
  turn: Breadcrumb | ExecutionInput<MemoryDefinition>['trigger'] | undefined,
  principal: string,
): Promise<SessionState> {
  for (let attempt = 0; attempt < 8; attempt++) {
    let current: Breadcrumb | undefined;
    try {
      current = await store.get(workspace, stateId);
    } catch (error) {
      if (!(error instanceof NotFoundError)) throw error;
    }
    const state: SessionState = current
      ? SessionStateSchema.parse(current.context)
      : { memory_id: def.memory_id, session, pending: [], seen: 0 };
    if (turn === undefined || state.pending.some((p) => p.id === turn.id)) return state;
    const next: SessionState = {
      ...state,
      pending: [...state.pending, { id: turn.id, by: turn.created_by }].slice(-MAX_TURNS_PER_EXTRACTION),
      seen: state.seen + 1,
    };
    try {
      await store.upsert(
        workspace,
        stateId,
        {
          schema_name: MEMORY_SESSION_SCHEMA,
          title: `${def.memory_id}: session ${session}`,
          tags: [memoryTag(def.memory_id), sessionTag(session)],
          context: next,
        },
        current ? { principal, expectedVersion: current.version } : { principal, createOnly: true },
      );
      return next;
    } catch (error) {
      if (!(error instanceof VersionConflictError)) throw error;
    }
  }
  throw new VersionConflictError(0, undefined);
}

async function clearPending(
  store: ExecutorStore,
  workspace: string,
  stateId: string,
  done: readonly string[],
  principal: string,
): Promise<void> {
  for (let attempt = 0; attempt < 8; attempt++) {
    const current = await store.get(workspace, stateId);
    const state = SessionStateSchema.parse(current.context);
    const pending = state.pending.filter((p) => !done.includes(p.id));
    if (pending.length === state.pending.length) return;
    try {
      await store.update(
        workspace,
        stateId,
        { context: { ...state, pending } },
        { principal, expectedVersion: current.version },
      );
      return;
    } catch (error) {
      if (!(error instanceof VersionConflictError)) throw error;
    }
  }
}

async function readTurns(
  store: ExecutorStore,
  workspace: string,
  batch: readonly { id: string; by: string }[],
): Promise<SessionTurn[]> {
  const turns = await Promise.all(
    batch.map(async (t) => {
      try {
        const view = await store.getContextView(workspace, t.id);
        return { id: t.id, by: t.by, text: turnText(view.title, view.context) };
      } catch (error) {
        if (error instanceof NotFoundError) return undefined;
        throw error;
      }
    }),
  );
  return turns.filter((t): t is SessionTurn => t !== undefined);
}

function turnText(title: string, context: unknown): string {
  if (context !== null && typeof context === 'object' && !Array.isArray(context)) {
    const c = context as Record<string, unknown>;
    for (const field of ['message', 'content', 'text', 'response_text', 'answer']) {
      const v = c[field];
      if (typeof v === 'string') return v.slice(0, MAX_TURN_CHARS);
    }
  }
  return (title || JSON.stringify(context)).slice(0, MAX_TURN_CHARS);
}

async function extractFor(
  input: ExecutionInput<MemoryDefinition>,
  deps: MemoryKindDeps,
  batch: { actor: string; session: string; turns: readonly SessionTurn[] },
): Promise<{ created: string[]; updated: string[]; deleted: string[]; refused: number }> {
  const def = input.definition;
  const workspace = input.trigger.workspace;
  const current = await actorRecords(deps.store, workspace, batch.actor, def.memory_id, def.max_records);
  const byPerson = (t: SessionTurn) =>
    def.namespace === 'workspace' ? t.by.startsWith('user:') : t.by === `user:${batch.actor}`;
  const transcript = batch.turns
    .map((t) => `[turn ${t.id}] ${byPerson(t) ? 'person' : 'assistant'}: ${t.text}`)
    .join('\n');
  const known = current.map((c) => `- [record ${c.record.id}] ${c.memory.key}: ${c.memory.text}`).join('\n');
  const response = await deps.llm.generate({
    model: def.model ?? DEFAULT_MODEL,
    system: strategyInstructions(def),
    messages: [
      {
        role: 'user',
        content: `What is already remembered about this person:\n${known || '(nothing)'}\n\nThe conversation:\n${transcript}`,
      },
    ],
    responseSchema: PROPOSALS_JSON_SCHEMA,
    temperature: 0,
    signal: input.signal,
  });
  let proposals: Proposal[];
  try {
    proposals = ProposalsSchema.parse(JSON.parse(response.text)).proposals;
  } catch (error) {
    throw new NonRetriableError(
      `the memory model's answer is not a list of proposals: ${String(error).slice(0, 300)}`,
      {
        cause: error,
      },
    );
  }
  if (def.strategy === 'summaries') {
    // One summary per session: whatever key the model used, the session names it.
    proposals = proposals.map((p) =>
      p.op === 'add' || p.op === 'supersede'
        ? { ...p, op: 'add', key: `summary ${batch.session}`, target: undefined }
        : p,
    );
  }
  const { writes, refused } = consolidate({
    current: current.map<CurrentRecord>((c) => ({
      id: c.record.id,
      key: c.memory.key,
      text: c.memory.text,
      source_turns: c.memory.source_turns,
    })),
    turns: batch.turns.map((t) => ({ id: t.id, byPerson: byPerson(t) })),
    proposals,
    maxRecords: def.max_records,
  });
  for (const r of refused)
    deps.log.debug('memory proposal refused', { memoryId: def.memory_id, reason: r.reason });
  const written = {
    created: [] as string[],
    updated: [] as string[],
    deleted: [] as string[],
    refused: refused.length,
  };
  const versions = new Map(current.map((c) => [c.record.id, c.record.version]));
  for (const w of writes) {
    await applyWrite(input, deps, w, batch, versions, written);
  }
  return written;
}

async function applyWrite(
  input: ExecutionInput<MemoryDefinition>,
  deps: MemoryKindDeps,
  w: Write,
  batch: { actor: string; session: string },
  versions: Map<string, number>,
  written: { created: string[]; updated: string[]; deleted: string[] },
): Promise<void> {
  const def = input.definition;
  const workspace = input.trigger.workspace;
  if (w.kind === 'delete') {
    try {
      await deps.store.delete(workspace, w.id, { principal: input.principal });
    } catch (error) {
      if (!(error instanceof NotFoundError)) throw error;
    }
    written.deleted.push(w.id);
    return;
  }
  const memory: MemoryRecord = {
    memory_id: def.memory_id,
    strategy: def.strategy,
    actor: batch.actor,
    key: w.key,
    text: w.text,
    source_turns: w.source_turns,
    session: batch.session,
  };
  await deps.onMemoryWrite?.({ ...memory, workspace });
  const body = {
    schema_name: MEMORY_RECORD_SCHEMA,
    title: `${def.memory_id}: ${w.key}`,
    tags: [actorTag(batch.actor), memoryTag(def.memory_id), sessionTag(batch.session)],
    context: memory,
  };
  if (w.kind === 'create') {
    const { breadcrumb } = await deps.store.create(workspace, body, {
      principal: input.principal,
      causation: input.causation,
    });
    written.created.push(breadcrumb.id);
    return;
  }
  const expected = versions.get(w.id);
  await deps.store.update(
    workspace,
    w.id,
    { title: body.title, tags: body.tags, context: body.context },
    {
      principal: input.principal,
      causation: input.causation,
      ...(expected !== undefined ? { expectedVersion: expected } : {}),
    },
  );
  written.updated.push(w.id);
}

/** What the model is asked to answer (structured output). */
export const PROPOSALS_JSON_SCHEMA: Record<string, unknown> = {
  type: 'object',
  required: ['proposals'],
  properties: {
    proposals: {
      type: 'array',
      items: {
        type: 'object',
        required: ['op'],
        properties: {
          op: { enum: [...PROPOSAL_OPS] },
          key: { type: 'string', description: 'what it is about, e.g. "home city", "preferred units"' },
          text: { type: 'string', description: 'the fact or preference, in one sentence' },
          target: { type: 'string', description: 'the record id it supersedes, merges into or retracts' },
          source_turns: {
            type: 'array',
            items: { type: 'string' },
            description: 'ids of the turns that say it',
          },
        },
      },
    },
  },
};
