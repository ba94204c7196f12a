/**
 * The driver of the engine: one event of one run → read the run → `advance` → write the run with a condition on
 * its version (create for a new run) → carry out its effects. On a version conflict (another answer to the same
 * run won) it re-reads and re-applies, so a fan-in joins exactly once (README.md, "Exactly once").
 *
 * Two executors drive runs with it: the workflow executor (runs of `workflow.def.v1`) and orchestrating agents
 * (runs of the plan an agent generated, `shared/core/agents/orchestration-agent.ts`). They differ in where the run's
 * definition comes from (`definitionFor`), in the requests they answer themselves at once (`answerNow`: a tool
 * nobody defines, the agent's own final step) and in how they write the result; the rest is this module.
 */
import { dataChecks } from '#shared/adapters/checks/checks.ts';
import type { Breadcrumb } from '#shared/domain/breadcrumb.ts';
import type { Causation } from '#shared/domain/change-event.ts';
import {
  NonRetriableError,
  NotFoundError,
  RetriableError,
  VersionConflictError,
} from '#shared/domain/errors.ts';
import type { OutputBreadcrumb } from '#shared/domain/protocol.ts';
import { parsePin } from '#shared/domain/version-pin.ts';
import type { WorkflowDefinition } from '#shared/domain/workflow-definition.ts';
import type { BreadcrumbStore, Clock } from '#shared/ports/breadcrumb-store.ts';
import type { DataChecks } from '#shared/ports/checks.ts';
import type { Log } from '#shared/ports/log.ts';
import type { Timers } from '#shared/ports/timers.ts';
import { type WaitIndex, WaitIndexFullError } from '#shared/ports/wait-index.ts';
import { type DefinitionAt, definitionsByName, versionToRun } from '../executor/versions.ts';
import { advance, type RunChecks } from './advance.ts';
import { isPerson } from './authority.ts';
import { type Effect, effectsOf, type RequestEffect } from './effects.ts';
import type { RunEvent } from './events.ts';
import { graphOf, stepAt } from './graph.ts';
import { boundedId } from './ids.ts';
import { type Action, actionOf, runBreadcrumb, runDriver, waitOf } from './messages.ts';
import { type Run, RunSchema } from './run.ts';
import { stepKindOf } from './steps/kinds.ts';
import type { StepKind } from './steps/step-kind.ts';

type AnsweredBy = NonNullable<NonNullable<StepKind['request']>['answeredBy']>;

/** Re-reads after a version conflict before the message is retried through SQS instead. */
const MAX_CONFLICTS = 20;
const DEFINITION_PAGES = 10;
const SYSTEM_PRINCIPAL = 'system:workflow';
/**
 * How long the names of the workspace's tools and workflows found are trusted (`definedNames`). Only names found
 * are remembered: a name missing is looked up again, so a tool defined a moment ago is seen at once; a tool deleted
 * within this time still gets its request, as it would if it was deleted just after the request was written.
 */
const DEFINED_NAMES_TTL_MS = 30_000;
/** (workspace, schema) pairs whose names are remembered at once. */
const MAX_NAMED = 50;
/** Runs this driver wrote last, kept to advance the next event of the run without reading it (`transitionTogether`). */
const MAX_KNOWN_RUNS = 50;

export interface RunDriverDeps {
  readonly store: Pick<BreadcrumbStore, 'get' | 'getVersion' | 'create' | 'update' | 'list'>;
  readonly clock: Clock;
  readonly log: Log;
  /** Waits, step timeouts and retry back-offs; a driver without them refuses a run that asks for one. */
  readonly timers?: Timers;
  /** The wait index of wait_for steps; a driver without it refuses a run that waits for a write. */
  readonly waits?: WaitIndex;
  /** Where runs check their data (inputs against schemas, expressions); default this process's (`dataChecks()`). */
  readonly checks?: DataChecks;
}

/** What one request the driver answers itself gives: the answer event and what to write with it. */
export interface ImmediateAnswer {
  readonly event: RunEvent;
  readonly outputs?: readonly OutputBreadcrumb[];
}

