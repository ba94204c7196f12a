/**
 * The executor pipeline on the in-memory store and claims, with a clock the test moves: fast unit tests of what
 * the pipeline promises (one response per trigger, causation, hops, errors) and the chaos suite.
 */

import { LlmRouter } from '#shared/adapters/llm/llm-router.ts';
import { createContextAgentKind } from '#shared/core/agents/context/turn.ts';
import type { ExecutorImplementations } from '#shared/core/executor/contract.ts';
import { clearDefinitionCache } from '#shared/core/executor/definition-cache.ts';
import {
  type PipelineDeps,
  type ProcessOutcome,
  processExecutorMessage,
} from '#shared/core/executor/pipeline.ts';
import { createToolKind } from '#shared/core/tools/tool-kind.ts';
import {
  type Breadcrumb,
  type CreateBreadcrumbInput,
  CreateBreadcrumbSchema,
} from '#shared/domain/breadcrumb.ts';
import type { Causation } from '#shared/domain/change-event.ts';
import { isRetriable, retryAfterSecondsOf } from '#shared/domain/errors.ts';
import type { Clock } from '#shared/ports/breadcrumb-store.ts';
import type { ExecutorStore } from '#shared/ports/executor-store.ts';
import { silentLog } from '#shared/ports/log.ts';
import { builtinTools } from '#shared/tools/builtins.ts';
import { toolCatalog } from '#shared/tools/catalog.ts';
import { messageFor } from './executor-message.ts';
import { InMemoryBreadcrumbStore } from './memory/breadcrumb-store.ts';
import { InMemoryClaims } from './memory/claims.ts';

export const LEASE_MS = 60_000;

export class ManualClock implements Clock {
  private at = Date.parse('2026-03-01T12:00:00.000Z');
  now(): Date {
    return new Date(this.at);
  }
  advance(ms: number): void {
    this.at += ms;
  }
}

/** Never settles: a worker that reaches it has died there (it holds whatever it held). */
export function dieHere(): Promise<never> {
  return new Promise<never>(() => undefined);
}

export const tools = toolCatalog(builtinTools);

/** The default implementations: tools (built-ins) and agents (offline model), writing through `store`. */
export function implementationsFor(store: ExecutorStore): ExecutorImplementations {
  return {
    tool: createToolKind({ store, log: silentLog, clock: { now: () => new Date() }, tools }),
    agent: createContextAgentKind({ store, llm: new LlmRouter({ env: {}, defaultProvider: 'offline' }) }),
  };
}

export class Harness {
  readonly clock = new ManualClock();
  readonly store = new InMemoryBreadcrumbStore({ clock: this.clock });
  readonly claims = new InMemoryClaims({ clock: this.clock });
  readonly workspace = 'ws';

  constructor() {
    clearDefinitionCache();
  }

  deps(overrides: Partial<PipelineDeps> = {}): PipelineDeps {
    const store = overrides.store ?? this.store;
    return {
      store,
      claims: this.claims,
      leaseMs: LEASE_MS,
      clock: this.clock,
      implementations: implementationsFor(store),
      log: silentLog,
      ...overrides,
    };
  }

  async put(
    raw: CreateBreadcrumbInput,
    principal = 'user:tester',
    causation?: Causation,
  ): Promise<Breadcrumb> {
    // Each write a millisecond later, so listings order them as written.
    this.clock.advance(1);
    const { breadcrumb } = await this.store.create(this.workspace, CreateBreadcrumbSchema.parse(raw), {
      principal,
      ...(causation ? { causation } : {}),
    });
    return breadcrumb;
  }

  toolDef(name: string, extra: Record<string, unknown> = {}): Promise<Breadcrumb> {
    return this.put({ schema_name: 'tool.def.v1', title: name, context: { name, ...extra } });
  }

  request(tool: string, input: unknown, requestId: string, causation?: Causation): Promise<Breadcrumb> {
    return this.put(
      {
        schema_name: 'tool.request.v1',
        tags: [`request:${requestId}`],
        context: { tool, input, requestId, requestedBy: 'helper' },
      },
      'agent:helper',
      causation,
    );
  }

  async list(schema: string, tag?: string): Promise<Breadcrumb[]> {
    return (
      await this.store.list({
        workspace: this.workspace,
        schema_name: schema,
        ...(tag ? { tag } : {}),
        limit: 100,
      })
    ).items;
  }

  process(definition: Breadcrumb, trigger: Breadcrumb, deps = this.deps()): Promise<ProcessOutcome> {
    return processExecutorMessage(messageFor(definition, trigger), deps);
  }

  /**
   * Delivers the message as SQS would until it is handled: a retriable failure comes back after its
   * Retry-After (a claim held by a dead worker, after its lease) — the clock moves instead of the test waiting.
   * Returns the final outcome and how many deliveries it took.
   */
  async deliverUntilHandled(
    definition: Breadcrumb,
    trigger: Breadcrumb,
    makeDeps: (delivery: number) => PipelineDeps = () => this.deps(),
    maxDeliveries = 10,
  ): Promise<{ outcome: ProcessOutcome; deliveries: number }> {
    for (let delivery = 1; delivery <= maxDeliveries; delivery++) {
      try {
        return { outcome: await this.process(definition, trigger, makeDeps(delivery)), deliveries: delivery };
      } catch (error) {
        if (!isRetriable(error)) throw error;
        this.clock.advance((retryAfterSecondsOf(error) ?? 1) * 1000);
      }
    }
    throw new Error(`not handled after ${maxDeliveries} deliveries`);
  }
}
