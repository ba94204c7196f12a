/**
 * `crumbs runs …`: workflow runs through the run routes (`shared/core/api/run-routes.ts`).
 *
 *   crumbs runs start <workflow> [--input JSON] [--wait]
 *   crumbs runs get <run_id> [--wait]
 *   crumbs runs ls [--workflow W] [--status S] [--limit N]
 *   crumbs runs approve <run_id> [--step S] [--input JSON] [--comment C] [--wait]
 *   crumbs runs reject <run_id> [--step S] [--comment C] [--wait]
 *   crumbs runs pause|resume|cancel <run_id> [--wait]
 *   crumbs runs resume <run_id> [--max-tokens N] [--max-cost-usd X] [--max-llm-calls N]   (raise a budget)
 *   crumbs runs retry <run_id> --from STEP [--wait]
 *
 * `--wait` polls the run until it has stopped running (waiting for a person, paused, or ended) and prints it.
 * After an action it first waits for the run to take it (its version to move on).
 */
import type { CrumbsClient, RunAction, RunView } from '#shared/client/crumbs-client.ts';
import {
  type Command,
  type CommandContext,
  type OptionValues,
  optInt,
  optString,
  printJson,
  UsageError,
} from '../args.ts';
import { formatTable } from '../format.ts';

const SUBCOMMANDS = [
  'start',
  'get',
  'ls',
  'approve',
  'reject',
  'pause',
  'resume',
  'cancel',
  'retry',
] as const;
const SETTLED = ['waiting', 'paused', 'succeeded', 'failed', 'cancelled'];
const POLL_MS = 250;

function parseJson(raw: string | undefined, flag: string): unknown {
  if (raw === undefined) return undefined;
  try {
    return JSON.parse(raw);
  } catch (error) {
    throw new UsageError(`${flag}: not valid JSON (${(error as Error).message})`);
  }
}

function runText(run: RunView): string {
  const lines = [`run       ${run.run_id}`, `workflow  ${run.workflow}`, `status    ${run.status}`];
  if (run.error !== undefined) lines.push(`error     ${run.error}`);
  const budget = budgetText(run);
  if (budget !== undefined) lines.push(budget);
  if (run.stopped_by !== undefined) {
    const s = run.stopped_by;
    const flag = `--${s.budget.replace(/^limits\./, '').replaceAll('_', '-')}`;
    lines.push(
      `stopped   by ${s.budget} (${figure(s.unit, s.limit)}): ${figure(s.unit, s.used)} used${s.step ? `, before step ${s.step}` : ''}; resume with ${flag} above it`,
    );
  }
  const steps = Object.entries(run.steps ?? {});
  if (steps.length > 0) {
    lines.push(
      '',
      formatTable(
        [
          { header: 'step', value: ([key]: (typeof steps)[number]) => key, max: 40 },
          { header: 'status', value: ([, s]) => s.status },
          { header: 'attempts', value: ([, s]) => s.attempts, align: 'right' },
          {
            header: 'ran',
            value: ([, s]) => (s.definition ? `${s.definition.id}@${s.definition.version}` : ''),
            max: 60,
          },
          {
            header: 'output / error',
            value: ([, s]) => s.error ?? JSON.stringify(s.output ?? null),
            max: 80,
          },
        ],
        steps,
      ),
    );
  }
  // What a wait_for step waits for: the write that would resume it, and until when.
  for (const [key, s] of steps) {
    if (s.status !== 'waiting' || s.waiting_for === undefined) continue;
    const w = s.waiting_for;
    const where =
      w.correlation === undefined
        ? ''
        : ` where ${w.correlation.field} = ${JSON.stringify(w.correlation.value)}`;
    lines.push(`waiting   ${key} for ${JSON.stringify(w.selector)}${where} until ${w.until}`);
  }
  if (run.output !== undefined) lines.push('', `output    ${JSON.stringify(run.output)}`);
  // Attempts that did not count (an agent, a tool or a plain put answering or steering the run), and why.
  for (const r of run.refused ?? []) lines.push(`refused   ${r.what} by ${r.by} (${r.id}): ${r.reason}`);
  return lines.join('\n');
}

function figure(unit: 'tokens' | 'usd' | 'calls', n: number): string {
  return unit === 'usd' ? `$${(n / 1e9).toFixed(6)}` : `${n.toLocaleString('en-US')} ${unit}`;
}

