/**
 * End-to-end checks of a running crumbs stack through its public HTTP API only, so the same checks run against
 * `crumbs dev` and a deployed stage (`crumbs smoke`, `cli/commands/smoke.ts`). Each check writes what it needs
 * (definitions, requests) into the smoke's own workspace, waits for the stack to answer, and says in one line what
 * it expected, what came and how long it waited. `SMOKE_CHECKS` is the list: a new end-to-end check is one entry.
 *
 * Bounds: every check (and the cleanup) has `timeoutMs` in all for its waits and looks no more once it is spent;
 * a request in flight then may take the client's timeout (`crumbs smoke` sets it to at most `timeoutMs`), so a run
 * takes at most about 2 × (checks + 1) × timeoutMs.
 *
 * The cleanup runs whatever happened (a `finally`), but only once the `api` check has shown the workspace is the
 * smoke's own (fresh, or named and empty): it cancels a run left waiting, deletes the definitions first (so nothing
 * more is triggered), then every breadcrumb the workspace's change stream shows was written after the smoke began
 * (the API lists only by schema or tag; the change stream sees every write, executors' included), until the
 * stream has shown nothing new for longer than it holds changes back.
 */
import { randomBytes } from 'node:crypto';
import { SdkMcpClient } from '#shared/adapters/mcp/mcp-client.ts';
import {
  ApiProblemError,
  type Breadcrumb,
  type ChangeEvent,
  type CreateBreadcrumbInput,
  type CrumbsClient,
  type FetchLike,
  type RunView,
} from '#shared/client/crumbs-client.ts';
import {
  AGENT_DEF_SCHEMA,
  AGENT_ERROR_SCHEMA,
  AGENT_REQUEST_SCHEMA,
  AGENT_RESPONSE_SCHEMA,
  requestTag,
  TOOL_DEF_SCHEMA,
  TOOL_REQUEST_SCHEMA,
  TOOL_RESPONSE_SCHEMA,
  WORKFLOW_DEF_SCHEMA,
} from '#shared/domain/protocol.ts';
import { statusOf } from './commands/apply.ts';

export type CheckStatus = 'passed' | 'failed' | 'skipped';

export interface CheckResult {
  readonly name: string;
  readonly status: CheckStatus;
  readonly duration_ms: number;
  /** What it saw (passed), why it did not run (skipped), or expected / got / waited (failed). */
  readonly detail: string;
}

export interface SmokeReport {
  readonly ok: boolean;
  readonly endpoint: string;
  readonly workspace: string;
  readonly checks: readonly CheckResult[];
  readonly cleanup: CheckResult;
}

export interface SmokeOptions {
  /** A client for the smoke's workspace. */
  readonly client: CrumbsClient;
  readonly token: string | undefined;
  /** How long each check (and the cleanup) may wait in all. */
  readonly timeoutMs: number;
  /** The smoke agent's `model`; without it the stack's default provider's default model answers. */
  readonly model?: string | undefined;
  /** The workspace was named by the user (flag or env), not made up fresh: it must be empty to be used. */
  readonly namedWorkspace: boolean;
  /** Called as each check ends (the CLI prints its line then, not at the end). */
  readonly onResult?: (result: CheckResult) => void;
  readonly fetch?: FetchLike;
}

/** A check that could not pass: what it expected, what came instead. The waited time is added by the runner. */
export class CheckFailure extends Error {
  constructor(
    readonly expected: string,
    readonly got: string,
  ) {
    super(`expected ${expected}; got ${got}`);
    this.name = 'CheckFailure';
  }
}

/** A check that does not apply to this endpoint (it says why); not a failure. */
export class CheckSkipped extends Error {
  override name = 'CheckSkipped';
}

export interface SmokeCheck {
  readonly name: string;
  /** Resolves to the line shown when it passed; throws CheckFailure or CheckSkipped otherwise. */
  run(ctx: SmokeContext): Promise<string>;
}

