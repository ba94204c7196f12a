/**
 * `crumbs chat "<message>"`: writes a `user.message.v1` and prints the agent's answer. The answer is the
 * `agent.response.v1` of the message's thread (its causation thread is the message id; responses and errors are
 * tagged `thread:<id>`), found by polling the API. On a terminal (or with `--stream`) the answer is printed as the
 * model writes it (`cli/stream-answer.ts`), and Ctrl-C cancels it.
 */

import type { Breadcrumb, CrumbsClient } from '#shared/client/crumbs-client.ts';
import {
  AGENT_ERROR_SCHEMA,
  AGENT_RESPONSE_SCHEMA,
  CONTEXT_ERROR_SCHEMA,
  LOOP_STOPPED_SCHEMA,
  threadTag,
  USER_MESSAGE_SCHEMA,
} from '#shared/domain/protocol.ts';
import { ENV } from '#shared/topology.ts';
import { type CliIo, type Command, optInt, optString, printJson, UsageError } from '../args.ts';
import {
  openLiveAnswer,
  STREAM_OPTIONS,
  streamedAnswer,
  streamModeOf,
  streamUsage,
} from '../stream-answer.ts';

export const CHAT_DEFAULT_WORKSPACE = 'demo';
const DEFAULT_TIMEOUT_SECONDS = 60;
const POLL_MS = 400;
/** Breadcrumbs in a thread that end the wait: the answer, or a failure someone wrote instead of it. */
const FINAL_SCHEMAS = [AGENT_RESPONSE_SCHEMA, AGENT_ERROR_SCHEMA, CONTEXT_ERROR_SCHEMA, LOOP_STOPPED_SCHEMA];

export const chatCommand: Command = {
  name: 'chat',
  summary: 'send a chat message and print the agent’s answer',
  usage: `Usage: crumbs chat "<message>" [--session S] [--timeout SECONDS] [--stream | --no-stream]

Writes a user.message.v1 { message, session } tagged user:message and session:<S>, then waits for the
agent.response.v1 answering it and prints its message. Uses workspace "${CHAT_DEFAULT_WORKSPACE}" unless --workspace or
${ENV.workspace} says otherwise (\`npm start\` seeds a chat agent there).

Flags:
  --session S        conversation session (default "cli"); messages of one session share their context
  --timeout SECONDS  how long to wait for the answer (default ${DEFAULT_TIMEOUT_SECONDS})
${streamUsage(21)}`,
  options: {
    session: { type: 'string' },
    timeout: { type: 'string' },
    ...STREAM_OPTIONS,
  },
  async run(ctx) {
    const message = ctx.positionals.join(' ').trim();
    if (message === '') throw new UsageError('missing the message', true);
    const session = optString(ctx.values, 'session') ?? 'cli';
    const timeoutMs =
      (optInt(ctx.values, 'timeout', { min: 1, max: 3600 }) ?? DEFAULT_TIMEOUT_SECONDS) * 1000;
    const explicitWorkspace = optString(ctx.values, 'workspace') ?? ctx.io.env[ENV.workspace];
    const client = ctx.client().withWorkspace(explicitWorkspace || CHAT_DEFAULT_WORKSPACE);
    const mode = streamModeOf(ctx.values, ctx.io, ctx.global.json === true);
    const live = await openLiveAnswer(client, ctx.io, mode);

    const sent = await client.create({
      schema_name: USER_MESSAGE_SCHEMA,
      title: message.length > 80 ? `${message.slice(0, 79)}…` : message,
      tags: ['user:message', `session:${session}`],
      context: { message, session, ...(live !== undefined ? { stream_id: live.streamId } : {}) },
    });
    let answer: Breadcrumb | undefined;
    if (live !== undefined) {
      const stop = live.cancelOnInterrupt(sent.id);
      try {
        ({ answer } = await streamedAnswer(
          live,
          client,
          () => finalOf(client, sent.id),
          Date.now() + timeoutMs,
        ));
      } finally {
        stop();
        live.close();
      }
      const c = answer?.context ?? {};
      const done = answer?.schema_name === AGENT_RESPONSE_SCHEMA && c.status !== 'cancelled';
      live.settle(done && typeof c.message === 'string' ? c.message : undefined);
      if (answer !== undefined && !done) return failed(ctx.io, answer);
      if (answer !== undefined) return 0;
    } else answer = await waitForAnswer(client, sent.id, timeoutMs);
    if (answer === undefined) {
      ctx.io.stderr(
        `crumbs chat: no answer to ${sent.id} within ${timeoutMs / 1000} s in workspace ${client.workspace}.\n` +
          'Is an agent listening? `npm start` seeds the demo agent; `crumbs tail --tag thread:' +
          `${sent.id}\` shows what happened.\n`,
      );
      return 1;
    }
    if (ctx.global.json) {
      printJson(ctx.io, { message: sent, answer });
      return answer.schema_name === AGENT_RESPONSE_SCHEMA ? 0 : 1;
    }
    const c = answer.context;
    if (answer.schema_name === AGENT_RESPONSE_SCHEMA && c.status !== 'cancelled') {
      ctx.io.stdout(`${typeof c.message === 'string' ? c.message : JSON.stringify(c)}\n`);
      return 0;
    }
    return failed(ctx.io, answer);
  },
};

/** An answer that is not one: an error, a cancel, a stopped loop. */
function failed(io: CliIo, answer: Breadcrumb): number {
  const c = answer.context;
  if (c.status === 'cancelled') {
    io.stderr(`crumbs chat: ${String(c.message ?? 'cancelled')}\n`);
    return 130;
  }
  const reason =
    typeof c.error === 'string' ? c.error : typeof c.reason === 'string' ? c.reason : JSON.stringify(c);
  io.stderr(`crumbs chat: ${answer.schema_name}: ${reason}\n`);
  return 1;
}

/** The breadcrumb that ends the message's thread, if there is one yet. */
async function finalOf(client: CrumbsClient, messageId: string): Promise<Breadcrumb | undefined> {
  const page = await client.list({ tag: threadTag(messageId), limit: 25, view: 'full' });
  const finals = page.items.filter((b) => FINAL_SCHEMAS.includes(b.schema_name));
  return finals.find((b) => b.schema_name === AGENT_RESPONSE_SCHEMA) ?? finals[0];
}

async function waitForAnswer(
  client: CrumbsClient,
  messageId: string,
  timeoutMs: number,
): Promise<Breadcrumb | undefined> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const answer = await finalOf(client, messageId);
    if (answer) return answer;
    if (Date.now() + POLL_MS > deadline) return undefined;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}
