/**
 * `withDeltas` merges a task's model output (the preview) into its state stream. The preview's last chunks may
 * still be on their way when a read finds the task ended: they come before the answer and the final status, within
 * PREVIEW_DRAIN_MS, and a preview that never ends holds the stream's end no longer than that.
 */
import type { StreamResponse, Task } from '@a2a-js/sdk';
import { describe, expect, it } from 'vitest';
import { type Delta, PREVIEW_DRAIN_MS, taskStates, withDeltas } from '#shared/core/a2a/stream.ts';
import { STATE } from '#shared/core/a2a/task.ts';

function task(state: number, artifacts: Task['artifacts'] = []): Task {
  return {
    id: 't1',
    contextId: 'c1',
    status: { state, message: undefined, timestamp: undefined },
    artifacts,
    history: [],
    metadata: undefined,
  } as Task;
}

const answerArtifact = {
  artifactId: 'answer',
  name: 'answer',
  description: '',
  parts: [],
  metadata: undefined,
  extensions: [],
} as unknown as Task['artifacts'][number];

/** A preview that yields each chunk after its delay, then ends (or never ends). */
function preview(chunks: { text: string; afterMs: number }[], ends = true): () => AsyncIterable<Delta> {
  return () =>
    (async function* () {
      for (const chunk of chunks) {
        await new Promise((r) => setTimeout(r, chunk.afterMs));
        yield { text: chunk.text };
      }
      if (!ends) await new Promise(() => undefined);
    })();
}

function describeEvent(event: StreamResponse): string {
  const payload = event.payload as { $case: string; value: Record<string, unknown> } | undefined;
  if (payload?.$case === 'artifactUpdate') {
    const artifact = payload.value.artifact as { name: string; parts: { content: { value: string } }[] };
    return artifact.name === 'answer (streaming)'
      ? `chunk:${artifact.parts.map((p) => p.content.value).join('')}`
      : `artifact:${artifact.name}`;
  }
  if (payload?.$case === 'statusUpdate') return `status:${(payload.value.status as { state: number }).state}`;
  return String(payload?.$case);
}

async function collect(deltas: () => AsyncIterable<Delta>): Promise<string[]> {
  const first = task(STATE.working);
  // The first read already finds the task completed, before the preview's second chunk has arrived.
  const states = taskStates(first, async () => task(STATE.completed, [answerArtifact]), {
    pollMs: 5,
    deadline: Date.now() + 10_000,
  });
  const events: string[] = [];
  for await (const event of withDeltas(first, states, deltas)) events.push(describeEvent(event));
  return events;
}

describe('withDeltas', () => {
  it("lets the preview's last chunks through before the answer and the final status", async () => {
    const events = await collect(
      preview([
        { text: 'Hel', afterMs: 0 },
        { text: 'lo', afterMs: 100 },
      ]),
    );
    expect(events).toEqual(['task', 'chunk:Hel', 'chunk:lo', 'artifact:answer', `status:${STATE.completed}`]);
  });

  it('ends the stream within PREVIEW_DRAIN_MS of the end when the preview never ends', async () => {
    const started = Date.now();
    const events = await collect(preview([{ text: 'Hel', afterMs: 0 }], false));
    expect(events).toEqual(['task', 'chunk:Hel', 'artifact:answer', `status:${STATE.completed}`]);
    expect(Date.now() - started).toBeLessThan(PREVIEW_DRAIN_MS + 3_000);
  });
});
