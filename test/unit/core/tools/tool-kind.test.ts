import { describe, expect, it } from 'vitest';
import type { ExecutionInput } from '#shared/core/executor/contract.ts';
import { createToolKind } from '#shared/core/tools/tool-kind.ts';
import { parseDefinition, type ToolDefinition } from '#shared/domain/definitions.ts';
import { RetriableError } from '#shared/domain/errors.ts';
import { systemClock } from '#shared/ports/breadcrumb-store.ts';
import type { ExecutorStore } from '#shared/ports/executor-store.ts';
import { silentLog } from '#shared/ports/log.ts';
import { builtinTools } from '#shared/tools/builtins.ts';
import { toolCatalog } from '#shared/tools/catalog.ts';
import type { Tool } from '#shared/tools/tool.ts';

const testTools: Tool[] = [
  {
    name: 'test.slow',
    description: 'never answers',
    inputSchema: {},
    run: () => new Promise(() => undefined),
  },
  {
    name: 'test.double',
    description: 'doubles n',
    inputSchema: { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] },
    run: async (input) => ({ doubled: (input as { n: number }).n * 2 }),
  },
  {
    name: 'test.throttled',
    description: 'always throttled',
    inputSchema: {},
    run: async () => {
      throw new RetriableError('throttled');
    },
  },
];

let version = 0;
function execution(
  def: Record<string, unknown>,
  input: unknown,
  signal = new AbortController().signal,
): ExecutionInput<ToolDefinition> {
  const parsed = parseDefinition('tool.def.v1', def);
  if (parsed.kind !== 'tool') throw new Error('not a tool');
  version++;
  return {
    definition: parsed.definition,
    definitionRef: { id: 'def-1', version, workspace: 'ws', kind: 'tool', schema_name: 'tool.def.v1' },
    principal: `tool:${parsed.definition.name}`,
    trigger: {
      id: 'req-1',
      schema_name: 'tool.request.v1',
      title: '',
      tags: [],
      version: 1,
      updated_at: '2026-01-01T00:00:00.000Z',
      context: { tool: parsed.definition.name, input, requestId: 'r-9', requestedBy: 'agent:a' },
      workspace: 'ws',
      created_by: 'agent:a',
    },
    context: {},
    causation: { caused_by: 'req-1@1', thread: 'req-1', hop: 1 },
    signal,
  };
}

const executor = createToolKind({
  store: {} as ExecutorStore,
  log: silentLog,
  clock: systemClock,
  tools: toolCatalog([...builtinTools, ...testTools]),
});

describe('tool executor', () => {
  it('runs the implementation and answers tool.response.v1 tagged with the request', async () => {
    const { outputs } = await executor.execute(
      execution({ name: 'doubler', implementation: 'test.double' }, { n: 4 }),
    );
    expect(outputs).toEqual([
      {
        schema_name: 'tool.response.v1',
        title: 'doubler: success',
        tags: ['request:r-9', 'tool:response', 'tool:doubler'],
        context: expect.objectContaining({
          request_id: 'r-9',
          tool: 'doubler',
          status: 'success',
          output: { doubled: 8 },
          requestedBy: 'agent:a',
        }),
      },
    ]);
  });

  it('answers status error naming the field when the input fails input_schema or the built-in schema', async () => {
    const bad = await executor.execute(
      execution(
        {
          name: 'doubler',
          implementation: 'test.double',
          input_schema: { type: 'object', properties: { n: { type: 'integer' } } },
        },
        { n: 1.5 },
      ),
    );
    expect(bad.outputs[0]?.context).toMatchObject({
      status: 'error',
      error: 'invalid input: input.n: must be integer',
    });
    const missing = await executor.execute(execution({ name: 'doubler', implementation: 'test.double' }, {}));
    expect(missing.outputs[0]?.context.error).toMatch(/input: must have required property 'n'/);
  });

  it('answers status error when the output fails output_schema', async () => {
    const { outputs } = await executor.execute(
      execution(
        {
          name: 'doubler',
          implementation: 'test.double',
          output_schema: { type: 'object', required: ['tripled'] },
        },
        { n: 1 },
      ),
    );
    expect(outputs[0]?.context).toMatchObject({
      status: 'error',
      error: "invalid output: output: must have required property 'tripled'",
    });
  });

  it('answers status error on timeout and for an unknown implementation', async () => {
    const slow = await executor.execute(
      execution({ name: 'slow', implementation: 'test.slow', timeout_ms: 20 }, {}),
    );
    expect(slow.outputs[0]?.context).toMatchObject({
      status: 'error',
      error: 'test.slow timed out after 20 ms',
    });
    const unknown = await executor.execute(execution({ name: 'nope' }, {}));
    expect(unknown.outputs[0]?.context.error).toMatch(/no built-in tool named "nope"/);
  });

  it('lets retriable failures and the executor running out of time go back to SQS', async () => {
    await expect(
      executor.execute(execution({ name: 't', implementation: 'test.throttled' }, {})),
    ).rejects.toBeInstanceOf(RetriableError);
    const controller = new AbortController();
    const pending = executor.execute(
      execution({ name: 'slow', implementation: 'test.slow' }, {}, controller.signal),
    );
    controller.abort();
    await expect(pending).rejects.toBeInstanceOf(RetriableError);
  });

  it('builds the error response for the DLQ from the request', () => {
    const input = execution({ name: 'doubler', implementation: 'test.double' }, {});
    const output = executor.errorOutput({
      definition: input.definition,
      trigger: input.trigger,
      error: 'gave up',
    });
    expect(output).toMatchObject({
      schema_name: 'tool.response.v1',
      tags: ['request:r-9', 'tool:response', 'tool:doubler'],
      context: { request_id: 'r-9', status: 'error', error: 'gave up', requestedBy: 'agent:a' },
    });
  });
});
