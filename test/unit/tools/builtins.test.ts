import { describe, expect, it, vi } from 'vitest';
import type { Breadcrumb } from '#shared/domain/breadcrumb.ts';
import type { BreadcrumbStore } from '#shared/ports/breadcrumb-store.ts';
import { silentLog } from '#shared/ports/log.ts';
import { breadcrumbCreateTool } from '#shared/tools/breadcrumb-create.ts';
import { breadcrumbSearchTool } from '#shared/tools/breadcrumb-search.ts';
import { calculatorTool } from '#shared/tools/calculator.ts';
import { echoTool } from '#shared/tools/echo.ts';
import { jsonTransformTool } from '#shared/tools/json-transform.ts';
import type { ToolContext } from '#shared/tools/tool.ts';

/** A tool context for unit tests; the store refuses every call unless the test gives one. */
function toolContext(overrides: Partial<ToolContext> = {}): ToolContext {
  return {
    workspace: 'ws-test',
    store: new Proxy({} as BreadcrumbStore, {
      get: (_, name) => () => Promise.reject(new Error(`unexpected store.${String(name)}`)),
    }),
    signal: new AbortController().signal,
    config: {},
    principal: 'tool:test',
    causation: { caused_by: 'req-1@1', thread: 'req-1', hop: 1 },
    log: silentLog,
    context: {},
    ...overrides,
  };
}

function record(overrides: Partial<Breadcrumb> = {}): Breadcrumb {
  return {
    id: 'b1',
    workspace: 'ws-test',
    schema_name: 'note.v1',
    title: '',
    tags: [],
    context: {},
    version: 1,
    checksum: 'x',
    created_at: '2026-01-01T00:00:00.000Z',
    updated_at: '2026-01-01T00:00:00.000Z',
    created_by: 'user:a',
    updated_by: 'user:a',
    ...overrides,
  };
}

describe('calculator tool', () => {
  it('evaluates arithmetic', async () => {
    expect(await calculatorTool.run({ expression: '17*23' }, toolContext())).toEqual({ result: 391 });
    expect(await calculatorTool.run({ expression: '2^10 + sqrt(16) - 10 % 3' }, toolContext())).toEqual({
      result: 1027,
    });
  });

  it('refuses anything but arithmetic, with the reason', async () => {
    await expect(calculatorTool.run({ expression: 'x = 3' }, toolContext())).rejects.toThrow(
      /assignment is not allowed/,
    );
    await expect(calculatorTool.run({ expression: 'import({})' }, toolContext())).rejects.toThrow(
      /unknown function "import"/,
    );
    await expect(calculatorTool.run({ expression: 'process' }, toolContext())).rejects.toThrow(
      /unknown symbol "process"/,
    );
    await expect(calculatorTool.run({ expression: '1/0' }, toolContext())).rejects.toThrow(
      /no finite numeric result/,
    );
    await expect(calculatorTool.run({ expression: '17*' }, toolContext())).rejects.toThrow(/cannot parse/);
  });
});

describe('json.transform tool', () => {
  it('evaluates JSONata over data', async () => {
    const out = await jsonTransformTool.run(
      { expression: '$sum(items.price)', data: { items: [{ price: 2 }, { price: 3 }] } },
      toolContext(),
    );
    expect(out).toEqual({ result: 5 });
  });

  it('stops a runaway expression', async () => {
    await expect(
      jsonTransformTool.run({ expression: '($f := function($n) { $f($n + 1) }; $f(0))' }, toolContext()),
    ).rejects.toThrow(/JSONata expression .* failed/);
  });
});

describe('echo tool', () => {
  it('answers with its input', async () => {
    expect(await echoTool.run({ a: [1] }, toolContext())).toEqual({ a: [1] });
  });
});

