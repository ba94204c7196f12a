/**
 * `crumbs doctor [--region R] [--cdk-json FILE] [-c key=value …] [--json]`: the check before a first deploy
 * (`cli/doctor.ts`), with the CLI's AWS credentials, against the stage the CDK context describes (`cdk.json` in the
 * current directory, and `-c` values over it, as `cdk deploy` reads them). One line per check, ✓ or ✗ with what to
 * do; exit 1 when any check failed.
 */
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Node } from 'constructs';
import { readConfig } from '#infra/config.ts';
import { type Command, optString, printJson, UsageError } from '../args.ts';
import { type DoctorDeps, type DoctorLine, defaultDoctorDeps, runDoctor } from '../doctor.ts';

export const doctorCommand: Command = {
  name: 'doctor',
  summary:
    'check an AWS account and region before the first deploy (bootstrap, Bedrock models, quotas, issuer)',
  usage: `Usage: crumbs doctor [--region R] [--cdk-json FILE] [-c key=value ...] [--json]

With the AWS credentials of this shell (as cdk deploy uses them), checks what a stage needs from the account and
region: the stage's configuration, the CDK bootstrap, Bedrock access to every model the configuration names (the
default agent model, the embedding model), EventBridge's rules-per-bus and Lambda's concurrency quotas, AppSync
Events in the region, and the JWT issuer's discovery document. Prints ✓ or ✗ with what to do; exits 1 on any ✗.

The configuration is cdk.json's context (in the current directory, or --cdk-json) with -c values over it.

Flags:
  --region R          the region to check (default AWS_REGION, then AWS_DEFAULT_REGION)
  --cdk-json FILE     the CDK app's cdk.json (default ./cdk.json)
  -c, --context K=V   a context value, as cdk deploy -c takes it (repeatable)`,
  options: {
    region: { type: 'string' },
    'cdk-json': { type: 'string' },
    context: { type: 'string', short: 'c', multiple: true },
  },
  async run(ctx) {
    const region =
      optString(ctx.values, 'region') ?? (ctx.io.env.AWS_REGION || ctx.io.env.AWS_DEFAULT_REGION);
    if (!region) throw new UsageError('no region: pass --region or set AWS_REGION');
    const context = contextOf(optString(ctx.values, 'cdk-json') ?? 'cdk.json', ctx.values.context);
    let config: ReturnType<typeof readConfig> | Error;
    try {
      config = readConfig({ tryGetContext: (key: string) => context[key] } as unknown as Node);
    } catch (error) {
      config = error instanceof Error ? error : new Error(String(error));
    }
    const lines = await runDoctor(config, doctorDeps(region));
    if (ctx.global.json) printJson(ctx.io, { region, checks: lines });
    else for (const line of lines) ctx.io.stdout(`${format(line)}\n`);
    const failed = lines.filter((l) => l.status === 'failed');
    if (failed.length > 0) {
      if (!ctx.global.json) ctx.io.stderr(`crumbs doctor: ${failed.length} to fix before cdk deploy\n`);
      return 1;
    }
    if (!ctx.global.json) ctx.io.stdout(`crumbs doctor: ready to deploy to ${region}\n`);
    return 0;
  },
};

/** Replaced by tests that run the command against mocked clients. */
export let doctorDeps: (region: string) => DoctorDeps = defaultDoctorDeps;
export function setDoctorDeps(make: (region: string) => DoctorDeps): void {
  doctorDeps = make;
}

function contextOf(file: string, overrides: unknown): Record<string, unknown> {
  const path = resolve(file);
  let context: Record<string, unknown> = {};
  if (existsSync(path)) {
    try {
      const parsed = JSON.parse(readFileSync(path, 'utf8')) as { context?: Record<string, unknown> };
      context = { ...(parsed.context ?? {}) };
    } catch (error) {
      throw new UsageError(`${file} is not JSON: ${(error as Error).message}`);
    }
  } else if (file !== 'cdk.json') {
    throw new UsageError(`no file ${file}`);
  }
  for (const pair of Array.isArray(overrides) ? overrides : []) {
    const text = String(pair);
    const eq = text.indexOf('=');
    if (eq <= 0) throw new UsageError(`-c ${text}: expected key=value`);
    context[text.slice(0, eq)] = text.slice(eq + 1);
  }
  return context;
}

const MARK = { ok: '✓', failed: '✗', warning: '!', skipped: '-' } as const;

function format(line: DoctorLine): string {
  const head = `${MARK[line.status]} ${line.name.padEnd(30)} ${line.detail}`;
  return line.fix ? `${head}\n  → ${line.fix}` : head;
}