/** `budget    3 model calls, 1,234 tokens, $0.000123 (limits: …)`: what the run used against its budget. */
function budgetText(run: RunView): string | undefined {
  const c = run.counters;
  if (c === undefined) return undefined;
  const raised = run.raised_limits;
  const raisedText = raised
    ? ` (raised by ${raised.by}: ${Object.entries(raised)
        .filter(([k]) => k.startsWith('max_'))
        .map(([k, v]) => `${k} ${v}`)
        .join(', ')})`
    : '';
  return `budget    ${c.llm_calls} model calls, ${(c.tokens ?? 0).toLocaleString('en-US')} tokens, $${((c.cost_nusd ?? 0) / 1e9).toFixed(6)}${raisedText}`;
}

/** Polls until the run has settled (and, after an action, moved past `afterVersion`). */
async function waitFor(
  client: CrumbsClient,
  runId: string,
  seconds: number,
  afterVersion?: number,
): Promise<RunView | undefined> {
  const deadline = Date.now() + seconds * 1000;
  for (;;) {
    const run = await client.getRun(runId);
    const version = typeof run.version === 'number' ? run.version : 0;
    if (SETTLED.includes(run.status) && (afterVersion === undefined || version > afterVersion)) return run;
    if (Date.now() > deadline) return undefined;
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

async function show(ctx: CommandContext, run: RunView): Promise<number> {
  if (ctx.global.json) printJson(ctx.io, run);
  else ctx.io.stdout(`${runText(run)}\n`);
  return run.status === 'failed' || run.status === 'cancelled' ? 1 : 0;
}

/** `--max-tokens`, `--max-cost-usd`, `--max-llm-calls` as a resume's `limits` (the API checks their ranges). */
function raisedLimits(values: OptionValues): Record<string, number> | undefined {
  const limits: Record<string, number> = {};
  for (const [flag, field] of [
    ['max-tokens', 'max_tokens'],
    ['max-cost-usd', 'max_cost_usd'],
    ['max-llm-calls', 'max_llm_calls'],
  ] as const) {
    const raw = optString(values, flag);
    if (raw === undefined) continue;
    const n = Number(raw);
    if (raw.trim() === '' || !Number.isFinite(n))
      throw new UsageError(`--${flag}: expected a number, got ${raw}`);
    limits[field] = n;
  }
  return Object.keys(limits).length > 0 ? limits : undefined;
}

export const runsCommand: Command = {
  name: 'runs',
  summary: 'start, watch and steer workflow runs (approve, reject, pause, resume, cancel, retry)',
  usage: `Usage: crumbs runs <start|get|ls|approve|reject|pause|resume|cancel|retry> …

  crumbs runs start <workflow> [--input JSON] [--wait]
  crumbs runs get <run_id> [--wait]
  crumbs runs ls [--workflow W] [--status S] [--limit N]
  crumbs runs approve <run_id> [--step S] [--input JSON] [--comment C] [--wait]
  crumbs runs reject <run_id> [--step S] [--comment C] [--wait]
  crumbs runs pause|resume|cancel <run_id> [--wait]
  crumbs runs resume <run_id> [--max-tokens N] [--max-cost-usd X] [--max-llm-calls N] [--wait]
  crumbs runs retry <run_id> --from STEP [--wait]

Flags:
  --max-tokens N, --max-cost-usd X, --max-llm-calls N
                       resume: raise the run's budget (a run a budget stopped resumes past it only so)
  --wait               wait until the run is waiting for a person, paused or ended, and print it
  --wait-seconds N     how long --wait waits (default 120)
  --input JSON         the run's input (start), or the approved input (approve)
  --step S             the human step to answer when several wait
  --comment C          a comment kept with the decision
  --from STEP          the top-level step to rerun from (retry)
  --workflow W, --status S, --limit N   filters of ls`,
  options: {
    input: { type: 'string' },
    wait: { type: 'boolean' },
    'wait-seconds': { type: 'string' },
    step: { type: 'string' },
    comment: { type: 'string' },
    from: { type: 'string' },
    workflow: { type: 'string' },
    status: { type: 'string' },
    limit: { type: 'string' },
    'max-tokens': { type: 'string' },
    'max-cost-usd': { type: 'string' },
    'max-llm-calls': { type: 'string' },
  },
  async run(ctx) {
    const [sub, target, extra] = ctx.positionals;
    if (sub === undefined || !(SUBCOMMANDS as readonly string[]).includes(sub)) {
      throw new UsageError(`expected one of ${SUBCOMMANDS.join(', ')}`, true);
    }
    if (extra !== undefined) throw new UsageError(`unexpected argument ${JSON.stringify(extra)}`, true);
    const client = ctx.client();
    const wait = ctx.values.wait === true;
    const waitSeconds = optInt(ctx.values, 'wait-seconds', { min: 1 }) ?? 120;

    if (sub === 'ls') {
      if (target !== undefined) throw new UsageError(`unexpected argument ${JSON.stringify(target)}`, true);
      const workflow = optString(ctx.values, 'workflow');
      const status = optString(ctx.values, 'status');
      const limit = optInt(ctx.values, 'limit', { min: 1, max: 100 });
      const page = await client.listRuns({
        ...(workflow !== undefined ? { workflow } : {}),
        ...(status !== undefined ? { status } : {}),
        ...(limit !== undefined ? { limit } : {}),
      });
      if (ctx.global.json) {
        printJson(ctx.io, page);
        return 0;
      }
      ctx.io.stdout(
        `${formatTable(
          [
            { header: 'run', value: (r: RunView) => r.run_id, max: 40 },
            { header: 'workflow', value: (r) => r.workflow },
            { header: 'status', value: (r) => r.status },
            { header: 'started', value: (r) => r.started_at },
          ],
          page.items,
        )}\n`,
      );
      return 0;
    }

    if (target === undefined)
      throw new UsageError(`crumbs runs ${sub}: expected a ${sub === 'start' ? 'workflow' : 'run id'}`, true);

    if (sub === 'start') {
      const started = await client.startRun(
        target,
        parseJson(optString(ctx.values, 'input'), '--input') ?? {},
      );
      if (!wait) {
        if (ctx.global.json) printJson(ctx.io, started);
        else ctx.io.stdout(`${started.run_id}\n`);
        return 0;
      }
      const run = await waitFor(client, started.run_id, waitSeconds);
      if (run === undefined) {
        ctx.io.stderr(`run ${started.run_id} is still running after ${waitSeconds} s\n`);
        return 1;
      }
      return show(ctx, run);
    }

    if (sub === 'get') {
      const run = wait ? await waitFor(client, target, waitSeconds) : await client.getRun(target);
      if (run === undefined) {
        ctx.io.stderr(`run ${target} is still running after ${waitSeconds} s\n`);
        return 1;
      }
      return show(ctx, run);
    }

    const body: Record<string, unknown> = {};
    const step = optString(ctx.values, 'step');
    const comment = optString(ctx.values, 'comment');
    if (sub === 'approve' || sub === 'reject') {
      if (step !== undefined) body.step = step;
      if (comment !== undefined) body.comment = comment;
      const input = parseJson(optString(ctx.values, 'input'), '--input');
      if (input !== undefined) {
        if (sub === 'reject') throw new UsageError('crumbs runs reject takes no --input');
        body.input = input;
      }
    }
    const limits = raisedLimits(ctx.values);
    if (limits !== undefined) {
      if (sub !== 'resume') throw new UsageError(`crumbs runs ${sub} takes no budget flags (resume does)`);
      body.limits = limits;
    }
    if (sub === 'retry') {
      const from = optString(ctx.values, 'from');
      if (from === undefined) throw new UsageError('crumbs runs retry: expected --from STEP', true);
      body.from_step = from;
    }
    const before = wait ? await client.getRun(target) : undefined;
    const answer = await client.runAction(target, sub as RunAction, body);
    if (!wait) {
      if (ctx.global.json) printJson(ctx.io, answer);
      else ctx.io.stdout(`${sub}: ${target}\n`);
      return 0;
    }
    const version = typeof before?.version === 'number' ? before.version : undefined;
    const run = await waitFor(client, target, waitSeconds, version);
    if (run === undefined) {
      ctx.io.stderr(`run ${target} did not settle within ${waitSeconds} s\n`);
      return 1;
    }
    return show(ctx, run);
  },
};