const POLL_MS = 300;
/**
 * How long the change stream must show nothing new of the smoke's before the cleanup ends: longer than the stream
 * holds changes back (CRUMBS_CHANGES_SETTLE_MS, 1.5 s on AWS), so a late answer is seen and deleted.
 */
const QUIET_MS = 3000;
/** The newest changes the `api` check reads to see whether a workspace is empty (the API's `backlog` maximum). */
const MAX_BACKLOG = 100;

export const SMOKE_TOOL = 'smoke-echo';
export const SMOKE_AGENT = 'smoke-agent';
export const SMOKE_WORKFLOW = 'smoke-approval';
/** Where the API serves MCP for a workspace (the route always exists: a 404 there is a failure). */
export const MCP_PATH = (workspace: string) => `/v1/workspaces/${encodeURIComponent(workspace)}/mcp`;

export class SmokeContext {
  readonly client: CrumbsClient;
  readonly options: SmokeOptions;
  /** Unique to this run: echoed through tools and the workflow, so an answer is known to be this run's. */
  readonly nonce = `smoke-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;
  /** Ids of definitions written, deleted first by the cleanup. */
  readonly definitions = new Set<string>();
  /** Runs started; a run not ended is cancelled before the cleanup. */
  readonly runs = new Set<string>();
  /** Set by the `api` check: the workspace is the smoke's own, so the cleanup may empty it. */
  ownsWorkspace = false;
  /** Where the change stream stood when the smoke began: what changed after it is the smoke's to delete. */
  startCursor: string | undefined;
  #deadline = 0;

  constructor(options: SmokeOptions) {
    this.client = options.client;
    this.options = options;
  }

  startClock(): void {
    this.#deadline = Date.now() + this.options.timeoutMs;
  }

  get remainingMs(): number {
    return Math.max(0, this.#deadline - Date.now());
  }

  /** Polls `probe` until it gives a value; at the check's deadline fails naming `expected` and the last thing seen. */
  async waitFor<T>(expected: string, probe: () => Promise<{ value: T } | { seen: string }>): Promise<T> {
    for (;;) {
      const result = await probe();
      if ('value' in result) return result.value;
      if (this.remainingMs <= POLL_MS) throw new CheckFailure(expected, result.seen);
      await sleep(POLL_MS);
    }
  }

  /**
   * Writes a definition and waits until the rule manager calls this version active. Its id is this run's
   * (`<name>-<nonce>`): a deleted breadcrumb's id stays taken, so a named workspace's next run needs new ones.
   */
  async define(name: string, body: CreateBreadcrumbInput): Promise<{ llm: string | undefined }> {
    const id = `${name}-${this.nonce}`;
    this.definitions.add(id);
    const written = await this.client.put(id, body);
    const status = await statusOf(this.client, written, Math.max(1, Math.floor(this.remainingMs / 1000)));
    if (status.state !== 'active') {
      throw new CheckFailure(
        `definition ${name} (${id}) v${written.version} active`,
        `${status.state}${status.errors.length > 0 ? ` (${status.errors.join('; ')})` : ''}`,
      );
    }
    return { llm: status.llm ? `${status.llm.provider}/${status.llm.model}` : undefined };
  }

  /** The newest breadcrumb of `schema` tagged `tag`, as stored. */
  async findTagged(schema: string, tag: string): Promise<Breadcrumb | undefined> {
    const page = await this.client.listFirst({ schema_name: schema, tag, view: 'full' }, 1);
    return page.items[0];
  }
}

const apiCheck: SmokeCheck = {
  name: 'api',
  async run(ctx) {
    const { client } = ctx;
    const health = await client.health();
    if (health.status !== 'ok') throw new CheckFailure('GET /health to say "ok"', JSON.stringify(health));
    let backlog: Awaited<ReturnType<CrumbsClient['changes']>>;
    try {
      backlog = await client.changes({ backlog: MAX_BACKLOG, wait: 0 });
    } catch (error) {
      if (error instanceof ApiProblemError && (error.status === 401 || error.status === 403)) {
        throw new CheckFailure(
          `the token to be allowed workspace ${client.workspace}`,
          `${error.status} ${error.title}${error.detail ? `: ${error.detail}` : ''} — use a token whose workspaces ` +
            'claim holds "*", or name an empty workspace it may use with --workspace',
        );
      }
      throw error;
    }
    // Empty: no definitions, and nothing the newest changes wrote still readable.
    const held = (await client.definitions()).items.map((d) => d.id);
    for (const [id, type] of lastChangeOf(backlog.events)) {
      if (held.length >= 3) break;
      if (type !== 'deleted' && (await exists(client, id))) held.push(id);
    }
    if (held.length > 0) {
      const why = ctx.options.namedWorkspace
        ? 'the smoke deletes what it writes there, so it uses only an empty workspace'
        : 'a fresh workspace name is already in use';
      throw new CheckFailure(
        `workspace ${client.workspace} to be empty`,
        `it holds ${held.slice(0, 3).join(', ')} (${why}); nothing was written or deleted`,
      );
    }
    // Everything changed from here on is the smoke's: the cleanup deletes what the change stream shows after it.
    ctx.startCursor = backlog.lastEventId;
    ctx.ownsWorkspace = true;
    return `health ok; workspace ${client.workspace} is empty and the token may use it`;
  },
};

const toolCheck: SmokeCheck = {
  name: 'tool round trip',
  async run(ctx) {
    await ctx.define(`tool-${SMOKE_TOOL}`, {
      schema_name: TOOL_DEF_SCHEMA,
      title: 'crumbs smoke: echo',
      context: { name: SMOKE_TOOL, description: 'Echoes its input (crumbs smoke).', implementation: 'echo' },
    });
    const request = await ctx.client.create({
      schema_name: TOOL_REQUEST_SCHEMA,
      title: 'crumbs smoke: tool request',
      context: { tool: SMOKE_TOOL, input: { nonce: ctx.nonce }, requestedBy: 'user:crumbs-smoke' },
    });
    const expected = `a tool.response.v1 tagged ${requestTag(request.id)} echoing the nonce`;
    const answer = await ctx.waitFor<Breadcrumb>(expected, async () => {
      const found = await ctx.findTagged(TOOL_RESPONSE_SCHEMA, requestTag(request.id));
      return found ? { value: found } : { seen: 'no answer' };
    });
    const c = answer.context as Record<string, unknown>;
    const output = c.output as Record<string, unknown> | null | undefined;
    if (c.status !== 'success' || output?.nonce !== ctx.nonce) {
      throw new CheckFailure(expected, `status ${String(c.status)}: ${JSON.stringify(c.error ?? c.output)}`);
    }
    return `${SMOKE_TOOL} answered ${request.id} with the nonce`;
  },
};

const agentCheck: SmokeCheck = {
  name: 'agent answer',
  async run(ctx) {
    const { llm } = await ctx.define(`agent-${SMOKE_AGENT}`, {
      schema_name: AGENT_DEF_SCHEMA,
      title: 'crumbs smoke: agent',
      context: {
        agent_id: SMOKE_AGENT,
        system_prompt: 'You are the crumbs smoke test. Answer in one short sentence.',
        ...(ctx.options.model !== undefined ? { model: ctx.options.model } : {}),
      },
    });
    const request = await ctx.client.create({
      schema_name: AGENT_REQUEST_SCHEMA,
      title: 'crumbs smoke: agent request',
      tags: ['agent:request', `agent:${SMOKE_AGENT}`],
      context: { agent: SMOKE_AGENT, message: 'Say hello to the crumbs smoke test.' },
    });
    const tag = requestTag(request.id);
    const expected = `an agent.response.v1 tagged ${tag} with a non-empty answer`;
    const answer = await ctx.waitFor<Breadcrumb>(expected, async () => {
      const found =
        (await ctx.findTagged(AGENT_RESPONSE_SCHEMA, tag)) ?? (await ctx.findTagged(AGENT_ERROR_SCHEMA, tag));
      return found ? { value: found } : { seen: 'no answer' };
    });
    const c = answer.context as Record<string, unknown>;
    const text = typeof c.message === 'string' ? c.message : typeof c.text === 'string' ? c.text : '';
    if (c.status === 'error' || text.trim() === '') {
      throw new CheckFailure(
        expected,
        `${answer.schema_name} ${c.status === 'error' ? `error: ${String(c.error)}` : 'with no text'}` +
          `${llm ? ` (model ${llm})` : ''}`,
      );
    }
    return `${SMOKE_AGENT}${llm ? ` (${llm})` : ''} answered: ${oneLine(text, 60)}`;
  },
};

const workflowCheck: SmokeCheck = {
  name: 'workflow with approval',
  async run(ctx) {
    const note = `approved ${ctx.nonce}`;
    await ctx.define(`workflow-${SMOKE_WORKFLOW}`, {
      schema_name: WORKFLOW_DEF_SCHEMA,
      title: 'crumbs smoke: approval workflow',
      context: {
        workflow_id: SMOKE_WORKFLOW,
        input_schema: { type: 'object', required: ['nonce'], properties: { nonce: { type: 'string' } } },
        steps: [
          { id: 'before', tool: SMOKE_TOOL, input: { nonce: '=input.nonce' } },
          {
            id: 'approve',
            human: {
              prompt: '="Approve crumbs smoke run " & input.nonce & "?"',
              input_schema: { type: 'object', required: ['note'], properties: { note: { type: 'string' } } },
            },
          },
          {
            id: 'after',
            tool: SMOKE_TOOL,
            input: { nonce: '=steps.before.nonce', note: '=steps.approve.note' },
          },
        ],
        output: { nonce: '=steps.after.nonce', note: '=steps.after.note' },
      },
    });
    const started = await ctx.client.startRun(SMOKE_WORKFLOW, { nonce: ctx.nonce });
    const runId = started.run_id;
    ctx.runs.add(runId);
    await ctx.waitFor<RunView>(`run ${runId} waiting for a person at step approve`, async () => {
      const run = await readRun(ctx.client, runId);
      if (run?.steps?.approve?.status === 'waiting') return { value: run };
      if (run && ENDED.includes(run.status)) {
        throw new CheckFailure(`run ${runId} waiting at step approve`, describeRun(run));
      }
      return { seen: run ? describeRun(run) : 'no run yet' };
    });
    // As a person would: the route the CLI (`crumbs runs approve`) and the dashboard use.
    await ctx.client.runAction(runId, 'approve', {
      step: 'approve',
      input: { note },
      comment: 'approved by crumbs smoke',
    });
    const expected = `run ${runId} succeeded with output {nonce, note} after the approval`;
    const done = await ctx.waitFor<RunView>(expected, async () => {
      const run = await readRun(ctx.client, runId);
      if (run && ENDED.includes(run.status)) return { value: run };
      return { seen: run ? describeRun(run) : 'no run' };
    });
    const output = done.output as Record<string, unknown> | undefined;
    if (done.status !== 'succeeded' || output?.nonce !== ctx.nonce || output?.note !== note) {
      throw new CheckFailure(expected, `${describeRun(done)}, output ${JSON.stringify(done.output)}`);
    }
    return `run ${runId}: before → approved by the smoke → after, succeeded`;
  },
};

const mcpCheck: SmokeCheck = {
  name: 'mcp tools/list',
  async run(ctx) {
    const url = ctx.client.endpoint + MCP_PATH(ctx.client.workspace);
    const headers: Record<string, string> = ctx.options.token
      ? { Authorization: `Bearer ${ctx.options.token}` }
      : {};
    const doFetch = ctx.options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    // Asked first with a plain initialize, so a route that is missing or refuses says so by its status.
    const probe = await doFetch(url, {
      method: 'POST',
      headers: {
        ...headers,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: {
          protocolVersion: '2025-03-26',
          capabilities: {},
          clientInfo: { name: 'crumbs-smoke', version: '1' },
        },
      }),
      signal: AbortSignal.timeout(Math.max(1000, ctx.remainingMs)),
    });
    await probe.body?.cancel();
    if (!probe.ok) {
      throw new CheckFailure(
        `POST ${MCP_PATH(ctx.client.workspace)} to answer an MCP initialize`,
        `HTTP ${probe.status}${probe.status === 404 ? ' (no MCP route: is the stack deployed from this version?)' : ''}`,
      );
    }
    const client = new SdkMcpClient({ fetch: (input, init) => doFetch(String(input), init ?? {}) });
    let tools: { name: string }[];
    try {
      tools = await client.listTools(
        { url, headers, timeoutMs: ctx.remainingMs },
        AbortSignal.timeout(Math.max(1000, ctx.remainingMs)),
      );
    } catch (error) {
      throw new CheckFailure(`tools/list at ${url} to answer`, errorText(error));
    }
    return `tools/list answered ${tools.length} tool${tools.length === 1 ? '' : 's'}${
      tools.some((t) => t.name === SMOKE_TOOL) ? ` (${SMOKE_TOOL} among them)` : ''
    }`;
  },
};

/** The checks, in order. The `api` check comes first: nothing is written unless it passes. */
export const SMOKE_CHECKS: readonly SmokeCheck[] = [apiCheck, toolCheck, agentCheck, workflowCheck, mcpCheck];

const ENDED = ['succeeded', 'failed', 'cancelled'];

export async function runSmoke(
  options: SmokeOptions,
  checks: readonly SmokeCheck[] = SMOKE_CHECKS,
): Promise<SmokeReport> {
  const ctx = new SmokeContext(options);
  const results: CheckResult[] = [];
  const report = (result: CheckResult) => {
    options.onResult?.(result);
    return result;
  };
  let cleanup: CheckResult | undefined;
  try {
    let blocked: string | undefined;
    for (const check of checks) {
      if (blocked !== undefined) {
        results.push(report({ name: check.name, status: 'skipped', duration_ms: 0, detail: blocked }));
        continue;
      }
      const result = await runCheck(ctx, check);
      results.push(report(result));
      if (check === apiCheck && result.status === 'failed') blocked = 'not run: the api check failed';
    }
  } finally {
    cleanup = report(await runCleanup(ctx));
  }
  return {
    ok: results.every((r) => r.status !== 'failed') && cleanup.status !== 'failed',
    endpoint: options.client.endpoint,
    workspace: options.client.workspace,
    checks: results,
    cleanup,
  };
}

async function runCheck(ctx: SmokeContext, check: SmokeCheck): Promise<CheckResult> {
  const started = Date.now();
  ctx.startClock();
  const took = () => Date.now() - started;
  try {
    const detail = await check.run(ctx);
    return { name: check.name, status: 'passed', duration_ms: took(), detail };
  } catch (error) {
    if (error instanceof CheckSkipped) {
      return { name: check.name, status: 'skipped', duration_ms: took(), detail: error.message };
    }
    const ms = took();
    const detail =
      error instanceof CheckFailure
        ? `expected ${error.expected}; got ${error.got} (waited ${seconds(ms)})`
        : `expected the API to answer the check's request; got ${errorText(error)} (after ${seconds(ms)})`;
    return { name: check.name, status: 'failed', duration_ms: ms, detail };
  }
}

