/**
 * Chaos suite, in memory: a worker dies at each step of the pipeline, messages are delivered three times at
 * once, and DynamoDB throttles at every IO call in turn. Whatever happens, each trigger ends with exactly one
 * response, and no trigger is left unanswered. (The critical cases run against DynamoDB Local in
 * test/integration/executor-pipeline.test.ts.)
 *
 * How a scenario runs: the first delivery goes through faulty IO (test/support/faults.ts); a worker that "dies"
 * never returns, keeping whatever it held (its claim stays `running`). Then SQS is played by
 * `deliverUntilHandled`: each retriable failure comes back after its Retry-After (for a claim held by a dead
 * worker: when its lease runs out), on healthy IO. A message that would exhaust its receives goes to the DLQ
 * handler, which answers under the same id.
 */
import { describe, expect, it } from 'vitest';
import type { ExecutorImplementations } from '#shared/core/executor/contract.ts';
import { handleDeadLetter } from '#shared/core/executor/dlq.ts';
import type { PipelineDeps } from '#shared/core/executor/pipeline.ts';
import type { Breadcrumb } from '#shared/domain/breadcrumb.ts';
import { isRetriable, RetriableError } from '#shared/domain/errors.ts';
import { Harness, implementationsFor } from '../../../support/executor-harness.ts';
import { messageFor } from '../../../support/executor-message.ts';
import { type FaultPlan, faultyIo, seeded } from '../../../support/faults.ts';

/** `agent-continuation`: the tool's answer that continues an agent's turn (its state carried by the request). */
type Kind = 'tool' | 'agent' | 'agent-continuation';

interface Scenario {
  h: Harness;
  definition: Breadcrumb;
  trigger: Breadcrumb;
  /**
   * What occupies the trigger's answer slot (its first output id): the answer, or the error answer the DLQ
   * handler writes there when every delivery failed. Exactly one, whatever happened.
   */
  answers(): Promise<Breadcrumb[]>;
  /** Everything else the answer needs to be complete (an agent's conversation, waiting for its tool). */
  complete(): Promise<boolean>;
}

async function scenario(kind: Kind): Promise<Scenario> {
  const h = new Harness();
  if (kind === 'tool') {
    const definition = await h.toolDef('echo');
    const trigger = await h.request('echo', { hello: 'world' }, 'r1');
    return {
      h,
      definition,
      trigger,
      answers: () => h.list('tool.response.v1', 'request:r1'),
      complete: async () => true,
    };
  }
  const calculator = await h.toolDef('calculator');
  const definition = await h.put({
    schema_name: 'agent.def.v1',
    context: {
      agent_id: 'helper',
      model: 'offline/crumbs',
      tools: ['calculator'],
      subscriptions: { selectors: [{ schema_name: 'user.message.v1', role: 'trigger' }] },
    },
  });
  const message = await h.put({ schema_name: 'user.message.v1', context: { message: 'what is 17*23?' } });
  if (kind === 'agent') {
    // The agent's answer to this message is one calculator request carrying the turn's state, waiting for the
    // result.
    return {
      h,
      definition,
      trigger: message,
      answers: async () => [...(await h.list('tool.request.v1')), ...(await h.list('agent.error.v1'))],
      complete: async () =>
        (await h.list('tool.request.v1')).some(
          (r) => (r.context.conversation as { status?: string } | undefined)?.status === 'waiting-for-tools',
        ),
    };
  }
  // The turn's first invocation and the calculator run cleanly; the calculator's answer is the trigger. Its
  // answer: the agent's, continued from the state the request carries, and the turn's conversation, answered.
  expect((await h.process(definition, message)).status).toBe('responded');
  const [request] = await h.list('tool.request.v1');
  expect((await h.process(calculator, request!)).status).toBe('responded');
  const [response] = await h.list('tool.response.v1');
  return {
    h,
    definition,
    trigger: response!,
    answers: async () => [...(await h.list('agent.response.v1')), ...(await h.list('agent.error.v1'))],
    complete: async () => {
      const [answer] = await h.list('agent.response.v1');
      const conversations = await h.list('agent.conversation.v1');
      return (
        String(answer?.context.message).includes('391') &&
        conversations.length === 1 &&
        conversations[0]?.context.status === 'answered'
      );
    },
  };
}

