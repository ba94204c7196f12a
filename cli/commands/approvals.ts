/**
 * Approvals of agents' tool calls: `crumbs approvals [--all] [--run ID] [--agent ID]` lists them (pending ones by
 * default, `GET …/approvals`), `crumbs approve <id> [--arguments JSON] [--reason TEXT]` and
 * `crumbs reject <id> --reason TEXT` answer one (`POST …/approvals/{id}`). The agent decides the answer: approve
 * runs the tool, reject gives the model the reason as the call's result.
 */
import type { ApprovalItem } from '#shared/client/crumbs-client.ts';
import {
  type Command,
  isPlainObject,
  jsonFlag,
  noPositionals,
  onePositional,
  optString,
  printJson,
  UsageError,
} from '../args.ts';
import { formatTable } from '../format.ts';

export const approvalsCommand: Command = {
  name: 'approvals',
  summary: "agents' tool calls waiting for a person's approval",
  usage: `Usage: crumbs approvals [--all] [--run RUN_ID] [--agent AGENT_ID]

Lists the tool calls agents wait to have approved (newest first): the approval id, the agent, the tool, its
arguments, the agent's reason and when it expires. Answer one with \`crumbs approve <id>\` or
\`crumbs reject <id> --reason …\`.

Flags:
  --all           decided and expired approvals too
  --run ID        only those of a run's agent steps
  --agent ID      only those of one agent`,
  options: {
    all: { type: 'boolean' },
    run: { type: 'string' },
    agent: { type: 'string' },
  },
  async run(ctx) {
    noPositionals(ctx);
    const run = optString(ctx.values, 'run');
    const agent = optString(ctx.values, 'agent');
    const list = await ctx.client().approvals({
      ...(ctx.values.all === true ? { status: 'all' } : {}),
      ...(run !== undefined ? { run } : {}),
      ...(agent !== undefined ? { agent } : {}),
    });
    if (ctx.global.json) {
      printJson(ctx.io, list);
      return 0;
    }
    if (list.items.length === 0) {
      ctx.io.stdout(`no ${ctx.values.all === true ? '' : 'pending '}approvals in ${list.workspace}\n`);
      return 0;
    }
    ctx.io.stdout(`${approvalsTable(list.items)}\n`);
    if (list.truncated) ctx.io.stdout('(only the newest approvals were read)\n');
    return 0;
  },
};

export function approvalsTable(items: readonly ApprovalItem[]): string {
  return formatTable<ApprovalItem>(
    [
      { header: 'id', value: (a) => a.approval_id },
      { header: 'status', value: (a) => a.status },
      { header: 'agent', value: (a) => a.agent_id, max: 24 },
      { header: 'tool', value: (a) => a.tool, max: 24 },
      { header: 'arguments', value: (a) => JSON.stringify(a.arguments), max: 48 },
      { header: 'reason', value: (a) => a.reason.replace(/\s+/g, ' '), max: 48 },
      { header: 'expires', value: (a) => a.expires_at ?? '-' },
    ],
    items,
  );
}

export const approveCommand: Command = {
  name: 'approve',
  summary: "approve an agent's tool call (optionally with edited arguments)",
  usage: `Usage: crumbs approve <approval-id> [--arguments JSON] [--reason TEXT]

Approves the tool call: the agent runs the tool (with --arguments instead of the model's when given, checked
against the tool's input schema) and its turn goes on with the result.

Flags:
  --arguments JSON  the arguments to run the tool with (a JSON object)
  --reason TEXT     a note kept with the decision`,
  options: {
    arguments: { type: 'string' },
    reason: { type: 'string' },
  },
  async run(ctx) {
    const id = onePositional(ctx, 'an approval id');
    const args = jsonFlag(ctx.values, 'arguments');
    if (args !== undefined && !isPlainObject(args)) {
      throw new UsageError('--arguments: expected a JSON object');
    }
    const reason = optString(ctx.values, 'reason');
    const answer = await ctx.client().decideApproval(id, {
      decision: 'approve',
      ...(args !== undefined ? { arguments: args } : {}),
      ...(reason !== undefined ? { reason } : {}),
    });
    if (ctx.global.json) printJson(ctx.io, answer);
    else ctx.io.stdout(`approved ${answer.approval_id} (response ${answer.response_id})\n`);
    return 0;
  },
};

export const rejectCommand: Command = {
  name: 'reject',
  summary: "reject an agent's tool call, telling the agent why",
  usage: `Usage: crumbs reject <approval-id> --reason TEXT

Rejects the tool call: it is not made, and the model reads the rejection and the reason as its result.

Flags:
  --reason TEXT   why (required: the agent reads it)`,
  options: {
    reason: { type: 'string' },
  },
  async run(ctx) {
    const id = onePositional(ctx, 'an approval id');
    const reason = optString(ctx.values, 'reason');
    if (reason === undefined || reason.trim() === '') {
      throw new UsageError('--reason: say why (the agent reads it)', true);
    }
    const answer = await ctx.client().decideApproval(id, { decision: 'reject', reason });
    if (ctx.global.json) printJson(ctx.io, answer);
    else ctx.io.stdout(`rejected ${answer.approval_id} (response ${answer.response_id})\n`);
    return 0;
  },
};
