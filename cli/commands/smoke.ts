/**
 * `crumbs smoke [--endpoint URL] [--timeout SECONDS] [--model M] [--json]`: end-to-end checks of a running stack
 * (`crumbs dev` or a deployed stage) through its public API — a tool round trip, an agent answer, a workflow with
 * an approval, MCP `tools/list` — in a workspace of its own that it empties afterwards (`cli/smoke.ts`). One line
 * per check with ✓/✗/- and its duration; exit 1 when any check or the cleanup failed.
 *
 * The workspace is a fresh `smoke-<random>` (the token must allow every workspace, `*`), unless --workspace or
 * CRUMBS_WORKSPACE names one: then it must be empty, because the cleanup deletes everything in it.
 */
import { randomBytes } from 'node:crypto';
import { CrumbsClient } from '#shared/client/crumbs-client.ts';
import { ENV } from '#shared/topology.ts';
import { type Command, optInt, optString, printJson } from '../args.ts';
import { type CheckResult, runSmoke, SMOKE_CHECKS, seconds } from '../smoke.ts';

const DEFAULT_TIMEOUT_SECONDS = 60;

export const smokeCommand: Command = {
  name: 'smoke',
  summary: 'check a running stack end to end (tool, agent, workflow with approval, MCP) and clean up',
  usage: `Usage: crumbs smoke [--endpoint URL] [--timeout SECONDS] [--model M] [--json]

Runs end-to-end checks against the API at --endpoint (or ${ENV.endpoint}) through the public HTTP API only:
${SMOKE_CHECKS.map((c) => `  ${c.name}`).join('\n')}
in a workspace of its own, which it empties afterwards even when a check fails. Prints one line per check
(✓ passed, ✗ failed with what was expected, what came and how long it waited, - skipped) and exits 1 when any
check or the cleanup failed.

The workspace is a fresh smoke-<random> unless --workspace or ${ENV.workspace} names one; a named workspace
must be empty (the cleanup deletes everything written there after the smoke began). A fresh one needs a token
allowed every workspace ("*").

Flags:
  --timeout SECONDS   how long each check (and the cleanup) may wait in all (default ${DEFAULT_TIMEOUT_SECONDS})
  --model M           the smoke agent's model (default: the stack's default provider's default model)`,
  options: { timeout: { type: 'string' }, model: { type: 'string' } },
  async run(ctx) {
    const timeoutMs =
      (optInt(ctx.values, 'timeout', { min: 1, max: 3600 }) ?? DEFAULT_TIMEOUT_SECONDS) * 1000;
    const model = optString(ctx.values, 'model');
    const named = optString(ctx.values, 'workspace') ?? (ctx.io.env[ENV.workspace] || undefined);
    const workspace = named ?? `smoke-${randomBytes(5).toString('hex')}`;
    // One request may take no longer than a whole check may wait (and never more than the client's usual 30 s).
    const token = await ctx.token();
    const client = new CrumbsClient({
      endpoint: ctx.global.endpoint,
      token,
      workspace,
      timeoutMs: Math.min(timeoutMs, 30_000),
    });
    const json = ctx.global.json;
    if (!json) {
      ctx.io.stdout(
        `crumbs smoke: ${client.endpoint}, workspace ${workspace} (each check waits at most ${seconds(timeoutMs)})\n`,
      );
    }
    const report = await runSmoke({
      client,
      token,
      timeoutMs,
      model,
      namedWorkspace: named !== undefined,
      ...(json ? {} : { onResult: (r: CheckResult) => ctx.io.stdout(`${line(r)}\n`) }),
    });
    if (json) printJson(ctx.io, report);
    const failed = [...report.checks, report.cleanup].filter((r) => r.status === 'failed');
    if (failed.length > 0) {
      ctx.io.stderr(
        `crumbs smoke: ${failed.length} failed (${failed.map((f) => f.name).join(', ')}) against ${client.endpoint}\n`,
      );
      return 1;
    }
    if (!json) ctx.io.stdout('crumbs smoke: all checks passed\n');
    return 0;
  },
};

const MARK = { passed: '✓', failed: '✗', skipped: '-' } as const;
const NAME_WIDTH = Math.max(...[...SMOKE_CHECKS.map((c) => c.name), 'cleanup'].map((n) => n.length));

function line(r: CheckResult): string {
  return `${MARK[r.status]} ${r.name.padEnd(NAME_WIDTH)}  ${seconds(r.duration_ms).padStart(7)}  ${r.detail}`;
}
