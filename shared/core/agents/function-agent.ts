/**
 * The `function` agent type (seed 004): runs the definition's `function_code` — `async function handler(input,
 * ctx) { … }` — in the sandbox (QuickJS in WebAssembly; see the Sandbox port) and answers with what it returns.
 * `input` is the request's `input` (or `{ message }` when it has only a message). `ctx` is all the code can reach,
 * every call asynchronous and counted against `transport.function.timeout_ms`:
 *   ctx.search({ schema_name?, tag?, limit? })  context views (llm_hints applied) in the agent's workspace, ≤ 50
 *   ctx.create({ schema_name, title?, tags?, context })  a breadcrumb written with the answer (once per request, at
 *       most 10 per run), only as the allow-list allows (`allow-list.ts`): a refused one throws in the function,
 *       is never written, and is counted on the answer (`refused_writes`, `refusals`)
 *   ctx.callTool({ tool, input })  a built-in tool, run here: one of the definition's `tools` when it lists them,
 *       never `breadcrumb.create` (a write goes through ctx.create, where the allow-list holds)
 *   ctx.request()  { request_id, agent, mode }
 * Console output is returned in the answer's `logs`. Any failure of the code — an exception, the time or memory
 * limit, code that does not load — is an error answer naming it (with the logs so far): its result, not a retry.
 */
import { TOOL_REQUEST_SCHEMA } from '#shared/domain/protocol.ts';
import type { BreadcrumbStore } from '#shared/ports/breadcrumb-store.ts';
import type { Sandbox, SandboxBridge } from '#shared/ports/sandbox.ts';
import type { Tool } from '#shared/tools/tool.ts';
import { grantsOf, type Refusal } from '../executor/allow-list.ts';
import type { OutputBreadcrumb } from '../executor/contract.ts';
import { ownRequestContext } from './context/tool-rounds.ts';
import { type AgentRun, type AgentType, answer, type SpecOf } from './contract.ts';

const MAX_SEARCH = 50;
const MAX_CREATES = 10;
const MAX_REFUSALS_LISTED = 20;

export interface FunctionAgentDeps {
  readonly sandbox: Sandbox;
  readonly store: BreadcrumbStore;
  /** The built-in tools `ctx.callTool` may run, by name. */
  readonly tools: (name: string) => Tool | undefined;
  /**
   * The operator's timeout ceiling (`CRUMBS_TIMEOUT_CEILING_MS`): a definition that asks for more is invalid and
   * has no rule, but one that was active under a higher ceiling runs at most this long until it is reconciled.
   */
  readonly timeoutCeilingMs?: number;
}

export function createFunctionAgent(deps: FunctionAgentDeps): AgentType<'function'> {
  return { type: 'function', run: (run) => runFunction(run, deps) };
}

async function runFunction(run: AgentRun<SpecOf<'function'>>, deps: FunctionAgentDeps) {
  const creates: OutputBreadcrumb[] = [];
  const refused = { count: 0, listed: [] as Refusal[] };
  const input = run.task.input ?? (run.task.message !== undefined ? { message: run.task.message } : {});
  const result = await deps.sandbox.run(run.spec.code, input, bridge(run, deps, creates, refused), {
    timeoutMs: Math.min(run.spec.limits.timeout_ms, deps.timeoutCeilingMs ?? Number.POSITIVE_INFINITY),
    memoryMb: run.spec.limits.memory_mb,
    signal: run.signal,
  });
  // Stopped by the executor (Lambda timeout, workspace slot refused): not an answer, the message is retried.
  run.signal.throwIfAborted();
  const counted = refused.count > 0 ? { refused_writes: refused.count, refusals: refused.listed } : {};
  if (!result.ok) return answer({ status: 'error', error: result.error, logs: result.logs, ...counted });
  return answer(
    {
      status: 'success',
      output: result.value,
      ...(typeof result.value === 'string' ? { text: result.value } : {}),
      logs: result.logs,
      ...counted,
    },
    creates,
  );
}

