/**
 * The `tool` agent type (seed 004, flow 2): calls MCP tools and answers with their result.
 *
 * Which tool, with which arguments: `input: { tool?, arguments }` (one of the definition's `tools`, default the
 * first); `input: { calls: [{ tool, arguments }, …] }`, one after the other or all at once (`tool_mode: sequential
 * | parallel`), the output being the list of results; or only a `message` with `extract_arguments: true`, when the
 * model picks the tool and its arguments, offered the MCP tools' own input schemas (one model call, no tool loop).
 * Where: the server of `transport.mcp` (headers and authentication from secret references), or — for a definition
 * without a transport, as seed 004's example is written — the `tool.def.v1` with `implementation: "mcp"` that has
 * the tool's name (`resolveTool`).
 *
 * The answer: MCP's `CallToolResult` → `output` = `structuredContent`, else the JSON of a single text block, else
 * `{ content }`; `text` = the text blocks joined. `isError: true` → an error answer carrying the tool's message.
 */
import { agentModel } from '#shared/domain/agent-spec.ts';
import { NonRetriableError } from '#shared/domain/errors.ts';
import { DEFAULT_MODEL_ID } from '#shared/domain/llm-model.ts';
import type { LlmClient } from '#shared/ports/llm.ts';
import type { McpCallResult, McpClient, McpServer } from '#shared/ports/mcp.ts';
import type { SecretSource } from '#shared/ports/secrets.ts';
import { resolveHeaders } from '#shared/tools/credentials.ts';
import { type AgentAnswer, type AgentRun, type AgentType, answer, type SpecOf } from './contract.ts';

/** An MCP tool declared as a `tool.def.v1` (`implementation: "mcp"`): its server and its name there. */
export interface McpToolRef {
  readonly server: McpServer;
  readonly tool: string;
}

export interface ToolAgentDeps {
  readonly mcp: McpClient;
  readonly secrets: SecretSource;
  /** Finds a workspace tool definition served by MCP (for tool agents without a transport). */
  readonly resolveTool?: (workspace: string, name: string) => Promise<McpToolRef | undefined>;
  /** For `extract_arguments`. */
  readonly llm?: LlmClient;
}

interface ToolCall {
  readonly tool: string;
  readonly arguments: Record<string, unknown>;
}

const MAX_CALLS = 20;

export function createToolAgent(deps: ToolAgentDeps): AgentType<'tool'> {
  return { type: 'tool', run: (run) => runTool(run, deps) };
}

async function runTool(run: AgentRun<SpecOf<'tool'>>, deps: ToolAgentDeps) {
  const input = asObject(run.task.input);
  if (Array.isArray(input.calls)) {
    const calls = input.calls
      .slice(0, MAX_CALLS)
      .map((c, i) => toCall(asObject(c), run, `input.calls[${i}]`));
    const results =
      run.spec.config.tool_mode === 'parallel'
        ? await Promise.all(calls.map((c) => callOne(c, run, deps)))
        : await sequential(calls, (c) => callOne(c, run, deps));
    const failed = results.find((r) => r.status === 'error');
    const output = results.map((r) => ('output' in r ? r.output : null));
    return answer(
      failed?.status === 'error'
        ? { status: 'error', error: failed.error, output }
        : { status: 'success', output },
    );
  }
  const call =
    run.task.input === undefined && run.task.message !== undefined
      ? await extractCall(run, deps)
      : toCall(input, run, 'input');
  return answer(await callOne(call, run, deps));
}

function toCall(input: Record<string, unknown>, run: AgentRun<SpecOf<'tool'>>, path: string): ToolCall {
  const tool = typeof input.tool === 'string' ? input.tool : run.spec.tools[0];
  if (tool === undefined || !run.spec.tools.includes(tool)) {
    throw new NonRetriableError(
      `${path}.tool "${String(input.tool)}" is not one of this agent's tools (${run.spec.tools.join(', ')})`,
    );
  }
  const args = input.arguments ?? Object.fromEntries(Object.entries(input).filter(([k]) => k !== 'tool'));
  if (args === null || typeof args !== 'object' || Array.isArray(args)) {
    throw new NonRetriableError(`${path}.arguments must be an object`);
  }
  return { tool, arguments: args as Record<string, unknown> };
}