describe('breadcrumb.create tool', () => {
  it('writes in its own workspace with causation and an idempotency key', async () => {
    const create = vi.fn(async () => ({
      breadcrumb: record({ id: 'new-1', workspace: 'ws-test' }),
      replayed: false,
    }));
    const store = { create } as unknown as BreadcrumbStore;
    const out = await breadcrumbCreateTool.run(
      { schema_name: 'note.v1', context: { text: 'hi' } },
      toolContext({ store }),
    );
    expect(out).toEqual({ id: 'new-1', version: 1, replayed: false });
    expect(create).toHaveBeenCalledWith(
      'ws-test',
      expect.objectContaining({ schema_name: 'note.v1', context: { text: 'hi' } }),
      expect.objectContaining({
        principal: 'tool:test',
        causation: { caused_by: 'req-1@1', thread: 'req-1', hop: 1 },
        idempotencyKey: expect.any(String),
      }),
    );
  });

  it('refuses a workspace field and definitions', async () => {
    await expect(
      breadcrumbCreateTool.run(
        { schema_name: 'note.v1', context: {}, workspace: 'other' } as never,
        toolContext(),
      ),
    ).rejects.toThrow(/only to its own workspace/);
    await expect(
      breadcrumbCreateTool.run({ schema_name: 'tool.def.v1', context: { name: 'x' } }, toolContext()),
    ).rejects.toThrow(/does not write definitions/);
    // A schedule is written like a definition and writes on its own once the rule manager has placed it.
    await expect(
      breadcrumbCreateTool.run(
        { schema_name: 'schedule.def.v1', context: { schedule_id: 's', rate: '1 minute' } },
        toolContext(),
      ),
    ).rejects.toThrow(/does not write definitions/);
  });
});

describe("breadcrumb.create tool and the agents' allow-list", () => {
  it.each([
    ['a tool request', { schema_name: 'tool.request.v1', context: { tool: 'calculator' } }, /allow_requests/],
    ['an agent request', { schema_name: 'agent.request.v1', context: { agent: 'a' } }, /allow_requests/],
    [
      'a workflow request',
      { schema_name: 'workflow.request.v1', context: { workflow: 'w' } },
      /allow_requests/,
    ],
    [
      'a human response',
      { schema_name: 'human.response.v1', context: { decision: 'approve' } },
      /runs, answers/,
    ],
    ['a run control', { schema_name: 'workflow.control.v1', context: { action: 'cancel' } }, /runs, answers/],
    ['a system record', { schema_name: 'system.message.v1', context: {} }, /system records/],
    ['a routing tag', { schema_name: 'note.v1', tags: ['reply-to:workflow:w'], context: {} }, /routes runs/],
  ])('refuses %s', async (_what, input, message) => {
    const create = vi.fn();
    await expect(
      breadcrumbCreateTool.run(
        input as never,
        toolContext({ store: { create } as unknown as BreadcrumbStore }),
      ),
    ).rejects.toThrow(message);
    expect(create).not.toHaveBeenCalled();
  });
});

describe('breadcrumb.search tool', () => {
  it('lists in the caller workspace only and answers context views, never the stored context', async () => {
    const stored = record({
      id: 'n1',
      context: { a: 1, secret: 's3cr3t' },
      llm_hints: { exclude: ['secret'] },
    });
    const list = vi.fn(async () => ({ items: [stored], next_cursor: null }));
    // The store applies llm_hints (DynamoBreadcrumbStore.contextViews; tested against DynamoDB Local).
    const contextViews = vi.fn(async (_ws: string, records: readonly Breadcrumb[]) =>
      records.map((r) => ({
        id: r.id,
        schema_name: r.schema_name,
        title: r.title,
        tags: r.tags,
        version: r.version,
        updated_at: r.updated_at,
        context: { a: r.context.a },
      })),
    );
    const out = await breadcrumbSearchTool.run(
      { schema_name: 'note.v1', limit: 3 },
      toolContext({ store: { list, contextViews } as unknown as BreadcrumbStore }),
    );
    expect(list).toHaveBeenCalledWith({ workspace: 'ws-test', schema_name: 'note.v1', limit: 3 });
    expect(contextViews).toHaveBeenCalledWith('ws-test', [stored]);
    expect(out.items).toEqual([expect.objectContaining({ id: 'n1', context: { a: 1 } })]);
    expect(JSON.stringify(out)).not.toContain('s3cr3t');
  });
});