async function runCleanup(ctx: SmokeContext): Promise<CheckResult> {
  const started = Date.now();
  ctx.startClock();
  const took = () => Date.now() - started;
  if (!ctx.ownsWorkspace) {
    return {
      name: 'cleanup',
      status: 'skipped',
      duration_ms: took(),
      detail: 'nothing was written',
    };
  }
  const { client } = ctx;
  const deleted = new Set<string>();
  const remove = async (id: string) => {
    try {
      await client.delete(id);
    } catch (error) {
      // Already gone (the rule manager deletes a definition's status itself): what the cleanup wants.
      if (!(error instanceof ApiProblemError && error.status === 404)) throw error;
    }
    deleted.add(id);
  };
  const live = new Map<string, ChangeEvent['type']>();
  let cursor = ctx.startCursor;
  let left: string[] = [];
  try {
    for (const runId of ctx.runs) {
      const run = await readRun(client, runId).catch(() => undefined);
      if (run && !ENDED.includes(run.status)) {
        await client.runAction(runId, 'cancel', {}).catch(() => undefined);
      }
    }
    // Definitions first: once they are gone nothing in the workspace triggers anything more.
    for (const id of ctx.definitions) await remove(id);
    // Then whatever the change stream shows was written since the smoke began, until it has been quiet for longer
    // than the stream holds changes back (CRUMBS_CHANGES_SETTLE_MS): late answers and index lag are caught too.
    let quietSince: number | undefined;
    for (;;) {
      for (;;) {
        const batch = await client.changes({ ...(cursor ? { lastEventId: cursor } : {}), wait: 0 });
        cursor = batch.lastEventId ?? cursor;
        for (const [id, type] of lastChangeOf(batch.events)) live.set(id, type);
        if (batch.events.length === 0) break;
      }
      left = [...live].filter(([, type]) => type !== 'deleted').map(([id]) => id);
      for (const id of left) {
        await remove(id);
        live.set(id, 'deleted');
      }
      if (left.length === 0) {
        quietSince ??= Date.now();
        if (Date.now() - quietSince >= QUIET_MS) break;
      } else quietSince = undefined;
      if (ctx.remainingMs <= POLL_MS) break;
      await sleep(POLL_MS);
    }
    left = [];
    for (const id of live.keys()) if (await exists(client, id)) left.push(id);
  } catch (error) {
    return {
      name: 'cleanup',
      status: 'failed',
      duration_ms: took(),
      detail: `expected every breadcrumb the smoke wrote in ${client.workspace} deleted; got ${errorText(error)} (after ${seconds(took())})`,
    };
  }
  if (left.length > 0) {
    return {
      name: 'cleanup',
      status: 'failed',
      duration_ms: took(),
      detail:
        `expected workspace ${client.workspace} to hold nothing the smoke wrote; got ${left.length} still readable ` +
        `(${left.slice(0, 5).join(', ')}${left.length > 5 ? ', …' : ''}) (waited ${seconds(took())})`,
    };
  }
  return {
    name: 'cleanup',
    status: 'passed',
    duration_ms: took(),
    detail: `deleted ${deleted.size} breadcrumbs; workspace ${client.workspace} holds nothing`,
  };
}

