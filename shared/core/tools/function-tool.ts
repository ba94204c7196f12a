/**
 * The `function` implementation of `tool.def.v1`: the definition's `function.code` — `async function
 * handler(input, ctx) { … }` — runs in the sandbox function agents run in (the Sandbox port: QuickJS in
 * WebAssembly, in a worker thread), within the definition's `function.timeout_ms` and `function.memory_mb`, and
 * what it returns is the tool's output. The tool executor around it (`tool-kind.ts`) holds the input and the
 * output to the definition's `input_schema` and `output_schema` and applies `timeout_ms`; the rule manager routes
 * these definitions to the runner that loads the sandbox (`agent-sandbox`, `shared/domain/runners.ts`).
 *
 * `ctx` is all the code can reach, every call asynchronous and within the time limit:
 *   ctx.callTool({ tool, input })  a pure built-in tool of this runner (echo, calculator)
 *   ctx.request()  { tool, workspace }
 * No store, network or secret: a function tool computes on its input. A failure of the code — an exception, the
 * time or memory limit, code that does not load, an output that is not JSON — is a NonRetriableError naming it
 * (answered as `status: "error"`); its console output goes to the log, never the answer.
 */
import { NonRetriableError } from '#shared/domain/errors.ts';
import type { Sandbox, SandboxBridge } from '#shared/ports/sandbox.ts';
import type { Tool, ToolContext } from '#shared/tools/tool.ts';

export interface FunctionToolDeps {
  readonly sandbox: Sandbox;
  /** The built-in tools `ctx.callTool` may run, by name (pure ones: they reach nothing). */
  readonly tools: (name: string) => Tool | undefined;
}

export function functionTool(deps: FunctionToolDeps): Tool {
  return {
    name: 'function',
    description: "Runs the tool definition's own code (function.code) in the sandbox.",
    inputSchema: {},
    async run(input: unknown, ctx: ToolContext) {
      const fn = ctx.definition?.function;
      if (ctx.definition === undefined || fn === undefined) {
        throw new NonRetriableError('the function tool runs only from a tool definition with function.code');
      }
      const name = ctx.definition.name;
      const result = await deps.sandbox.run(fn.code, input ?? {}, bridge(name, ctx, deps), {
        timeoutMs: fn.timeout_ms,
        memoryMb: fn.memory_mb,
        signal: ctx.signal,
      });
      // Stopped by the executor (its own timeout, the Lambda's): the tool executor says which.
      ctx.signal.throwIfAborted();
      if (!result.ok) {
        if (result.logs.length > 0) ctx.log.info('function tool logs', { tool: name, logs: result.logs });
        // The sandbox names a function agent's fields (`transport.function.*`); a tool's are `function.*`.
        throw new NonRetriableError(
          `${name}: ${result.error.replaceAll('transport.function.', 'function.')}`,
        );
      }
      if (result.logs.length > 0) ctx.log.debug('function tool logs', { tool: name, logs: result.logs });
      return result.value;
    },
  };
}

function bridge(name: string, ctx: ToolContext, deps: FunctionToolDeps): SandboxBridge {
  return {
    callTool: async (arg) => {
      const { tool: called, input } = asObject(arg);
      const tool = typeof called === 'string' ? deps.tools(called) : undefined;
      if (tool === undefined) throw new Error(`no built-in tool named ${String(called)} for a function tool`);
      return tool.run(input ?? {}, { ...ctx, config: {}, context: {} });
    },
    request: async () => ({ tool: name, workspace: ctx.workspace }),
  };
}

function asObject(value: unknown): Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {};
}