export interface TransitionInput {
  readonly workspace: string;
  readonly runId: string;
  readonly event: RunEvent;
  /** created_by and causation of the run's writes. */
  readonly principal: string;
  readonly causation: Causation;
  /**
   * The tags of the trigger (the breadcrumb the causation names): the run's routing tags it carries too (`run:`)
   * need no listing entry of their own (CreateOptions.causeTags).
   */
  readonly causeTags?: readonly string[];
  /** The executor's assembled context (expressions see it as `context`). */
  readonly context: Record<string, unknown>;
  /** The definition a run follows (`undefined`: the run is about to start). */
  definitionFor(run: Run | undefined): Promise<WorkflowDefinition>;
  /** Requests the driver answers at once instead of writing them (beyond tools nobody defines). */
  answerNow?(
    effect: RequestEffect,
    run: Run,
    definition: WorkflowDefinition,
  ): Promise<ImmediateAnswer | undefined>;
}

export interface Transitioned {
  readonly definition: WorkflowDefinition;
  readonly run: Run;
  readonly effects: Effect[];
  /** What `answerNow` asked to write. */
  readonly outputs: OutputBreadcrumb[];
  /** Wait index entries added before the run was written (`addWaits`): `perform` does not add them again. */
  readonly waitsAdded?: readonly string[];
}

/** One `transition` call waiting for its run's next group commit. */
interface Waiter {
  readonly input: TransitionInput;
  resolve(value: Transitioned | undefined): void;
  reject(error: unknown): void;
}

/** An event of a group that could not be applied (its own message fails; the group goes on without it). */
class Failure {
  constructor(readonly error: unknown) {}
}

export function parseRun(record: Breadcrumb): Run {
  const parsed = RunSchema.safeParse(record.context);
  if (!parsed.success) {
    throw new NonRetriableError(
      `run ${record.id} is not a workflow.run.v1 the engine can read: ${parsed.error.message}`,
    );
  }
  return parsed.data;
}