function bridge(
  run: AgentRun<SpecOf<'function'>>,
  deps: FunctionAgentDeps,
  creates: OutputBreadcrumb[],
  refused: { count: number; listed: Refusal[] },
): SandboxBridge {
  const ws = run.workspace;
  const grants = grantsOf(run.definition, run.spec.orchestration, ws, deps.store);
  return {
    search: async (arg) => {
      const q = asObject(arg);
      const page = await deps.store.list({
        workspace: ws,
        ...(typeof q.schema_name === 'string' ? { schema_name: q.schema_name } : {}),
        ...(typeof q.tag === 'string' ? { tag: q.tag } : {}),
        limit: Math.min(MAX_SEARCH, typeof q.limit === 'number' && q.limit > 0 ? Math.floor(q.limit) : 10),
      });
      // Context views, as every path that hands breadcrumbs to code a definition brings: what llm_hints exclude
      // never reaches the function (nor its answer, which is embedded and searchable).
      const views = await deps.store.contextViews(ws, page.items);
      return views.map((b) => ({
        id: b.id,
        schema_name: b.schema_name,
        title: b.title,
        tags: b.tags,
        context: b.context,
        updated_at: b.updated_at,
      }));
    },
    create: async (arg) => {
      const b = asObject(arg);
      const schema = typeof b.schema_name === 'string' ? b.schema_name : '';
      const tags = Array.isArray(b.tags) ? b.tags.filter((t): t is string => typeof t === 'string') : [];
      const context = asObject(b.context);
      const reason = await grants.refusal({ schema_name: schema, tags, context });
      if (reason !== undefined) {
        // Counted always, listed up to a bound: a function may try in a loop until its time runs out.
        refused.count++;
        if (refused.listed.length < MAX_REFUSALS_LISTED) {
          refused.listed.push({ at: 'ctx.create', schema_name: schema.slice(0, 200), reason });
        }
        run.log.warn('agent refused a write: it may not write this', {
          agentId: run.definition.agent_id,
          at: 'ctx.create',
          schemaName: schema,
          reason,
        });
        throw new Error(`ctx.create: this may not be written by the agent: ${reason}`);
      }
      if (creates.length >= MAX_CREATES) throw new Error(`at most ${MAX_CREATES} breadcrumbs per run`);
      creates.push({
        schema_name: schema,
        title: typeof b.title === 'string' ? b.title : `${run.definition.agent_id} output`,
        tags: [...tags, `agent:${run.definition.agent_id}`],
        // A tool request is the agent's own: its answer comes back to this agent, whoever the context named.
        context:
          schema === TOOL_REQUEST_SCHEMA ? ownRequestContext(run.definition.agent_id, context) : context,
      });
      return { queued: creates.length };
    },
    callTool: async (arg) => {
      const { tool: name, input } = asObject(arg);
      if (name === 'breadcrumb.create') {
        throw new Error('ctx.callTool does not run breadcrumb.create: write with ctx.create');
      }
      const given = run.definition.tools;
      if (typeof name === 'string' && given !== undefined && !given.includes(name)) {
        throw new Error(
          `the tool "${name}" is not available to this agent (its tools: ${given.length > 0 ? given.join(', ') : 'none'}); the call was not made`,
        );
      }
      const tool = typeof name === 'string' ? deps.tools(name) : undefined;
      if (tool === undefined) throw new Error(`no built-in tool named ${String(name)}`);
      return tool.run(input ?? {}, {
        workspace: ws,
        store: deps.store,
        signal: run.signal,
        config: {},
        principal: run.principal,
        causation: run.execution.causation,
        log: run.log,
        context: {},
      });
    },
    request: async () => ({
      request_id: run.task.requestId,
      agent: run.definition.agent_id,
      mode: run.task.mode ?? null,
    }),
  };
}

function asObject(value: unknown): Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {};
}