async function callOne(
  call: ToolCall,
  run: AgentRun<SpecOf<'tool'>>,
  deps: ToolAgentDeps,
): Promise<AgentAnswer> {
  const { server, tool } = await serverFor(call.tool, run, deps);
  return fromResult(await deps.mcp.callTool(server, { name: tool, arguments: call.arguments }, run.signal));
}

async function serverFor(
  name: string,
  run: AgentRun<SpecOf<'tool'>>,
  deps: ToolAgentDeps,
): Promise<McpToolRef> {
  const mcp = run.spec.mcp;
  if (mcp !== undefined) {
    const headers = await resolveHeaders(
      'transport.mcp',
      run.workspace,
      mcp.headers,
      mcp.authentication,
      deps.secrets,
    );
    return { server: { url: mcp.url, headers, timeoutMs: mcp.timeout_ms }, tool: name };
  }
  const ref = await deps.resolveTool?.(run.workspace, name);
  if (ref === undefined) {
    throw new NonRetriableError(
      `the tool agent has no transport.mcp and the workspace has no tool.def.v1 "${name}" with implementation "mcp": ` +
        'give the agent transport: { kind: "mcp", mcp: { url } }, or import the server with crumbs mcp import',
    );
  }
  return ref;
}

/** One model call: the model picks a tool (offered with the MCP tools' input schemas) and fills its arguments. */
async function extractCall(run: AgentRun<SpecOf<'tool'>>, deps: ToolAgentDeps): Promise<ToolCall> {
  if (!run.spec.extractArguments) {
    throw new NonRetriableError(
      'this tool agent takes input: { tool, arguments }; set extract_arguments: true in its yaml to let the model read a message',
    );
  }
  if (!deps.llm) throw new NonRetriableError('no model client is configured for extract_arguments');
  const refs = await Promise.all(run.spec.tools.map((t) => serverFor(t, run, deps)));
  const byServer = new Map<string, McpServer>();
  for (const r of refs) byServer.set(r.server.url, r.server);
  const listed = (
    await Promise.all([...byServer.values()].map((s) => deps.mcp.listTools(s, run.signal)))
  ).flat();
  const tools = run.spec.tools.map((name, i) => {
    const info = listed.find((t) => t.name === refs[i]?.tool);
    return {
      name,
      description: info?.description ?? `the ${name} tool`,
      inputSchema: { type: 'object', ...(info?.inputSchema ?? {}) },
    };
  });
  const response = await deps.llm.generate({
    // The model the rule manager reports in the definition's status (`agentModel`).
    model: agentModel(run.spec) ?? DEFAULT_MODEL_ID,
    system:
      run.definition.system_prompt ??
      'Choose the one tool that serves the request and fill in its arguments from the message. Call exactly one tool.',
    messages: [{ role: 'user', content: run.task.message ?? '' }],
    tools,
    ...(run.spec.llm.temperature !== undefined ? { temperature: run.spec.llm.temperature } : {}),
    ...(run.spec.llm.maxTokens !== undefined ? { maxOutputTokens: run.spec.llm.maxTokens } : {}),
    signal: run.signal,
  });
  const chosen = response.toolCalls[0];
  if (chosen === undefined || !run.spec.tools.includes(chosen.name)) {
    throw new NonRetriableError(
      `the model chose no tool for the message (it said: ${response.text.slice(0, 200)})`,
    );
  }
  return { tool: chosen.name, arguments: asObject(chosen.input) };
}

/** CallToolResult → the answer (see the header). */
export function fromResult(result: McpCallResult): AgentAnswer {
  const texts = result.content
    .filter((c) => c.type === 'text' && typeof c.text === 'string')
    .map((c) => c.text as string);
  const text = texts.join('\n');
  if (result.isError) {
    return {
      status: 'error',
      error: text || 'the tool reported an error',
      output: { content: result.content },
    };
  }
  let output: unknown = result.structuredContent;
  if (output === undefined && texts.length === 1 && result.content.length === 1) {
    try {
      output = JSON.parse(texts[0] ?? '');
    } catch {
      output = texts[0];
    }
  }
  return { status: 'success', output: output ?? { content: result.content }, ...(text ? { text } : {}) };
}

async function sequential<T, R>(items: readonly T[], fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = [];
  for (const item of items) out.push(await fn(item));
  return out;
}

function asObject(value: unknown): Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {};
}
