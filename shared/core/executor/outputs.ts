/**
 * Writing what an executor answers: every output under an id that does not depend on which worker writes it or
 * how often, so duplicate deliveries, a re-execution after a crash and a late dead-letter answer all land on the
 * same breadcrumbs (contract.ts, "Outputs are written exactly once per trigger version").
 *
 * - default: `outputId(kind, definition, trigger id, trigger version, index)`; the store's create with a chosen
 *   id replays an existing one instead of writing a second;
 * - `id`: the implementation's own deterministic id (`deterministicId`), created once the same way;
 * - `upsertId`: create-or-replace through the store's `upsert` (nothing written when the content is the same).
 *
 * Outputs are written in order, one at a time: a later output may refer to an earlier one, and a crash between
 * two writes is retried into the same ids. Neighbours marked `independent` (a run's step requests) refer to none
 * of each other, so they are written at once: a wave of a map costs one write's latency instead of one per item.
 * A crash part-way leaves some of them written, as a crash between two ordered writes does.
 *
 * Each breadcrumb this process creates is remembered (`ownWrites`) so the loop guard can check an answer to it
 * without reading it back (loop-guard.ts).
 */
import { createHash } from 'node:crypto';
import { BreadcrumbIdSchema, CreateBreadcrumbSchema, parseOrThrow } from '#shared/domain/breadcrumb.ts';
import type { Causation } from '#shared/domain/change-event.ts';
import type { BreadcrumbStore } from '#shared/ports/breadcrumb-store.ts';
import type { ExecutorKind } from '#shared/topology.ts';
import type { OutputBreadcrumb } from './contract.ts';

/** The id of output `index` for this (definition, trigger, version): `<kind>-<26 hex>`. */
export function outputId(
  kind: ExecutorKind,
  definitionId: string,
  triggerId: string,
  triggerVersion: number,
  index: number | string,
): string {
  return `${kind}-${digest([definitionId, triggerId, String(triggerVersion), String(index)]).slice(0, 26)}`;
}

/**
 * The key of outgoing effect `callIndex` of this (definition, trigger, version) — an http tool's call, an api
 * agent's request —, sent as its `Idempotency-Key` (`shared/domain/idempotency-key.ts`): the same on every attempt
 * (a redelivery, a worker taking an expired claim over), so a server that honours the header applies it once.
 */
export function effectKey(
  definitionId: string,
  triggerId: string,
  triggerVersion: number,
  callIndex: number,
): string {
  return `crumbs-${digest(['effect', definitionId, triggerId, String(triggerVersion), String(callIndex)]).slice(0, 32)}`;
}

/**
 * A deterministic breadcrumb id an implementation chooses for an output: `<prefix>-<32 hex>` of the parts, e.g.
 * `deterministicId('wfstep', runId, stepId, String(attempt))`. The prefix says what the breadcrumb is (letters,
 * digits and "-").
 */
export function deterministicId(prefix: string, ...parts: readonly string[]): string {
  return `${prefix}-${digest(parts).slice(0, 32)}`;
}

/** Causation of what an executor writes in answer to a trigger: caused by it, same thread, one hop further. */
export function outputCausation(
  trigger: { id: string; version: number; causation?: Causation | null | undefined },
  hop: number = (trigger.causation?.hop ?? 0) + 1,
): Causation {
  return {
    caused_by: `${trigger.id}@${trigger.version}`,
    thread: trigger.causation?.thread ?? trigger.id,
    hop,
  };
}

export interface WriteContext {
  store: Pick<BreadcrumbStore, 'create' | 'upsert'>;
  workspace: string;
  kind: ExecutorKind;
  definitionId: string;
  /** The trigger; its tags let outputs that share its correlation tags skip their listing entries. */
  trigger: { id: string; version: number; tags?: readonly string[] };
  principal: string;
  causation: Causation;
}

/** Writes outputs in order under their ids (independent neighbours at once); returns the ids written (or replayed). */
export async function writeOutputs(
  outputs: readonly OutputBreadcrumb[],
  ctx: WriteContext,
): Promise<{ ids: string[] }> {
  const ids: string[] = [];
  for (let start = 0; start < outputs.length; ) {
    let end = start + 1;
    if (outputs[start]?.independent === true) {
      while (end < outputs.length && outputs[end]?.independent === true) end++;
    }
    const settled = await Promise.allSettled(
      outputs.slice(start, end).map((output, i) => writeOutput(output, start + i, ctx)),
    );
    // Every write of the group has ended before an error goes up: none is left running past its caller.
    for (const result of settled) {
      if (result.status === 'rejected') throw result.reason;
      ids.push(result.value);
    }
    start = end;
  }
  return { ids };
}