export function createRunDriver(deps: RunDriverDeps) {
  const { log } = deps;
  /** A run's checks of data, in its workspace's share of the data checks. */
  const runChecks = (workspace: string): RunChecks => {
    const checks = deps.checks ?? dataChecks();
    return {
      validate: (check) => checks.validate(workspace, check),
      evaluate: (expression, data, now) => checks.evaluate(workspace, { expression, data, now }),
    };
  };

  async function readRun(workspace: string, runId: string): Promise<Breadcrumb | undefined> {
    try {
      return await deps.store.get(workspace, runId);
    } catch (error) {
      if (error instanceof NotFoundError) return undefined;
      throw error;
    }
  }

  /**
   * Names of the workspace's definitions of one schema (`tool.def.v1`, `workflow.def.v1`), read when a step whose
   * kind needs one starts and names one not found lately (`isDefined`): a request naming none would never be
   * answered.
   */
  const definedCache = new Map<string, { names: Set<string>; readAt: number }>();

  /** Whether the workspace defines `name` (`definedNames`, through the names found in the last DEFINED_NAMES_TTL_MS). */
  async function isDefined(workspace: string, answeredBy: AnsweredBy, name: string): Promise<boolean> {
    const key = `${workspace}\u0000${answeredBy.schema}`;
    const cached = definedCache.get(key);
    const now = Date.now();
    if (cached !== undefined && now - cached.readAt < DEFINED_NAMES_TTL_MS && cached.names.has(name))
      return true;
    const names = await definedNames(workspace, answeredBy);
    if (definedCache.size >= MAX_NAMED) definedCache.clear();
    definedCache.set(key, { names, readAt: now });
    return names.has(name);
  }

  async function definedNames(workspace: string, answeredBy: AnsweredBy): Promise<Set<string>> {
    const names = new Set<string>();
    let cursor: string | undefined;
    for (let page = 0; page < DEFINITION_PAGES; page++) {
      const result = await deps.store.list({
        workspace,
        schema_name: answeredBy.schema,
        limit: 100,
        ...(cursor !== undefined ? { cursor } : {}),
      });
      for (const record of result.items) {
        const name = answeredBy.nameOf(record.context);
        if (name !== undefined) names.add(name);
      }
      if (result.next_cursor === null) break;
      cursor = result.next_cursor;
    }
    return names;
  }

  /**
   * name → definition (id, latest version as listed) of the workspace's agent or tool definitions
   * (`resolveVersion`), trusted like `definedCache`.
   */
  const idCache = new Map<string, { ids: Map<string, DefinitionAt>; readAt: number }>();

  async function definitionOf(
    workspace: string,
    schemas: readonly string[],
    name: string,
  ): Promise<DefinitionAt | undefined> {
    const key = `${workspace}\u0000${schemas.join(',')}`;
    const cached = idCache.get(key);
    const now = Date.now();
    const at =
      cached !== undefined && now - cached.readAt < DEFINED_NAMES_TTL_MS ? cached.ids.get(name) : undefined;
    if (at !== undefined) return at;
    const ids = await definitionsByName(deps.store, workspace, schemas);
    if (idCache.size >= MAX_NAMED) idCache.clear();
    idCache.set(key, { ids, readAt: now });
    return ids.get(name);
  }

  /**
   * The definition and version a request for `name` runs. Pinned: that version, checked (it exists and still
   * defines `name`). Unpinned: the latest as the workspace's definitions were last listed (at most
   * DEFINED_NAMES_TTL_MS ago), with no read per step — the version its rule runs may be newer for that long after
   * an edit, as it may be while the rule manager recompiles. Undefined: the workspace defines no such name.
   */
  async function resolveVersion(
    workspace: string,
    schemas: readonly string[],
    name: string,
    pin: number | undefined,
  ): Promise<DefinitionAt | { readonly error: string } | undefined> {
    for (let lookup = 0; lookup < 2; lookup++) {
      const listed = await definitionOf(workspace, schemas, name);
      if (listed === undefined) return undefined;
      if (pin === undefined) return listed;
      const at = await versionToRun(deps.store, workspace, listed.id, name, pin);
      if (at !== undefined) return at;
      // The name moved to another definition (deleted, renamed): look it up again.
      idCache.delete(`${workspace}\u0000${schemas.join(',')}`);
    }
    return undefined;
  }

  /**
   * Records in the run the definition each new agent or tool request runs (`StepState.definition`): the pinned
   * version, which the request names (`pinOf`), else the latest, which its rule runs. A request whose pinned
   * version (or tool) is not there gets the failure it is answered with instead (`refused`, by request id).
   */
  async function resolveRequests(
    workspace: string,
    definition: WorkflowDefinition,
    run: Run,
    effects: readonly Effect[],
    refused: Map<string, string>,
  ): Promise<{ run: Run; annotated: boolean }> {
    let out = run;
    let annotated = false;
    for (const effect of effects) {
      if (effect.type !== 'request' || effect.target === undefined) continue;
      const versioned = stepKindOf(effect.kind).request?.versioned;
      const state = out.steps[effect.step];
      if (versioned === undefined || state === undefined || state.attempt_id !== effect.id) continue;
      if (state.definition !== undefined) continue;
      const step = stepAt(graphOf(definition), effect.step);
      const named = step?.agent ?? step?.tool;
      const pin = named === undefined ? undefined : parsePin(named)?.version;
      const at = await resolveVersion(workspace, versioned.schemas, effect.target, pin);
      if (at === undefined) {
        // An agent step naming no agent definition is left to whatever answers it; a tool or a pin fails.
        if (effect.kind === 'tool' || pin !== undefined) {
          const schema = versioned.schemas[0] ?? effect.kind;
          refused.set(effect.id, `no ${schema} named "${effect.target}" in workspace ${workspace}`);
        }
        continue;
      }
      if ('error' in at) {
        refused.set(effect.id, `${effect.kind} ${effect.target}@${pin}: ${at.error}`);
        continue;
      }
      out = { ...out, steps: { ...out.steps, [effect.step]: { ...state, definition: at } } };
      annotated = true;
    }
    return { run: out, annotated };
  }

  /**
   * A human response or control the run's driver wrote, with the person whose message it relays (`on_behalf_of`):
   * the breadcrumb its causation names, read at that version in the run's workspace, written by a `user:`
   * principal (authority.ts). Anything else comes as it was, and the engine decides on its writer alone.
   */
  async function withRelay(workspace: string, event: RunEvent, run: Run): Promise<RunEvent> {
    if (event.type !== 'human' && event.type !== 'control') return event;
    const { on_behalf_of: _, ...bare } = event;
    if (isPerson(bare.by) || bare.by !== runDriver(run) || bare.relay_of === undefined) return bare;
    const ref = /^(.+)@(\d+)$/.exec(bare.relay_of);
    if (!ref?.[1] || !ref[2]) return bare;
    try {
      const source = await deps.store.getVersion(workspace, ref[1], Number(ref[2]));
      return isPerson(source.updated_by) ? { ...bare, on_behalf_of: source.updated_by } : bare;
    } catch (error) {
      if (error instanceof NotFoundError) return bare;
      throw error;
    }
  }

  /**
   * Adds the wait index entries of the wait_for attempts that start waiting in this transition, before the run is
   * written: once a run shows a step waiting, every write routed after that finds it. A write that finds an entry
   * before its run is written finds no such attempt yet and leaves the entry (`workflow-kind.ts`); an entry whose
   * run write then fails (a conflict) is added again, under the same attempt id, by the transition re-applied.
   */
  async function addWaits(
    workspace: string,
    run: Run,
    effects: readonly Effect[],
    added: Set<string>,
    refused: Map<string, string>,
  ) {
    for (const effect of effects) {
      if (effect.type !== 'wait_entry' || added.has(effect.id)) continue;
      try {
        await addWait(workspace, run, { type: 'wait', ...waitOf(run, effect) });
        added.add(effect.id);
      } catch (error) {
        if (!(error instanceof WaitIndexFullError)) throw error;
        refused.set(effect.attempt_id, `cannot wait: ${error.message}`);
      }
    }
  }

  async function addWait(workspace: string, run: Run, action: Extract<Action, { type: 'wait' }>) {
    if (deps.waits === undefined) {
      throw new NonRetriableError(`run ${run.run_id} waits for a write, and its driver has no wait index`);
    }
    await deps.waits.add({ ...action.key, workspace }, action.waiter);
  }

  /**
   * Writes the run: create for a new one, else a conditional update. Returns what was written, or undefined when
   * another writer got there first (or the run is gone).
   */
  async function writeRun(
    input: TransitionInput,
    stored: Breadcrumb | undefined,
    run: Run,
  ): Promise<Breadcrumb | undefined> {
    const { id, schema_name, title, tags, context } = runBreadcrumb(run);
    const causeTags = input.causeTags !== undefined ? { causeTags: input.causeTags } : {};
    if (stored === undefined) {
      const created = await deps.store.create(
        input.workspace,
        { schema_name, title, tags, context },
        { principal: input.principal, id, causation: input.causation, ...causeTags },
      );
      return created.replayed ? undefined : created.breadcrumb;
    }
    try {
      return await deps.store.update(
        input.workspace,
        id,
        { title, tags, context },
        {
          principal: input.principal,
          expectedVersion: stored.version,
          current: stored,
          causation: input.causation,
          ...causeTags,
        },
      );
    } catch (error) {
      if (error instanceof VersionConflictError || error instanceof NotFoundError) return undefined;
      throw error;
    }
  }

  /**
   * The version of each run this driver wrote last (a few runs). The next event of the run is advanced on it
   * without reading the run: the write that follows is conditional on that version, so if the run moved on in
   * between (another worker), the write fails and the run is read as after any conflict. A transition that would
   * write nothing on it is not trusted (a redelivery re-emits the effects of the run as stored): the run is read.
   */
  const knownRuns = new Map<string, Breadcrumb>();
  const runKey = (workspace: string, runId: string) => `${workspace}\u0000${runId}`;
  function remember(record: Breadcrumb): void {
    const key = runKey(record.workspace, record.id);
    knownRuns.delete(key);
    if (knownRuns.size >= MAX_KNOWN_RUNS) {
      const oldest = knownRuns.keys().next().value;
      if (oldest !== undefined) knownRuns.delete(oldest);
    }
    knownRuns.set(key, record);
  }

  /** Transitions waiting for a run, per run: the next group commit takes them all (`transition`). */
  const queued = new Map<string, Waiter[]>();

  /**
   * Applies the event (and the answers the driver gives itself) to the run; undefined when the event belongs to
   * no run (an answer to a run that does not exist).
   *
   * Events that reach one run while a transition of it is under way in this process wait, and the next
   * transition applies them all in one read → advance → conditional write (a group commit). One run has one
   * writer at a time, so answers that each took a write of their own would be applied one after the other, each
   * paying a full read and write of the run (and a re-read on every conflict): a map's items would be serialized
   * on the run. Applying several events in one write changes nothing in the exactly-once argument (README.md):
   * each event is applied as alone, in arrival order, and the write is still conditional on the version read.
   */
  function transition(input: TransitionInput): Promise<Transitioned | undefined> {
    const key = `${input.workspace}\u0000${input.runId}\u0000${input.principal}`;
    return new Promise((resolve, reject) => {
      const waiting = queued.get(key);
      const waiter: Waiter = { input, resolve, reject };
      if (waiting !== undefined) {
        waiting.push(waiter);
        return;
      }
      queued.set(key, [waiter]);
      void commitAll(key);
    });
  }

  /** Group commits of one run until nobody waits for it. */
  async function commitAll(key: string): Promise<void> {
    for (;;) {
      const group = queued.get(key) ?? [];
      if (group.length === 0) {
        queued.delete(key);
        return;
      }
      queued.set(key, []);
      try {
        const outcomes = await transitionTogether(group);
        group.forEach((waiter, i) => {
          const outcome = outcomes[i];
          if (outcome instanceof Failure) waiter.reject(outcome.error);
          else waiter.resolve(outcome);
        });
      } catch (error) {
        for (const waiter of group) waiter.reject(error);
      }
    }
  }

  /**
   * One group of events of one run, in arrival order: all the events waiting are applied to the run read, and
   * written in one conditional write; on a conflict, the run is read again and they are applied again. The
   * answers the driver gives itself (a tool nobody defines, `answerNow`) are asked for only once the effects
   * asking for them are written, and applied in the next write, as the events they are. The effects of the whole
   * group (and what `answerNow` asked to write) go to the first event that belongs to the run: its message's
   * redelivery re-emits them all if writing them fails (README.md, "Exactly once" 4); the others carry none.
   */
  async function transitionTogether(
    group: readonly Waiter[],
  ): Promise<(Transitioned | Failure | undefined)[]> {
    const first = group[0] as Waiter;
    const { workspace, runId } = first.input;
    const states = group.map((w) => ({
      input: w.input,
      events: [w.input.event],
      relayed: false,
      definition: undefined as WorkflowDefinition | undefined,
      outcome: 'open' as 'open' | 'applied' | 'no-run' | Failure,
    }));
    const collected: Effect[] = [];
    const outputs: OutputBreadcrumb[] = [];
    const waitsAdded = new Set<string>();
    /** wait_for attempts the wait index refused (its per-key bound), with why: their steps fail at once. */
    const waitsRefused = new Map<string, string>();
    let last: { definition: WorkflowDefinition; run: Run } | undefined;
    let conflicts = 0;
    let trustKnown = true;
    /** Requests of agent or tool steps answered at once with this failure (`resolveRequests`). */
    const refused = new Map<string, string>();
    while (
      states.some((s) => s.outcome !== 'no-run' && !(s.outcome instanceof Failure) && s.events.length > 0)
    ) {
      const known = trustKnown ? knownRuns.get(runKey(workspace, runId)) : undefined;
      const stored = known ?? (await readRun(workspace, runId));
      let run = stored === undefined ? undefined : parseRun(stored);
      let changed = false;
      let failedNow = false;
      const failedHere: (typeof states)[number][] = [];
      const attempt: {
        state: (typeof states)[number];
        effects: Effect[];
        run: Run;
        definition: WorkflowDefinition;
      }[] = [];
      for (const state of states) {
        if (state.outcome === 'no-run' || state.outcome instanceof Failure || state.events.length === 0)
          continue;
        try {
          for (let i = 0; i < state.events.length; i++) {
            let event = state.events[i] as RunEvent;
            if (i === 0 && !state.relayed && run !== undefined && event === state.input.event) {
              event = await withRelay(workspace, event, run);
              state.events[0] = event;
              state.relayed = true;
            }
            const definition = await state.input.definitionFor(run);
            const result = await advance({
              definition,
              run,
              event,
              now: deps.clock.now(),
              context: state.input.context,
              checks: runChecks(workspace),
            });
            if (result.note !== undefined) log.info(`run ${runId}: ${result.note}`);
            if (result.run === undefined) {
              state.outcome = 'no-run';
              break;
            }
            const versions = await resolveRequests(
              workspace,
              definition,
              result.run,
              result.effects,
              refused,
            );
            run = versions.run;
            changed ||= result.changed || versions.annotated;
            attempt.push({ state, effects: result.effects, run, definition });
          }
        } catch (error) {
          // This event cannot be applied: its message fails alone, the others are applied without it.
          state.outcome = new Failure(error);
          failedHere.push(state);
          failedNow = true;
        }
      }
      if (known !== undefined && (failedNow || !changed)) {
        // Only a write checks the run kept in memory against the stored one: read it and apply the events again.
        trustKnown = false;
        for (const s of [...states.filter((s) => s.outcome === 'no-run'), ...failedHere]) s.outcome = 'open';
        continue;
      }
      if (failedNow) {
        // The run built in memory may hold part of the failed event's work: apply the others again without it.
        for (const s of states) if (s.outcome instanceof Failure) s.events = [];
        continue;
      }
      if (attempt.length === 0) continue;
      const final = attempt.at(-1) as (typeof attempt)[number];
      if (changed) {
        await addWaits(
          workspace,
          final.run,
          attempt.flatMap((a) => a.effects),
          waitsAdded,
          waitsRefused,
        );
        const written = await writeRun(first.input, stored, final.run);
        if (written === undefined) {
          knownRuns.delete(runKey(workspace, runId));
          trustKnown = false;
          if (++conflicts > MAX_CONFLICTS) {
            throw new RetriableError(`run ${runId} kept changing under ${MAX_CONFLICTS} re-reads`);
          }
          for (const s of states) if (s.outcome === 'no-run') s.outcome = 'open';
          continue;
        }
        remember(written);
      }
      last = { definition: final.definition, run: final.run };
      // Committed: the events applied are done; the answers the driver gives itself to the new requests follow.
      for (const state of states) {
        if (state.outcome === 'no-run' || state.outcome instanceof Failure) continue;
        if (attempt.some((a) => a.state === state)) {
          state.outcome = 'applied';
          state.events = [];
        }
      }
      for (const { state, effects, run: at, definition } of attempt) {
        collected.push(...effects);
        state.definition = definition;
        for (const effect of effects) {
          const full = effect.type === 'wait_entry' ? waitsRefused.get(effect.attempt_id) : undefined;
          if (full !== undefined && effect.type === 'wait_entry') {
            // Past the wait index's bound: the step fails now, saying why, rather than wait unseen.
            state.events.push({
              type: 'wait_refused',
              id: boundedId(`${effect.attempt_id}.wait-refused`),
              request_id: effect.attempt_id,
              error: full,
            });
            continue;
          }
          if (effect.type !== 'request') continue;
          const refusal = refused.get(effect.id);
          if (refusal !== undefined) {
            state.events.push({
              type: 'answer',
              id: boundedId(`${effect.id}.no-${effect.kind}`),
              request_id: effect.id,
              ok: false,
              error: refusal,
              by: SYSTEM_PRINCIPAL,
            });
            continue;
          }
          const answeredBy = stepKindOf(effect.kind).request?.answeredBy;
          if (answeredBy !== undefined && effect.target !== undefined) {
            // A tool or workflow nobody defines would never answer: fail its step now.
            if (await isDefined(workspace, answeredBy, effect.target)) continue;
            state.events.push({
              type: 'answer',
              id: boundedId(`${effect.id}.no-${effect.kind}`),
              request_id: effect.id,
              ok: false,
              error: `no ${answeredBy.schema} named "${effect.target}" in workspace ${workspace}`,
              by: SYSTEM_PRINCIPAL,
            });
            continue;
          }
          const now = await state.input.answerNow?.(effect, at, definition);
          if (now !== undefined) {
            state.events.push(now.event);
            outputs.push(...(now.outputs ?? []));
          }
        }
      }
    }
    if (last === undefined) {
      return states.map((s) => (s.outcome instanceof Failure ? s.outcome : undefined));
    }
    const run = last.run;
    // Across several transitions, requests and timers the final state no longer wants are not written.
    const wanted = new Set(effectsOf(last.definition, run).map((e) => e.id));
    const seen = new Set<string>();
    const effects = collected.filter((e) => {
      if (seen.has(e.id)) return false;
      seen.add(e.id);
      return (e.type !== 'request' && e.type !== 'timer' && e.type !== 'wait_entry') || wanted.has(e.id);
    });
    let carried = false;
    return states.map((s) => {
      if (s.outcome instanceof Failure) return s.outcome;
      if (s.outcome !== 'applied') return undefined;
      const definition = s.definition ?? last.definition;
      if (carried) return { definition, run, effects: [], outputs: [] };
      carried = true;
      return { definition, run, effects, outputs, waitsAdded: [...waitsAdded] };
    });
  }

  /**
   * Carries out effects: requests, results and controls become outputs (created once under their ids by the
   * pipeline), timers are set and cancelled. `result` writes the run's result when given (an agent answers in its
   * own shape); otherwise the engine's `workflow.result.v1` / `workflow.error.v1`.
   */
  async function perform(
    workspace: string,
    done: Transitioned,
    options: {
      readonly skip?: (effect: Effect) => boolean;
      readonly result?: (effect: Extract<Effect, { type: 'result' }>) => OutputBreadcrumb[];
      /**
       * Leave the entries of attempts that stopped waiting: a match removes the entry it resumed only once the
       * run's outputs are written (`workflow-kind.ts`), so a redelivered match still finds the run to repair.
       */
      readonly keepWaits?: boolean;
    } = {},
  ): Promise<OutputBreadcrumb[]> {
    const outputs: OutputBreadcrumb[] = [];
    for (const effect of done.effects) {
      if (options.skip?.(effect)) continue;
      if (effect.type === 'result' && options.result !== undefined) {
        outputs.push(...options.result(effect));
        continue;
      }
      const action = actionOf(done.definition, done.run, effect);
      switch (action.type) {
        case 'write':
          // A run's requests, result and controls name the run, never each other: they are written at once.
          outputs.push({ ...action.breadcrumb, id: action.breadcrumb.id, independent: true });
          break;
        case 'set_timer':
          if (deps.timers === undefined) {
            throw new NonRetriableError(`run ${done.run.run_id} needs a timer, and its driver has none`);
          }
          await deps.timers.set({
            workspace,
            id: action.id,
            at: new Date(action.at),
            breadcrumb: action.breadcrumb,
          });
          break;
        case 'cancel_timer':
          if (deps.timers === undefined) break;
          // Best effort: a timer that fires anyway finds nothing waiting for it.
          await deps.timers.cancel(workspace, action.id).catch((error: unknown) => {
            log.warn('could not cancel a timer; it will fire as a no-op', {
              timer: action.id,
              error: String(error),
            });
          });
          break;
        case 'wait':
          // Added before the run write, unless this re-emits the effects of a run as stored (a redelivery).
          if (done.waitsAdded?.includes(effect.id)) break;
          // A redelivery re-adds what its transition added; one refused then failed its step, so it has no entry.
          await addWait(workspace, done.run, action).catch((error: unknown) => {
            if (!(error instanceof WaitIndexFullError)) throw error;
          });
          break;
        case 'unwait':
          if (options.keepWaits === true) break;
          // Best effort: an entry left behind is removed by the write that finds it (its attempt no longer waits).
          await deps.waits
            ?.remove({ ...action.key, workspace }, action.attempt_id)
            .catch((error: unknown) => {
              log.warn('could not remove a wait index entry; the next match removes it', {
                attempt: action.attempt_id,
                error: String(error),
              });
            });
          break;
      }
    }
    return outputs;
  }

  return { readRun, transition, perform };
}

export type RunDriver = ReturnType<typeof createRunDriver>;
