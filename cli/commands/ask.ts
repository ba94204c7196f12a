/**
 * `crumbs ask <agent> "<message>" [--mode converse|plan|build] [--orchestrate] [--wait]`: writes an
 * `agent.request.v1` naming the agent and prints its answer — the `agent.response.v1` tagged `request:<id>` (the
 * request breadcrumb's id), with the plan (`agent.plan.v1`) or the deliverable (`agent.deliverable.v1`) it wrote.
 *
 * With `--orchestrate` the agent plans sub-agent calls and runs them as a workflow run whose id is
 * `run-<request id>` (`shared/core/agents/orchestration-agent.ts`). Without `--wait` it prints the run once the agent has
 * started it; with `--wait` it waits until the run waits for a person (and says how to approve), is paused, or has
 * ended, and then prints the answer.
 */

import type { Breadcrumb, CrumbsClient, RunView } from '#shared/client/crumbs-client.ts';
import { ApiProblemError } from '#shared/client/crumbs-client.ts';
import {
  AGENT_PLAN_SCHEMA,
  AGENT_REQUEST_SCHEMA,
  AGENT_RESPONSE_SCHEMA,
  requestTag,
} from '#shared/domain/protocol.ts';
import { ENV } from '#shared/topology.ts';
import { type Command, type CommandContext, optInt, optString, printJson, UsageError } from '../args.ts';
import {
  openLiveAnswer,
  STREAM_OPTIONS,
  streamedAnswer,
  streamModeOf,
  streamUsage,
} from '../stream-answer.ts';
import { CHAT_DEFAULT_WORKSPACE } from './chat.ts';

const MODES = ['converse', 'plan', 'build'] as const;
const DEFAULT_TIMEOUT_SECONDS = 120;
const POLL_MS = 300;
const SETTLED = ['waiting', 'paused', 'succeeded', 'failed', 'cancelled'];

