import type { SQSRecord } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { processExecutorBatch } from '#shared/core/executor/batch.ts';
import type {
  ExecutionInput,
  ExecutorKindImplementation,
  ExecutorMessage,
  OutputBreadcrumb,
} from '#shared/core/executor/contract.ts';
import { deterministicId, outputCausation, outputId } from '#shared/core/executor/outputs.ts';
import { processExecutorMessage } from '#shared/core/executor/pipeline.ts';
import { CreateBreadcrumbSchema } from '#shared/domain/breadcrumb.ts';
import { NonRetriableError, RetriableError } from '#shared/domain/errors.ts';
import { LOOP_STOPPED_SCHEMA } from '#shared/domain/protocol.ts';
import type { ExecutorStore } from '#shared/ports/executor-store.ts';
import type { MessageVisibility } from '#shared/ports/message-visibility.ts';
import { Harness, LEASE_MS } from '../../../support/executor-harness.ts';
import { messageFor } from '../../../support/executor-message.ts';

/** A tool-kind implementation whose outputs and behaviour the test decides. */
function fakeKind(
  execute: (input: ExecutionInput<unknown>) => Promise<OutputBreadcrumb[]>,
  extra: Partial<ExecutorKindImplementation<unknown>> = {},
): ExecutorKindImplementation<unknown> & { runs: number } {
  const kind = {
    runs: 0,
    async execute(input: ExecutionInput<unknown>) {
      kind.runs++;
      return { outputs: await execute(input) };
    },
    errorOutput: ({ error }: { error: string }) => ({
      schema_name: 'test.error.v1',
      tags: ['test:error'],
      context: { error },
    }),
    ...extra,
  };
  return kind;
}

/** The message as a publisher that did not send the whole record sent it: routing fields and the context. */
function fromOlderPublisher(message: ExecutorMessage): ExecutorMessage {
  const { created_at: _, expires_at: _e, llm_hints: _h, claimed_by: _c, ...detail } = message.event.detail;
  return { ...message, event: { ...message.event, detail } };
}

/** The message of a trigger whose context was too large for its event. */
function withoutContext(message: ExecutorMessage): ExecutorMessage {
  const { context: _, words: _w, words_truncated: _t, ...rest } = fromOlderPublisher(message).event.detail;
  return { ...message, event: { ...message.event, detail: { ...rest, context_omitted: true } } };
}

/** `store` with every read of the breadcrumb `id` recorded (`get`, `getVersion@<v>`). */
function countingReads(store: ExecutorStore, id: () => string | undefined) {
  const reads: string[] = [];
  const counted = Object.create(store) as ExecutorStore;
  counted.get = async (workspace, wanted) => {
    if (wanted === id()) reads.push('get');
    return store.get(workspace, wanted);
  };
  counted.getVersion = async (workspace, wanted, version) => {
    if (wanted === id()) reads.push(`getVersion@${version}`);
    return store.getVersion(workspace, wanted, version);
  };
  return { store: counted, reads };
}

describe('outputId', () => {
  it('is deterministic per (definition, trigger, version, index) and a valid breadcrumb id', () => {
    const a = outputId('tool', 'def', 'trig', 1, 0);
    expect(a).toMatch(/^tool-[0-9a-f]{26}$/);
    expect(outputId('tool', 'def', 'trig', 1, 0)).toBe(a);
    expect(
      new Set([
        a,
        outputId('tool', 'def', 'trig', 2, 0),
        outputId('tool', 'def', 'trig', 1, 1),
        outputId('tool', 'def2', 'trig', 1, 0),
      ]).size,
    ).toBe(4);
    expect(deterministicId('wfstep', 'run-1', 'a', '1')).toMatch(/^wfstep-[0-9a-f]{32}$/);
  });
});