/** Pipeline dependencies whose IO follows `plan`; the implementations read and write through the same IO. */
function faulty(
  s: Scenario,
  plan: FaultPlan,
): { deps: PipelineDeps; died: Promise<string>; calls: string[] } {
  const io = faultyIo({ store: s.h.store, claims: s.h.claims }, plan);
  const implementations: ExecutorImplementations = implementationsFor(io.store);
  return {
    deps: s.h.deps({ store: io.store, claims: io.claims, implementations }),
    died: io.died,
    calls: io.calls,
  };
}

/** Plays SQS until the message is handled, or dead-lettered and answered by the DLQ handler. */
async function settle(s: Scenario): Promise<string> {
  try {
    const { outcome } = await s.h.deliverUntilHandled(s.definition, s.trigger, () => s.h.deps(), 5);
    return outcome.status;
  } catch (error) {
    if (isRetriable(error) || String(error).includes('not handled')) {
      await handleDeadLetter(messageFor(s.definition, s.trigger), { store: s.h.store });
      return 'dead-lettered';
    }
    throw error;
  }
}

async function expectOneAnswer(s: Scenario): Promise<void> {
  const answers = await s.answers();
  expect(answers, 'exactly one answer').toHaveLength(1);
  expect(answers[0]?.schema_name).not.toBe('agent.error.v1');
  expect(await s.complete(), 'the answer is complete').toBe(true);
  // And nothing is left to do: the next delivery sees it answered.
  expect((await s.h.process(s.definition, s.trigger)).status).toBe('skipped');
}

/** The IO calls of one clean delivery, to aim faults at each of them. */
async function cleanCalls(kind: Kind): Promise<string[]> {
  const s = await scenario(kind);
  const { deps, calls } = faulty(s, () => 'ok');
  await s.h.process(s.definition, s.trigger, deps);
  return [...calls];
}

