/**
 * The loop guard: stops runaway chains between definitions (two agents answering each other, a tool whose output
 * triggers itself through another definition) without stopping an executor's own bounded work.
 *
 * Hops. Every breadcrumb an executor writes carries `causation.hop`: how many executor steps separate it from
 * the start of its thread (a breadcrumb written by a person or a plain API call is hop 0). The outputs of a
 * trigger are one hop further than the trigger; a trigger whose hop has reached the definition's `hop_limit`
 * (default 16) is not run: it is answered once with `system.loop_stopped.v1` (deterministic id).
 *
 * Continuations do not count (`accountHops`): a trigger that answers a request the definition wrote itself belongs
 * to the turn that request was written in, so an agent's eighth tool round writes at the same hop as its first and
 * `max_tool_rounds` and `hop_limit` bound different things. What bounds a continuation is the implementation's own
 * limit (`max_tool_rounds`, a run's step limit), not the hop.
 *
 *   user.message (0) → agent: tool.request (1) → tool: tool.response (2) → agent (turn at 0): tool.request (1)
 *                    … → agent: agent.response (1) → another agent (1): its answer (2) → … → loop_stopped
 *
 * An answer only continues a turn when the request it names exists and was written by the definition: a forged
 * answer (a request of someone else's, or of nobody) counts as a plain trigger.
 */
import type { Breadcrumb } from '#shared/domain/breadcrumb.ts';
import { CreateBreadcrumbSchema, parseOrThrow } from '#shared/domain/breadcrumb.ts';
import type { Causation } from '#shared/domain/change-event.ts';
import { NotFoundError } from '#shared/domain/errors.ts';
import { LOOP_STOPPED_SCHEMA, threadTag } from '#shared/domain/protocol.ts';
import type { BreadcrumbStore } from '#shared/ports/breadcrumb-store.ts';
import type { DefinitionRef, OwnRequestRef } from './contract.ts';
import { outputCausation, outputId, ownWrites, type WriteContext, type WrittenVersion } from './outputs.ts';

const LOOP_GUARD_PRINCIPAL = 'system:loop-guard';

export interface HopAccount {
  /** The hop the loop guard judges: the trigger's, or where the turn it continues started. */
  hop: number;
  /** Causation of the outputs. */
  causation: Causation;
  /** The own request this trigger continues, when it is a continuation. */
  continues?: string;
}

/**
 * The hop of a trigger and the causation of what answers it. `ownRequest` is what the implementation's
 * `ownRequestOf` returned (contract.ts: an agent's `tool.request.v1` answered by a `tool.response.v1`, a run's step
 * request answered by its result); it counts only when that breadcrumb exists and was written by `principal`.
 * Then the guard judges the hop the turn started at (the request's hop − 1), and the outputs get the request's own
 * hop.
 *
 * The request is read unless this process created that very version through the same store (`ownWrites`,
 * outputs.ts): its writer and hop are then known without a read, and they are the facts a read would give, since
 * a version never changes. Only this process's own successful creates are remembered, so a forged answer naming a
 * request of someone else's (or of nobody) is never found there: it is read, as is any request the memory does not
 * hold (written by another instance, or forgotten), and judged on what the table says.
 */
export async function accountHops(
  trigger: Breadcrumb,
  principal: string,
  ownRequest: OwnRequestRef | undefined,
  store: Pick<BreadcrumbStore, 'get' | 'getVersion'>,
): Promise<HopAccount> {
  const plain = { hop: trigger.causation?.hop ?? 0, causation: outputCausation(trigger) };
  if (ownRequest === undefined) return plain;
  const request = await ownRequestFacts(trigger, ownRequest, store);
  if (request === undefined || request.created_by !== principal || request.hop === undefined) return plain;
  const requestHop = request.hop;
  return {
    hop: Math.max(0, requestHop - 1),
    causation: outputCausation(trigger, requestHop),
    continues: `${ownRequest.id}@${request.version}`,
  };
}

/**
 * The writer and hop of the request an answer names: remembered when this process created that version, else
 * read (undefined when there is none). A reference without a version means the current one; when the answer's own
 * causation names a version of that request (what it answered), the memory is asked for that version, and a miss
 * reads the current one as the reference says.
 */
async function ownRequestFacts(
  trigger: Breadcrumb,
  ownRequest: OwnRequestRef,
  store: Pick<BreadcrumbStore, 'get' | 'getVersion'>,
): Promise<(WrittenVersion & { version: number }) | undefined> {
  const version = ownRequest.version ?? answeredVersion(trigger, ownRequest.id);
  if (version !== undefined) {
    const known = ownWrites(store).recall(trigger.workspace, ownRequest.id, version);
    if (known) return { ...known, version };
  }
  let request: Breadcrumb;
  try {
    request =
      ownRequest.version === undefined
        ? await store.get(trigger.workspace, ownRequest.id)
        : await store.getVersion(trigger.workspace, ownRequest.id, ownRequest.version);
  } catch (error) {
    if (error instanceof NotFoundError) return undefined;
    throw error;
  }
  return { created_by: request.created_by, hop: request.causation?.hop, version: request.version };
}

/** The version of request `id` the trigger says it answers (its `caused_by`), if it names that request. */
function answeredVersion(trigger: Breadcrumb, id: string): number | undefined {
  const match = /^(.+)@(\d+)$/.exec(trigger.causation?.caused_by ?? '');
  return match?.[1] === id ? Number(match[2]) : undefined;
}

/** Writes the one `system.loop_stopped.v1` for this trigger (a repeat replays it) and returns its id. */
export async function writeLoopStopped(
  ctx: WriteContext,
  info: { ref: DefinitionRef; trigger: Breadcrumb; hop: number; hopLimit: number },
): Promise<string> {
  const id = outputId(ctx.kind, ctx.definitionId, ctx.trigger.id, ctx.trigger.version, 'loop-stopped');
  const thread = ctx.causation.thread;
  const { breadcrumb } = await ctx.store.create(
    ctx.workspace,
    parseOrThrow(CreateBreadcrumbSchema, {
      schema_name: LOOP_STOPPED_SCHEMA,
      title: `Loop stopped at hop ${info.hop}: ${ctx.principal} did not answer ${info.trigger.schema_name}`,
      tags: ['system:loop_stopped', threadTag(thread), `definition:${info.ref.id}`],
      context: {
        definition_id: info.ref.id,
        definition_version: info.ref.version,
        definition_schema: info.ref.schema_name,
        principal: ctx.principal,
        trigger_id: info.trigger.id,
        trigger_version: info.trigger.version,
        trigger_schema: info.trigger.schema_name,
        trigger_created_by: info.trigger.created_by,
        thread,
        hop: info.hop,
        hop_limit: info.hopLimit,
        reason: `the trigger is ${info.hop} hops from the start of its thread; the limit is ${info.hopLimit}`,
      },
    }),
    { principal: LOOP_GUARD_PRINCIPAL, id, causation: ctx.causation },
  );
  return breadcrumb.id;
}