describe('outputCausation', () => {
  it('points at the trigger version, keeps the thread and counts one hop more', () => {
    expect(outputCausation({ id: 'u1', version: 3 })).toEqual({ caused_by: 'u1@3', thread: 'u1', hop: 1 });
    expect(
      outputCausation({ id: 'r1', version: 1, causation: { caused_by: 'u1@3', thread: 'u1', hop: 1 } }),
    ).toEqual({ caused_by: 'r1@1', thread: 'u1', hop: 2 });
  });
});

describe('executor pipeline (in memory)', () => {
  it('answers a tool request once, with causation, the request tag and the tool as writer', async () => {
    const h = new Harness();
    const def = await h.toolDef('calculator');
    const trigger = await h.request('calculator', { expression: '17*23' }, 'r1');

    const outcome = await h.process(def, trigger);
    const again = await h.process(def, trigger);

    expect(outcome.status).toBe('responded');
    expect(again).toEqual({ status: 'skipped', reason: 'already answered' });
    const [response, ...others] = await h.list('tool.response.v1', 'request:r1');
    expect(others).toEqual([]);
    expect(response).toMatchObject({
      created_by: 'tool:calculator',
      causation: { caused_by: `${trigger.id}@1`, thread: trigger.id, hop: 1 },
      context: { status: 'success', output: { result: 391 }, request_id: 'r1' },
    });
  });

  it('skips what it must not run: a trigger written by the definition itself, another tool, a deleted one', async () => {
    const h = new Harness();
    const def = await h.toolDef('echo');
    const other = await h.request('calculator', {}, 'r-other');
    const own = await h.put(
      { schema_name: 'tool.request.v1', context: { tool: 'echo', input: {}, requestId: 'r-own' } },
      'tool:echo',
    );
    const deleted = await h.request('echo', {}, 'r-deleted');
    await h.store.delete(h.workspace, deleted.id);

    expect((await h.process(def, other)).status).toBe('skipped');
    expect(await h.process(def, own)).toEqual({
      status: 'skipped',
      reason: 'the trigger was written by this definition',
    });
    // A deleted trigger the pipeline has to read (its event left the context out) is gone.
    expect(await processExecutorMessage(withoutContext(messageFor(def, deleted)), h.deps())).toEqual({
      status: 'skipped',
      reason: 'the trigger is gone',
    });
    expect(await h.list('tool.response.v1')).toEqual([]);
  });

  it('writes outputs under ids the implementation chooses, once; a repeat is a replay', async () => {
    const h = new Harness();
    const def = await h.toolDef('echo');
    const trigger = await h.request('echo', {}, 'r-chosen');
    const id = deterministicId('wfstep', 'run-1', 'step-a', '1');
    const kind = fakeKind(async () => [
      { schema_name: 'test.step.v1', id, context: { run: kind.runs } },
      { schema_name: 'test.answer.v1', context: { run: kind.runs } },
    ]);

    const first = await h.process(def, trigger, h.deps({ implementations: { tool: kind } }));
    // A re-execution (say, after a crash before the claim was completed) lands on the same ids.
    h.clock.advance(LEASE_MS + 1);
    await h.claims.release(
      { workspace: h.workspace, executor: def.id, triggerId: trigger.id, triggerVersion: 1 },
      'any',
    );
    const second = await h.process(def, trigger, h.deps({ implementations: { tool: kind, agent: kind } }));

    expect(first.status).toBe('responded');
    expect(first.status === 'responded' && first.outputIds[0]).toBe(id);
    expect(second.status).toBe('skipped');
    expect((await h.list('test.step.v1')).map((b) => [b.id, b.context])).toEqual([[id, { run: 1 }]]);
  });

  it('answers a non-retriable failure with the kind’s error output; a retriable one fails the message', async () => {
    const h = new Harness();
    const def = await h.toolDef('echo');
    const broken = await h.request('echo', {}, 'r-broken');
    const throttled = await h.request('echo', {}, 'r-throttled');

    const failing = fakeKind(async () => {
      throw new NonRetriableError('the tool is broken');
    });
    const outcome = await h.process(def, broken, h.deps({ implementations: { tool: failing } }));
    expect(outcome).toMatchObject({ status: 'errored', error: 'the tool is broken' });
    expect((await h.list('test.error.v1')).map((b) => b.context)).toEqual([{ error: 'the tool is broken' }]);

    const busy = fakeKind(async () => {
      throw new RetriableError('slow down', { retryAfterSeconds: 3 });
    });
    await expect(
      h.process(def, throttled, h.deps({ implementations: { tool: busy } })),
    ).rejects.toMatchObject({
      retryAfterSeconds: 3,
    });
    // The claim was released: the retry runs at once instead of waiting out the lease.
    expect((await h.process(def, throttled)).status).toBe('responded');
  });

  it('answers with the error output when the store refuses an output for good', async () => {
    const h = new Harness();
    const def = await h.toolDef('echo');
    const trigger = await h.request('echo', {}, 'r-refused');
    const bad = fakeKind(async () => [{ schema_name: 'Not A Schema', context: {} }]);

    const outcome = await h.process(def, trigger, h.deps({ implementations: { tool: bad } }));

    expect(outcome.status).toBe('errored');
    expect(String((await h.list('test.error.v1'))[0]?.context.error)).toMatch(
      /output was refused.*schema_name/,
    );
  });

  it('asks a redelivery to wait for a live claim’s lease', async () => {
    const h = new Harness();
    const def = await h.toolDef('echo');
    const trigger = await h.request('echo', {}, 'r-busy');
    await h.claims.acquire(
      { workspace: h.workspace, executor: def.id, triggerId: trigger.id, triggerVersion: 1 },
      LEASE_MS,
    );

    const error = await h.process(def, trigger).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(RetriableError);
    expect((error as RetriableError).retryAfterSeconds).toBe(LEASE_MS / 1000 + 1);
  });

  it('stops a trigger at the hop limit with one system.loop_stopped.v1', async () => {
    const h = new Harness();
    const def = await h.toolDef('echo', { hop_limit: 3 });
    const trigger = await h.request('echo', {}, 'r-loop', { caused_by: 'x@1', thread: 'th', hop: 3 });

    const outcomes = [await h.process(def, trigger), await h.process(def, trigger)];

    expect(outcomes.map((o) => o.status)).toEqual(['loop-stopped', 'loop-stopped']);
    const stopped = await h.list(LOOP_STOPPED_SCHEMA);
    expect(stopped).toHaveLength(1);
    expect(stopped[0]?.context).toMatchObject({ hop: 3, hop_limit: 3, thread: 'th' });
    expect(await h.list('tool.response.v1')).toEqual([]);
  });

  it('drops a trigger an executor wrote in a thread whose breadth budget is spent, reading the counter once', async () => {
    const h = new Harness();
    const def = await h.toolDef('echo');
    const reads: string[] = [];
    let total = 60;
    const threadBudget = {
      limit: 60,
      counters: {
        read: async (workspace: string, key: string) => {
          reads.push(`${workspace}/${key}`);
          return total;
        },
      },
    };
    const inStorm = await h.request('echo', {}, 'r-storm', { caused_by: 'x@1', thread: 'th', hop: 4 });
    expect(await h.process(def, inStorm, h.deps({ threadBudget }))).toEqual({
      status: 'skipped',
      reason: 'the thread reached its breadth budget (the publisher stopped routing it)',
    });
    expect(reads).toEqual(['ws/thread#th']);
    expect(await h.list('tool.response.v1')).toEqual([]);
    // Below the budget it runs; so does a person's write (hop 0), which the publisher never counts.
    total = 59;
    expect((await h.process(def, inStorm, h.deps({ threadBudget }))).status).toBe('responded');
    total = 1000;
    const person = await h.request('echo', {}, 'r-person');
    expect((await h.process(def, person, h.deps({ threadBudget }))).status).toBe('responded');
    // 59 of 60 is near the budget: read again before the write; the person's write is not read at all.
    expect(reads).toHaveLength(3);
    // A counter that cannot be read lets the trigger run, as the publisher routes when it cannot count.
    const broken = {
      limit: 60,
      counters: {
        read: async () => {
          throw new Error('throttled');
        },
      },
    };
    const other = await h.request('echo', {}, 'r-other', { caused_by: 'y@1', thread: 'th2', hop: 1 });
    expect((await h.process(def, other, h.deps({ threadBudget: broken }))).status).toBe('responded');
  });

  it('writes nothing when the thread, near its budget as the trigger began, reached it while it ran', async () => {
    const h = new Harness();
    const def = await h.toolDef('echo');
    let total = 50;
    const reads: number[] = [];
    const threadBudget = {
      limit: 60,
      counters: {
        read: async () => {
          reads.push(total);
          return total;
        },
      },
    };
    // The storm's other executions reach the budget while this one runs.
    const racing = fakeKind(async () => {
      total = 60;
      return [{ schema_name: 'test.answer.v1', context: { late: true } }];
    });
    const trigger = await h.request('echo', {}, 'r-late', { caused_by: 'x@1', thread: 'th', hop: 2 });
    const deps = h.deps({ threadBudget, implementations: { tool: racing } });
    expect(await h.process(def, trigger, deps)).toEqual({
      status: 'skipped',
      reason: 'the thread reached its breadth budget while this ran; nothing written',
    });
    expect(racing.runs).toBe(1);
    expect(reads).toEqual([50, 60]);
    expect(await h.list('test.answer.v1')).toEqual([]);
    // A redelivery finds the claim done: it neither runs nor writes.
    expect((await h.process(def, trigger, deps)).status).toBe('skipped');
    expect(racing.runs).toBe(1);
    // Far from its budget, a thread is read once.
    total = 10;
    reads.length = 0;
    const calm = await h.request('echo', {}, 'r-calm', { caused_by: 'x@1', thread: 'th3', hop: 2 });
    expect((await h.process(def, calm, h.deps({ threadBudget }))).status).toBe('responded');
    expect(reads).toEqual([10]);
  });

  describe('continuations (ownRequestOf)', () => {
    /** A kind that asks a question and continues on the answer, as an agent does with its tools. */
    async function setup(h: Harness) {
      const def = await h.put({
        schema_name: 'workflow.def.v1',
        context: {
          workflow_id: 'asker',
          subscriptions: {
            selectors: [
              { schema_name: 'job.v1', role: 'trigger' },
              { schema_name: 'answer.v1', role: 'trigger' },
            ],
          },
          steps: [{ id: 'a', tool: 'echo' }],
          output: { schema_name: 'workflow.result.v1' },
        },
      });
      const kind = fakeKind(async () => [{ schema_name: 'question.v1', context: {} }], {
        ownRequestOf: ({ trigger }) => {
          const match = /^(.+)@(\d+)$/.exec(trigger.causation?.caused_by ?? '');
          return trigger.schema_name === 'answer.v1' && match?.[1] ? { id: match[1] } : undefined;
        },
      });
      return { def, kind, deps: h.deps({ implementations: { workflow: kind } }) };
    }

    it('keeps the hop of the turn: the outputs of a continuation get the hop of its own request', async () => {
      const h = new Harness();
      const { def, kind, deps } = await setup(h);
      const job = await h.put({ schema_name: 'job.v1', context: {} }, 'user:a', {
        caused_by: 'u@1',
        thread: 't',
        hop: 2,
      });
      let trigger = job;
      for (let round = 1; round <= 20; round++) {
        const outcome = await h.process(def, trigger, deps);
        expect(outcome.status).toBe('responded');
        const [questionId] = outcome.status === 'responded' ? outcome.outputIds : [];
        const question = await h.store.get(h.workspace, questionId ?? '');
        expect(question.causation?.hop).toBe(3);
        // Someone else answers the question, one hop further, caused by it.
        trigger = await h.put({ schema_name: 'answer.v1', context: { round } }, 'tool:answerer', {
          caused_by: `${question.id}@${question.version}`,
          thread: 't',
          hop: 4,
        });
      }
      expect(kind.runs).toBe(20);
      expect(await h.list(LOOP_STOPPED_SCHEMA)).toEqual([]);
    });

    it('does not count an answer to somebody else’s request as a continuation', async () => {
      const h = new Harness();
      const { def, deps } = await setup(h);
      const foreign = await h.put({ schema_name: 'question.v1', context: {} }, 'agent:other', {
        caused_by: 'u@1',
        thread: 't',
        hop: 15,
      });
      const answer = await h.put({ schema_name: 'answer.v1', context: {} }, 'tool:answerer', {
        caused_by: `${foreign.id}@1`,
        thread: 't',
        hop: 16,
      });

      expect((await h.process(def, answer, deps)).status).toBe('loop-stopped');
    });

    it('does not count an answer naming a request nobody wrote as a continuation', async () => {
      const h = new Harness();
      const { def, deps } = await setup(h);
      const answer = await h.put({ schema_name: 'answer.v1', context: {} }, 'tool:answerer', {
        caused_by: 'nobody-wrote-this@1',
        thread: 't',
        hop: 16,
      });

      expect((await h.process(def, answer, deps)).status).toBe('loop-stopped');
    });

    it('knows the hop of a request it wrote itself without reading it again', async () => {
      const h = new Harness();
      const { def, kind } = await setup(h);
      let questionId: string | undefined;
      const { store, reads } = countingReads(h.store, () => questionId);
      const deps = h.deps({ store, implementations: { workflow: kind } });
      const job = await h.put({ schema_name: 'job.v1', context: {} }, 'user:a', {
        caused_by: 'u@1',
        thread: 't',
        hop: 15,
      });
      const asked = await h.process(def, job, deps);
      questionId = asked.status === 'responded' ? asked.outputIds[0] : undefined;
      const answer = await h.put({ schema_name: 'answer.v1', context: {} }, 'tool:answerer', {
        caused_by: `${questionId}@1`,
        thread: 't',
        hop: 17,
      });

      const outcome = await h.process(def, answer, deps);

      // Past the hop limit as a plain trigger; a continuation of the turn at hop 15.
      expect(outcome.status).toBe('responded');
      const [next] = outcome.status === 'responded' ? outcome.outputIds : [];
      expect((await h.store.get(h.workspace, next ?? '')).causation?.hop).toBe(16);
      expect(reads).toEqual([]);
    });

    it('remembers only the version it wrote: a later version of its request is read', async () => {
      const h = new Harness();
      const { def, kind } = await setup(h);
      let questionId = '';
      const { store, reads } = countingReads(h.store, () => questionId);
      const deps = h.deps({ store, implementations: { workflow: kind } });
      const job = await h.put({ schema_name: 'job.v1', context: {} }, 'user:a', {
        caused_by: 'u@1',
        thread: 't',
        hop: 2,
      });
      const asked = await h.process(def, job, deps);
      questionId = asked.status === 'responded' ? (asked.outputIds[0] ?? '') : '';
      // Another executor rewrites the question (version 2 keeps its creator, with the rewriter's causation).
      await h.store.update(
        h.workspace,
        questionId,
        { context: { rewritten: true } },
        { principal: 'tool:rewriter', causation: { caused_by: 'x@1', thread: 't', hop: 9 } },
      );
      const answer = await h.put({ schema_name: 'answer.v1', context: {} }, 'tool:answerer', {
        caused_by: `${questionId}@2`,
        thread: 't',
        hop: 10,
      });

      const outcome = await h.process(def, answer, deps);

      // Judged on version 2 as stored (hop 9), not on what was remembered of version 1 (hop 3).
      const [next] = outcome.status === 'responded' ? outcome.outputIds : [];
      expect((await h.store.get(h.workspace, next ?? '')).causation?.hop).toBe(9);
      expect(reads).toEqual(['get']);
    });

    it('does not take a request id another store holds for one its own memory knows', async () => {
      const mine = new Harness();
      const { def: myDef, deps: myDeps } = await setup(mine);
      const job = await mine.put({ schema_name: 'job.v1', context: {} }, 'user:a', {
        caused_by: 'u@1',
        thread: 't',
        hop: 2,
      });
      const asked = await mine.process(myDef, job, myDeps);
      const questionId = asked.status === 'responded' ? (asked.outputIds[0] ?? '') : '';
      // Another table (or instance) where that id was written by someone else: nothing of the first applies.
      const other = new Harness();
      const { def, deps } = await setup(other);
      await other.store.create(
        other.workspace,
        CreateBreadcrumbSchema.parse({ schema_name: 'question.v1', context: {} }),
        { principal: 'agent:other', id: questionId, causation: { caused_by: 'u@1', thread: 't', hop: 15 } },
      );
      const answer = await other.put({ schema_name: 'answer.v1', context: {} }, 'tool:answerer', {
        caused_by: `${questionId}@1`,
        thread: 't',
        hop: 16,
      });

      expect((await other.process(def, answer, deps)).status).toBe('loop-stopped');
    });
  });
});