async function writeOutput(output: OutputBreadcrumb, index: number, ctx: WriteContext): Promise<string> {
  const input = parseOrThrow(
    CreateBreadcrumbSchema,
    {
      schema_name: output.schema_name,
      title: output.title ?? '',
      tags: output.tags ?? [],
      context: output.context,
    },
    `outputs[${index}]`,
  );
  const causeTags = ctx.trigger.tags !== undefined ? { causeTags: ctx.trigger.tags } : {};
  if (output.upsertId !== undefined) {
    const id = parseOrThrow(BreadcrumbIdSchema, output.upsertId, `outputs[${index}].upsertId`);
    const { breadcrumb } = await ctx.store.upsert(ctx.workspace, id, input, {
      principal: ctx.principal,
      causation: ctx.causation,
      ...causeTags,
    });
    return breadcrumb.id;
  }
  const id =
    output.id !== undefined
      ? parseOrThrow(BreadcrumbIdSchema, output.id, `outputs[${index}].id`)
      : outputId(ctx.kind, ctx.definitionId, ctx.trigger.id, ctx.trigger.version, index);
  const result = await ctx.store.create(ctx.workspace, input, {
    principal: ctx.principal,
    id,
    causation: ctx.causation,
    ...causeTags,
  });
  // A replay is a record someone wrote before (possibly not this executor, under an id anyone can compute): only
  // what this create itself wrote is remembered.
  if (!result.replayed) ownWrites(ctx.store).remember(result.breadcrumb);
  return result.breadcrumb.id;
}

/** What the loop guard needs of a version, and what never changes for a given id@version. */
export interface WrittenVersion {
  created_by: string;
  hop: number | undefined;
}

/**
 * The versions a store's executors created in this process: id@version → its writer and hop. Only creates this process made (`replayed: false`) go in, so every entry is a fact of the table that no
 * later write changes (a version is never rewritten; an update makes a new version). Bounded (`OWN_WRITES_KEPT`,
 * the oldest forgotten first): a version that is not (or no longer) here is read from the table, as when the
 * worker that wrote it is another Lambda instance. A `Map` keeps insertion order, which is all a bound that forgets
 * the oldest needs, so no cache library.
 */
export class OwnWrites {
  private readonly versions = new Map<string, WrittenVersion>();

  constructor(private readonly capacity = OWN_WRITES_KEPT) {}

  remember(record: {
    workspace: string;
    id: string;
    version: number;
    created_by: string;
    causation?: Causation | undefined;
  }): void {
    const key = versionKey(record.workspace, record.id, record.version);
    this.versions.delete(key);
    this.versions.set(key, { created_by: record.created_by, hop: record.causation?.hop });
    if (this.versions.size > this.capacity) {
      const oldest = this.versions.keys().next().value;
      if (oldest !== undefined) this.versions.delete(oldest);
    }
  }

  recall(workspace: string, id: string, version: number): WrittenVersion | undefined {
    return this.versions.get(versionKey(workspace, id, version));
  }
}

/** How many created versions a store's memory keeps: a few seconds of a busy executor's requests. */
export const OWN_WRITES_KEPT = 4096;

const memories = new WeakMap<object, OwnWrites>();

/**
 * The memory of what was created through `store` in this process. One per store object: a Lambda instance builds
 * its store once, so this is the instance's memory; two stores (two tables, or tests' fresh in-memory stores)
 * never share facts.
 */
export function ownWrites(store: object): OwnWrites {
  let memory = memories.get(store);
  if (!memory) {
    memory = new OwnWrites();
    memories.set(store, memory);
  }
  return memory;
}

function versionKey(workspace: string, id: string, version: number): string {
  return `${workspace}\u0000${id}@${version}`;
}

function digest(parts: readonly string[]): string {
  return createHash('sha256').update(parts.join('\u0000')).digest('hex');
}