export const askCommand: Command = {
  name: 'ask',
  summary: 'ask an agent in a mode (converse, plan, build), optionally orchestrating sub-agents',
  usage: `Usage: crumbs ask <agent> "<message>" [--mode converse|plan|build] [--orchestrate] [--wait] [--stream | --no-stream]

Writes an agent.request.v1 { agent, message, mode } and prints the answer: the reply (converse), the plan
(plan: agent.plan.v1 in the agent's plan format) or the deliverable (build: agent.deliverable.v1, one per
conversation and type; --conversation keeps building the same one). Uses workspace "${CHAT_DEFAULT_WORKSPACE}" unless
--workspace or ${ENV.workspace} says otherwise.

Flags:
  --mode M             converse (default), plan or build
  --orchestrate        the agent plans calls of its sub-agents and runs them as a workflow run (crumbs runs …)
  --wait               with --orchestrate: wait until the run waits for a person, is paused or has ended
  --input JSON         structured input beside the message
  --conversation ID    the conversation (deliverables of a type are one per conversation)
  --timeout SECONDS    how long to wait (default ${DEFAULT_TIMEOUT_SECONDS})
${streamUsage(23)}

On a terminal the answer is printed as the model writes it; Ctrl-C cancels it.`,
  options: {
    mode: { type: 'string' },
    orchestrate: { type: 'boolean' },
    wait: { type: 'boolean' },
    input: { type: 'string' },
    conversation: { type: 'string' },
    timeout: { type: 'string' },
    ...STREAM_OPTIONS,
  },
  async run(ctx) {
    const [agent, ...words] = ctx.positionals;
    if (agent === undefined || agent.trim() === '') throw new UsageError('missing the agent', true);
    const message = words.join(' ').trim();
    if (message === '') throw new UsageError('missing the message', true);
    const mode = optString(ctx.values, 'mode');
    if (mode !== undefined && !(MODES as readonly string[]).includes(mode)) {
      throw new UsageError(`--mode: expected one of ${MODES.join(', ')}, got ${JSON.stringify(mode)}`);
    }
    let input: unknown;
    const rawInput = optString(ctx.values, 'input');
    if (rawInput !== undefined) {
      try {
        input = JSON.parse(rawInput);
      } catch (error) {
        throw new UsageError(`--input: not valid JSON (${(error as Error).message})`);
      }
    }
    const conversation = optString(ctx.values, 'conversation');
    const orchestrate = ctx.values.orchestrate === true;
    const wait = ctx.values.wait === true;
    if (wait && !orchestrate) throw new UsageError('--wait goes with --orchestrate (an ask always waits)');
    const timeoutMs =
      (optInt(ctx.values, 'timeout', { min: 1, max: 3600 }) ?? DEFAULT_TIMEOUT_SECONDS) * 1000;
    const explicitWorkspace = optString(ctx.values, 'workspace') ?? ctx.io.env[ENV.workspace];
    const client = ctx.client().withWorkspace(explicitWorkspace || CHAT_DEFAULT_WORKSPACE);
    // An orchestration answers with a run, not with text a model writes.
    const live = orchestrate
      ? undefined
      : await openLiveAnswer(client, ctx.io, streamModeOf(ctx.values, ctx.io, ctx.global.json === true));

    const request = await client.create({
      schema_name: AGENT_REQUEST_SCHEMA,
      title: `ask ${agent}${mode !== undefined ? ` (${mode})` : ''}: ${message.slice(0, 60)}`,
      tags: ['agent:request', `agent:${agent}`],
      context: {
        agent,
        message,
        ...(mode !== undefined ? { mode } : {}),
        ...(input !== undefined ? { input } : {}),
        ...(conversation !== undefined ? { conversation_id: conversation } : {}),
        ...(orchestrate ? { orchestrate: true } : {}),
        ...(live !== undefined ? { stream_id: live.streamId } : {}),
      },
    });
    const deadline = Date.now() + timeoutMs;
    if (live !== undefined) {
      const stop = live.cancelOnInterrupt(request.id);
      let answer: Breadcrumb | undefined;
      try {
        ({ answer } = await streamedAnswer(live, client, () => findAnswer(client, request.id), deadline));
      } finally {
        stop();
        live.close();
      }
      if (answer === undefined) {
        live.settle(undefined);
        return noAnswer(ctx, client, request.id, timeoutMs);
      }
      const c = answer.context as Record<string, unknown>;
      const plainText =
        c.status === 'success' && c.plan_id === undefined && c.deliverable_id === undefined
          ? typeof c.text === 'string'
            ? c.text
            : typeof c.message === 'string'
              ? c.message
              : undefined
          : undefined;
      live.settle(plainText);
      if (c.status === 'cancelled') {
        ctx.io.stderr(`crumbs ask: ${String(c.message ?? 'cancelled')}\n`);
        return 130;
      }
      if (plainText !== undefined) return 0;
      return printAnswer(ctx, client, answer);
    }
    if (!orchestrate) {
      const answer = await waitForAnswer(client, request.id, deadline);
      if (answer === undefined) return noAnswer(ctx, client, request.id, timeoutMs);
      return printAnswer(ctx, client, answer);
    }

    const runId = `run-${request.id}`;
    for (;;) {
      // An orchestration that could not start (an invalid plan, an unsupported mode) answers without a run.
      const answer = await findAnswer(client, request.id);
      const run = await findRun(client, runId);
      if (run !== undefined && (!wait || SETTLED.includes(run.status))) {
        if (answer !== undefined && ['succeeded', 'failed', 'cancelled'].includes(run.status)) {
          return printAnswer(ctx, client, answer);
        }
        if (ctx.global.json) printJson(ctx.io, { request_id: request.id, run });
        else ctx.io.stdout(runSummary(run, client.workspace));
        return 0;
      }
      if (run === undefined && answer !== undefined) return printAnswer(ctx, client, answer);
      if (Date.now() + POLL_MS > deadline) return noAnswer(ctx, client, request.id, timeoutMs);
      await sleep(POLL_MS);
    }
  },
};

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function findAnswer(client: CrumbsClient, requestId: string): Promise<Breadcrumb | undefined> {
  const page = await client.listFirst(
    { schema_name: AGENT_RESPONSE_SCHEMA, tag: requestTag(requestId), view: 'full' },
    1,
  );
  return page.items[0];
}