describe('the trigger from its change event', () => {
  /** A kind that records the trigger it was given and answers with nothing of it. */
  function recordingKind() {
    const seen: ExecutionInput<unknown>['trigger'][] = [];
    const kind = fakeKind(async (input) => {
      seen.push(input.trigger);
      return [{ schema_name: 'test.answer.v1', context: {} }];
    });
    return { kind, seen };
  }

  async function hintedRequest(h: Harness, requestId: string) {
    h.clock.advance(1);
    const { breadcrumb } = await h.store.create(
      h.workspace,
      CreateBreadcrumbSchema.parse({
        schema_name: 'tool.request.v1',
        tags: [`request:${requestId}`],
        context: { tool: 'echo', input: { shown: 1, secret: 2 }, requestId, requestedBy: 'helper' },
        llm_hints: { exclude: ['$.input.secret'] },
        expires_at: new Date(h.clock.now().getTime() + 3_600_000).toISOString(),
      }),
      { principal: 'agent:helper', causation: { caused_by: 'u@1', thread: 't', hop: 1 } },
    );
    return breadcrumb;
  }

  it('takes a trigger its event carries whole from the event, exactly as a read would give it', async () => {
    const h = new Harness();
    const fromEvent = await h.toolDef('echo');
    const fromRead = await h.toolDef('echo');
    const trigger = await hintedRequest(h, 'r-whole');
    const counted = countingReads(h.store, () => trigger.id);
    const { kind, seen } = recordingKind();
    const deps = h.deps({ store: counted.store, implementations: { tool: kind } });

    expect((await processExecutorMessage(messageFor(fromEvent, trigger), deps)).status).toBe('responded');
    expect(counted.reads).toEqual([]);
    expect(
      (await processExecutorMessage(fromOlderPublisher(messageFor(fromRead, trigger)), deps)).status,
    ).toBe('responded');
    expect(counted.reads).toEqual(['getVersion@1']);

    expect(seen).toHaveLength(2);
    expect(seen[0]).toEqual(seen[1]);
    // The record's own llm_hints applied, from the event.
    expect(seen[0]?.context).toMatchObject({ input: { shown: 1 } });
    expect(JSON.stringify(seen[0]?.context)).not.toContain('secret');
  });

  it('reads the trigger when its event left the context out, or its context does not match its checksum', async () => {
    const h = new Harness();
    const trigger = await h.request('echo', { n: 1 }, 'r-read');
    const counted = countingReads(h.store, () => trigger.id);
    const { kind, seen } = recordingKind();
    const deps = h.deps({ store: counted.store, implementations: { tool: kind } });
    const omitted = await h.toolDef('echo');
    const tampered = await h.toolDef('echo');
    const message = messageFor(tampered, trigger);
    const altered: ExecutorMessage = {
      ...message,
      event: {
        ...message.event,
        detail: { ...message.event.detail, context: { ...trigger.context, input: { n: 2 } } },
      },
    };

    expect((await processExecutorMessage(withoutContext(messageFor(omitted, trigger)), deps)).status).toBe(
      'responded',
    );
    expect((await processExecutorMessage(altered, deps)).status).toBe('responded');

    expect(counted.reads).toEqual(['getVersion@1', 'getVersion@1']);
    expect(seen.map((t) => t.context)).toEqual([trigger.context, trigger.context]);
  });

  it('answers a trigger deleted after its event was routed, once; an expired one is gone', async () => {
    const h = new Harness();
    const def = await h.toolDef('echo');
    const deleted = await h.request('echo', {}, 'r-deleted-later');
    const message = messageFor(def, deleted);
    await h.store.delete(h.workspace, deleted.id);
    const expiring = await hintedRequest(h, 'r-expiring');

    expect((await processExecutorMessage(message, h.deps())).status).toBe('responded');
    expect(await processExecutorMessage(message, h.deps())).toEqual({
      status: 'skipped',
      reason: 'already answered',
    });
    h.clock.advance(3_600_001);
    expect(await h.process(def, expiring)).toEqual({ status: 'skipped', reason: 'the trigger is gone' });
    expect((await h.list('tool.response.v1')).map((r) => r.context.request_id)).toEqual(['r-deleted-later']);
  });
});