describe.each(['tool', 'agent', 'agent-continuation'] as const)('chaos: %s executor', (kind) => {
  describe('a worker dies at a pipeline step', () => {
    const points: [string, (op: string, seen: Set<string>) => 'die-before' | 'die-after' | undefined][] = [
      ['right after it claimed the trigger', (op) => (op === 'claims.acquire' ? 'die-after' : undefined)],
      [
        'right after execute, before any output is written',
        (op) => (op === 'store.create' ? 'die-before' : undefined),
      ],
      // A tool answers once: its answer is its claim's completion, so there is no write between them to die at.
      ...(kind !== 'tool'
        ? [
            [
              'between writing the response and completing the claim',
              (op: string) => (op === 'claims.complete' ? ('die-before' as const) : undefined),
            ] satisfies [string, (op: string) => 'die-before' | undefined],
          ]
        : []),
      [
        'between a failed write and releasing the claim',
        (op, seen) => (op === 'claims.release' && seen.has('throttled') ? 'die-before' : undefined),
      ],
    ];
    it.each(points)('%s: exactly one answer after the lease runs out', async (_name, dieAt) => {
      const s = await scenario(kind);
      const seen = new Set<string>();
      const { deps, died } = faulty(s, (_n, op) => {
        // For the release point: the last output write is throttled first, so the pipeline releases.
        if (
          op === 'store.create' &&
          !seen.has('throttled') &&
          dieAt('claims.release', new Set(['throttled']))
        ) {
          seen.add('throttled');
          return 'throttle';
        }
        return dieAt(op, seen) ?? 'ok';
      });
      await Promise.race([died, s.h.process(s.definition, s.trigger, deps)]);

      const status = await settle(s);

      expect(status).toBe('responded');
      await expectOneAnswer(s);
    });

    it('a zombie that wakes up after another worker took over writes nothing new', async () => {
      const s = await scenario(kind);
      let wake!: () => void;
      const asleep = new Promise<void>((resolve) => {
        wake = resolve;
      });
      const io = faultyIo({ store: s.h.store, claims: s.h.claims }, () => 'ok');
      const sleepy = Object.create(io.store) as typeof io.store;
      let slept = false;
      sleepy.create = async (...args) => {
        if (!slept) {
          slept = true;
          await asleep;
        }
        return io.store.create(...args);
      };
      const zombie = s.h.process(
        s.definition,
        s.trigger,
        s.h.deps({ store: sleepy, implementations: implementationsFor(sleepy) }),
      );
      await new Promise((r) => setTimeout(r, 20));

      expect(await settle(s)).toBe('responded');
      wake();
      await zombie;

      await expectOneAnswer(s);
    });
  });

  it('delivered three times at once: one execution answers, the others find it answered', async () => {
    const s = await scenario(kind);
    const settled = await Promise.allSettled([1, 2, 3].map(() => s.h.process(s.definition, s.trigger)));
    for (const r of settled) if (r.status === 'rejected') expect(r.reason).toBeInstanceOf(RetriableError);
    expect(settled.filter((r) => r.status === 'fulfilled' && r.value.status === 'responded')).toHaveLength(1);

    expect(await settle(s)).toBe('skipped');
    await expectOneAnswer(s);
  });

  it('throttled by DynamoDB at each IO call in turn: retried, never answered with an error, answered once', async () => {
    const calls = await cleanCalls(kind);
    expect(calls.length).toBeGreaterThanOrEqual(4);
    for (let target = 1; target <= calls.length; target++) {
      const s = await scenario(kind);
      const { deps } = faulty(s, (n) => (n === target ? 'throttle' : 'ok'));
      const first = await s.h.process(s.definition, s.trigger, deps).catch((error: unknown) => error);
      if (first instanceof Error)
        expect(isRetriable(first), `${calls[target - 1]}: ${first.message}`).toBe(true);

      expect(await settle(s), `throttled at ${calls[target - 1]}`).toMatch(/^(responded|skipped)$/);
      await expectOneAnswer(s);
      expect(await s.h.list('agent.error.v1')).toEqual([]);
    }
  });

  it('dies at each IO call in turn: answered once after the lease', async () => {
    const calls = await cleanCalls(kind);
    for (let target = 1; target <= calls.length; target++) {
      for (const fault of ['die-before', 'die-after'] as const) {
        const s = await scenario(kind);
        const { deps, died } = faulty(s, (n) => (n === target ? fault : 'ok'));
        // (A call the clean run made may not come in a run that differs, e.g. an upsert that creates.)
        await Promise.race([died, s.h.process(s.definition, s.trigger, deps).catch(() => undefined)]);

        expect(await settle(s), `${fault} ${calls[target - 1]}`).toMatch(/^(responded|skipped)$/);
        await expectOneAnswer(s);
      }
    }
  });

  it('under random throttling (seeded), every trigger of a batch is answered exactly once', async () => {
    const random = seeded(kind === 'tool' ? 7 : 11);
    for (let round = 0; round < 20; round++) {
      const s = await scenario(kind);
      const io = faultyIo({ store: s.h.store, claims: s.h.claims }, () =>
        random() < 0.15 ? 'throttle' : 'ok',
      );
      const deps = () =>
        s.h.deps({ store: io.store, claims: io.claims, implementations: implementationsFor(io.store) });
      let status: string;
      try {
        status = (await s.h.deliverUntilHandled(s.definition, s.trigger, deps, 5)).outcome.status;
      } catch {
        // Its receives ran out: the DLQ handler answers (on a store that has recovered).
        await handleDeadLetter(messageFor(s.definition, s.trigger), { store: s.h.store });
        status = 'dead-lettered';
      }
      // One answer in the slot: the response, or (dead-lettered before it was written) the error answer.
      expect(await s.answers(), `round ${round} (${status})`).toHaveLength(1);
      if (status !== 'dead-lettered') expect(await s.complete(), `round ${round}`).toBe(true);
    }
  });
});