/** The last change of each id, in the order the ids first appear. */
function lastChangeOf(events: readonly ChangeEvent[]): Map<string, ChangeEvent['type']> {
  const last = new Map<string, ChangeEvent['type']>();
  for (const e of events) last.set(e.id, e.type);
  return last;
}

async function exists(client: CrumbsClient, id: string): Promise<boolean> {
  try {
    await client.getFull(id);
    return true;
  } catch (error) {
    if (error instanceof ApiProblemError && error.status === 404) return false;
    throw error;
  }
}

async function readRun(client: CrumbsClient, runId: string): Promise<RunView | undefined> {
  try {
    return await client.getRun(runId);
  } catch (error) {
    if (error instanceof ApiProblemError && error.status === 404) return undefined;
    throw error;
  }
}

function describeRun(run: RunView): string {
  const steps = Object.entries(run.steps ?? {})
    .map(([key, s]) => `${key}:${s.status}${s.error ? ` (${s.error})` : ''}`)
    .join(' ');
  return `run ${run.status}${steps ? ` [${steps}]` : ''}${run.error ? `: ${run.error}` : ''}`;
}

function errorText(error: unknown): string {
  if (error instanceof ApiProblemError) {
    return `${error.method} ${new URL(error.url).pathname} answered ${error.status} ${error.title}${
      error.detail ? `: ${error.detail}` : ''
    }`;
  }
  return error instanceof Error ? error.message : String(error);
}

function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

export function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