describe('processExecutorBatch', () => {
  const record = (messageId: string, body: string, receiveCount = 1): SQSRecord =>
    ({
      messageId,
      body,
      receiptHandle: `rh-${messageId}`,
      eventSourceARN: 'arn:aws:sqs:eu-west-1:123456789012:crumbs-tool',
      attributes: { ApproximateReceiveCount: String(receiveCount) },
    }) as unknown as SQSRecord;

  it('reports only the failed messages and brings them back after a back-off in seconds', async () => {
    const h = new Harness();
    const def = await h.toolDef('echo');
    const ok = await h.request('echo', {}, 'r-ok');
    const throttled = await h.request('echo', {}, 'r-429');
    const delays: { receiptHandle: string; seconds: number }[] = [];
    const visibility: MessageVisibility = {
      async delay(messages) {
        for (const m of messages) delays.push({ receiptHandle: m.message.receiptHandle, seconds: m.seconds });
      },
    };
    const tool = fakeKind(async ({ trigger }) => {
      if (trigger.id === throttled.id) throw new RetriableError('429', { retryAfterSeconds: 7 });
      return [{ schema_name: 'test.answer.v1', context: {} }];
    });

    const outcome = await processExecutorBatch(
      [
        record('m1', JSON.stringify(messageFor(def, ok))),
        record('m2', JSON.stringify(messageFor(def, throttled))),
        record('m3', 'not json', 3),
      ],
      {
        ...h.deps({ implementations: { tool } }),
        redelivery: { visibility, maxDelaySeconds: 360, maxReceiveCount: 5 },
      },
    );

    expect(outcome.batchItemFailures.map((f) => f.itemIdentifier).sort()).toEqual(['m2', 'm3']);
    expect(outcome.outcomes[2]).toEqual({
      status: 'failed',
      error: 'not an executor message: the body is not JSON',
    });
    // m2: the Retry-After it carried; m3: its third receive, 4–8 s.
    const byHandle = new Map(delays.map((d) => [d.receiptHandle, d.seconds]));
    expect(byHandle.get('rh-m2')).toBe(7);
    expect(byHandle.get('rh-m3')).toBeGreaterThanOrEqual(4);
    expect(byHandle.get('rh-m3')).toBeLessThanOrEqual(8);
    expect(byHandle.has('rh-m1')).toBe(false);
  });
});