async function waitForAnswer(
  client: CrumbsClient,
  requestId: string,
  deadline: number,
): Promise<Breadcrumb | undefined> {
  for (;;) {
    const answer = await findAnswer(client, requestId);
    if (answer !== undefined) return answer;
    if (Date.now() + POLL_MS > deadline) return undefined;
    await sleep(POLL_MS);
  }
}

async function findRun(client: CrumbsClient, runId: string): Promise<RunView | undefined> {
  try {
    return await client.getRun(runId);
  } catch (error) {
    if (error instanceof ApiProblemError && error.status === 404) return undefined;
    throw error;
  }
}

function runSummary(run: RunView, workspace: string): string {
  const lines = [`run       ${run.run_id}`, `status    ${run.status}`];
  const steps = Object.entries(run.steps ?? {});
  if (steps.length > 0) {
    lines.push(`steps     ${steps.map(([key, s]) => `${key}:${s.status}`).join(' ')}`);
  }
  const waiting = steps.filter(([, s]) => s.status === 'waiting').map(([key]) => key);
  if (run.status === 'waiting' && waiting.length > 0) {
    lines.push(
      '',
      `waiting for a person at ${waiting.join(', ')}:`,
      `  crumbs runs approve ${run.run_id} --wait -w ${workspace}`,
      `  crumbs runs reject ${run.run_id} -w ${workspace}`,
    );
  } else if (!['succeeded', 'failed', 'cancelled'].includes(run.status)) {
    lines.push('', `follow it: crumbs runs get ${run.run_id} --wait -w ${workspace}`);
  }
  return `${lines.join('\n')}\n`;
}

function noAnswer(ctx: CommandContext, client: CrumbsClient, requestId: string, timeoutMs: number): number {
  ctx.io.stderr(
    `crumbs ask: no answer to ${requestId} within ${timeoutMs / 1000} s in workspace ${client.workspace}.\n` +
      `Is the agent defined there? \`crumbs trace ${requestId} -w ${client.workspace}\` shows what happened.\n`,
  );
  return 1;
}

/** The answer, with the plan or deliverable it names. */
async function printAnswer(ctx: CommandContext, client: CrumbsClient, answer: Breadcrumb): Promise<number> {
  const c = answer.context as Record<string, unknown>;
  const failed = c.status === 'error';
  const artifactId =
    typeof c.deliverable_id === 'string'
      ? c.deliverable_id
      : typeof c.plan_id === 'string'
        ? c.plan_id
        : undefined;
  const artifact =
    artifactId !== undefined ? await client.getFull(artifactId).catch(() => undefined) : undefined;
  if (ctx.global.json) {
    printJson(ctx.io, {
      answer,
      ...(artifact !== undefined ? { [String(artifact.schema_name)]: artifact } : {}),
    });
    return failed ? 1 : 0;
  }
  if (failed) {
    ctx.io.stderr(
      `crumbs ask: ${String(c.error ?? 'the agent failed')}${typeof c.run_id === 'string' ? ` (run ${c.run_id})` : ''}\n`,
    );
    return 1;
  }
  const lines: string[] = [];
  if (artifact !== undefined) {
    const a = artifact.context as Record<string, unknown>;
    const body = artifact.schema_name === AGENT_PLAN_SCHEMA ? a.plan : a.content;
    lines.push(typeof body === 'string' ? body.trimEnd() : JSON.stringify(body, null, 2));
    lines.push(
      '',
      artifact.schema_name === AGENT_PLAN_SCHEMA
        ? `plan ${artifact.id} (${String(a.format)})`
        : `deliverable ${artifact.id} v${artifact.version} (${String(a.type)}, ${String(a.format)}; conversation ${String(a.conversation_id)})`,
    );
  } else {
    lines.push(
      typeof c.text === 'string'
        ? c.text
        : typeof c.message === 'string'
          ? c.message
          : JSON.stringify(c.output),
    );
  }
  if (typeof c.run_id === 'string') lines.push(`run ${c.run_id} (${String(c.run_status ?? '')})`);
  ctx.io.stdout(`${lines.join('\n')}\n`);
  return 0;
}
