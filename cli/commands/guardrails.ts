/**
 * Guardrail policies (`guardrail.def.v1`, written with `crumbs put` / `crumbs apply` as any record): `crumbs
 * guardrails test <id> --text …` runs a policy on a text without a model (`POST …/guardrails/{id}/test`) and prints
 * what would go on — the text masked, or the block and its message — and each finding's check, type, action and
 * position. Checks that need a model (denied topics, injections, a Bedrock guardrail) are named as not run.
 */
import { type Command, optString, printJson, UsageError } from '../args.ts';
import { formatTable } from '../format.ts';

export const guardrailsCommand: Command = {
  name: 'guardrails',
  summary: 'try a guardrail policy on a text: `guardrails test <id> --text …`',
  usage: `Usage: crumbs guardrails test <guardrail_id[@version]> --text TEXT [--point POINT]

Runs the policy on TEXT as it would at POINT (default: input; also model_input, model_output, tool_args,
tool_result, memory_write, handoff) and prints the text as it would go on (masked), or that it is blocked with the
policy's message, then what each check found (types and positions). Exits 3 when the text is blocked.

Flags:
  --text TEXT     the text to check
  --point POINT   where the text would cross (default input)`,
  options: { text: { type: 'string' }, point: { type: 'string' } },
  async run(ctx) {
    const [sub, id, extra] = ctx.positionals;
    if (sub !== 'test') throw new UsageError(`expected "test", got ${JSON.stringify(sub ?? '')}`, true);
    if (id === undefined || extra !== undefined) throw new UsageError('expected one guardrail id', true);
    const text = optString(ctx.values, 'text');
    if (text === undefined) throw new UsageError('--text is required', true);
    const point = optString(ctx.values, 'point');
    const result = await ctx.client().testGuardrail(id, { text, ...(point !== undefined ? { point } : {}) });
    if (ctx.global.json) {
      printJson(ctx.io, result);
      return result.blocked ? 3 : 0;
    }
    ctx.io.stdout(
      result.blocked
        ? `blocked by ${result.blocked.policy}: ${result.blocked.message}\n`
        : `${result.text}\n`,
    );
    if (result.findings.length > 0) {
      ctx.io.stdout(
        `${formatTable(
          [
            { header: 'CHECK', value: (f) => f.check },
            { header: 'TYPE', value: (f) => f.type },
            { header: 'ACTION', value: (f) => f.action },
            { header: 'AT', value: (f) => (f.start !== undefined ? `${f.start}-${f.end}` : '') },
          ],
          result.findings,
        )}\n`,
      );
    } else {
      ctx.io.stdout('nothing found\n');
    }
    if (result.not_run.length > 0)
      ctx.io.stdout(`not run (they need a model): ${result.not_run.join(', ')}\n`);
    return result.blocked ? 3 : 0;
  },
};
