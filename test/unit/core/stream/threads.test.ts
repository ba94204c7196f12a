import { describe, expect, it } from 'vitest';
import { loadThread } from '#shared/core/stream/threads.ts';
import type { Breadcrumb } from '#shared/domain/breadcrumb.ts';
import type { ActivityEntry, ThreadIndex } from '#shared/ports/activity.ts';

function record(id: string, version: number, at: string, by: string, causedBy?: string, hop = 1): Breadcrumb {
  return {
    id,
    workspace: 'w',
    schema_name: `${id}.v1`,
    title: id,
    tags: [],
    context: {},
    version,
    checksum: 'c',
    created_at: at,
    updated_at: at,
    created_by: by,
    updated_by: by,
    ...(causedBy ? { causation: { caused_by: causedBy, thread: 'root', hop } } : {}),
  };
}

function entry(r: Breadcrumb): ActivityEntry {
  const { context: _c, checksum: _s, llm_hints: _h, expires_at: _e, ...rest } = r;
  return { ...rest, kind: 'breadcrumb' };
}

describe('loadThread', () => {
  it('orders causes before effects and times each hop from the version that caused it, even after that head moved on', async () => {
    const root = record('root', 1, '2026-01-01T00:00:00.000Z', 'user:a');
    // `run` was v1 when it asked `step`; its head is v3 now, written after `step` answered.
    const runV1 = record('run', 1, '2026-01-01T00:00:01.000Z', 'workflow:flow', 'root@1');
    const step = record('step', 1, '2026-01-01T00:00:01.500Z', 'tool:echo', 'run@1', 2);
    const runV3 = record('run', 3, '2026-01-01T00:00:03.000Z', 'workflow:flow', 'step@1', 3);
    const index: ThreadIndex = {
      threadHeads: async () => ({ entries: [runV3, step].map(entry), truncated: false }),
      head: async (_w, id) => (id === 'root' ? root : undefined),
      versions: async (_w, refs) =>
        refs.flatMap((r) => [runV1, step, root].filter((b) => b.id === r.id && b.version === r.version)),
    };
    const view = await loadThread(index, 'w', 'root');
    expect(view.nodes.map((n) => [n.id, n.depth, n.parent])).toEqual([
      ['root', 0, null],
      ['run', 1, 'root'],
      ['step', 2, 'run'],
    ]);
    const stepNode = view.nodes.find((n) => n.id === 'step')!;
    expect(stepNode.hop_ms).toBe(500); // from run@1, not from the later head
    expect(stepNode.definition).toEqual({ kind: 'tool', name: 'echo' });
  });
});
