/**
 * Executor for function agents (seed 004's `function` type) and for tools with `implementation: "function"`.
 * Triggered by the agent-sandbox queue (the rules of those definitions: the agent.request.v1 naming an agent, its
 * subscriptions, a tool.request.v1 naming a function tool). Reads the definition, the trigger and its
 * context; runs `function_code` in QuickJS (WebAssembly) in a worker thread, with the memory and time limits of
 * `transport.function`, `ctx.search` / `ctx.create` scoped to the agent's workspace and `ctx.callTool` for the
 * built-in tools; writes agent.response.v1 and the breadcrumbs the function created. A function tool's code runs
 * in the same sandbox (`shared/core/tools/function-tool.ts`) and answers with tool.response.v1. Its own function because
 * the sandbox (a worker script and a .wasm module installed beside the bundle) should not load in other agents.
 */
import { QuickJsSandbox } from '#shared/adapters/sandbox/quickjs-sandbox.ts';
import { parseEnv, TimeoutCeilingEnvSchema } from '#shared/config.ts';
import { createAgentKind } from '#shared/core/agents/agent-kind.ts';
import { createFunctionAgent } from '#shared/core/agents/function-agent.ts';
import { functionTool } from '#shared/core/tools/function-tool.ts';
import { createToolKind } from '#shared/core/tools/tool-kind.ts';
import { parseYaml } from '#shared/domain/yaml.ts';
import { calculatorTool } from '#shared/tools/calculator.ts';
import { toolCatalog } from '#shared/tools/catalog.ts';
import { echoTool } from '#shared/tools/echo.ts';
import type { Tool } from '#shared/tools/tool.ts';
import { ENV } from '#shared/topology.ts';
import { createExecutorHandler } from '../wiring/executor-handler.ts';

const sandbox = new QuickJsSandbox();
// ctx.callTool's built-ins: the pure ones (ctx.search and ctx.create reach the workspace; http would need a
// definition's allow-list; json.transform would add JSONata's 81 KB to this bundle).
const tools = toolCatalog([echoTool, calculatorTool] as Tool[]);

export const handler = createExecutorHandler('agent-sandbox', {
  implementations: ({ store, log, clock }) => ({
    agent: createAgentKind({
      types: {
        function: createFunctionAgent({
          sandbox,
          store,
          tools: (name) => tools.get(name),
          timeoutCeilingMs: parseEnv(TimeoutCeilingEnvSchema)[ENV.timeoutCeilingMs],
        }),
      },
      // No model here (its clients would load in every sandbox cold start): plan mode and model-planned
      // orchestrations of function agents are answered as errors that say so; build and converse run the code.
      store,
      clock,
      parseYaml,
      log,
    }),
    tool: createToolKind({
      store,
      log,
      clock,
      tools: toolCatalog([functionTool({ sandbox, tools: (name) => tools.get(name) })]),
    }),
  }),
  timeoutEarlyInMillis: 5_000,
});
