/**
 * The `crumbs` CLI entry: parses the command line, runs one command, and maps failures to exit codes.
 *
 *   0  success
 *   1  the API answered an error (its problem title/detail and field errors on stderr), the API could not be
 *      reached, or a local input (file, JSON) could not be used
 *   2  usage error: unknown command or flag, missing or malformed argument
 *
 * `main` takes its streams and environment as `io`, so tests run the CLI in-process.
 */
import { readFileSync } from 'node:fs';
import {
  ApiConnectionError,
  ApiProblemError,
  ApiResponseError,
  type TokenProvider,
} from '#shared/client/crumbs-client.ts';
import { ENV } from '#shared/topology.ts';
import {
  type CliIo,
  type Command,
  clientFor,
  GLOBAL_USAGE,
  InputError,
  parseCommandArgs,
  resolveGlobal,
  splitCommand,
  UsageError,
} from './args.ts';
import { applyCommand } from './commands/apply.ts';
import { approvalsCommand, approveCommand, rejectCommand } from './commands/approvals.ts';
import { askCommand } from './commands/ask.ts';
import { chatCommand } from './commands/chat.ts';
import { devCommand } from './commands/dev.ts';
import { doctorCommand } from './commands/doctor.ts';
import { explainCommand } from './commands/explain.ts';
import { getCommand } from './commands/get.ts';
import { guardrailsCommand } from './commands/guardrails.ts';
import { historyCommand } from './commands/history.ts';
import { loginCommand, logoutCommand } from './commands/login.ts';
import { lsCommand } from './commands/ls.ts';
import { mcpCommand } from './commands/mcp.ts';
import { memoryCommand } from './commands/memory.ts';
import { putCommand } from './commands/put.ts';
import { rmCommand } from './commands/rm.ts';
import { rollbackCommand } from './commands/rollback.ts';
import { rulesCommand } from './commands/rules.ts';
import { runsCommand } from './commands/runs.ts';
import { smokeCommand } from './commands/smoke.ts';
import { tableCommand } from './commands/table.ts';
import { tailCommand } from './commands/tail.ts';
import { traceCommand } from './commands/trace.ts';
import { updateCommand } from './commands/update.ts';
import { usageCommand } from './commands/usage.ts';
import { usersCommand } from './commands/users.ts';
import { workspaceCommand } from './commands/workspace.ts';
import { CredentialStore, storedToken } from './credentials.ts';

export type { CliIo } from './args.ts';

export const COMMANDS: readonly Command[] = [
  devCommand,
  putCommand,
  getCommand,
  lsCommand,
  updateCommand,
  rmCommand,
  historyCommand,
  rollbackCommand,
  applyCommand,
  rulesCommand,
  runsCommand,
  approvalsCommand,
  approveCommand,
  rejectCommand,
  guardrailsCommand,
  usageCommand,
  memoryCommand,
  explainCommand,
  chatCommand,
  askCommand,
  tailCommand,
  mcpCommand,
  traceCommand,
  smokeCommand,
  doctorCommand,
  workspaceCommand,
  loginCommand,
  logoutCommand,
  usersCommand,
  tableCommand,
];

const defaultIo: CliIo = {
  stdout: (s) => process.stdout.write(s),
  stderr: (s) => process.stderr.write(s),
  env: process.env,
  stdoutIsTerminal: process.stdout.isTTY === true,
};

export async function main(argv: string[], io: CliIo = defaultIo): Promise<number> {
  let { name, rest } = splitCommand(argv);
  // `crumbs help [command]` reads as `crumbs [command] --help`.
  if (name === 'help') {
    const split = splitCommand(rest);
    name = split.name;
    rest = [...split.rest, '--help'];
  }
  const command = name === undefined ? undefined : COMMANDS.find((c) => c.name === name);

  if (name !== undefined && command === undefined) {
    io.stderr(`crumbs: unknown command ${JSON.stringify(name)}\n\n${globalUsage()}\n`);
    return 2;
  }

  let parsed: ReturnType<typeof parseCommandArgs>;
  try {
    parsed = parseCommandArgs(rest, command?.options ?? {});
  } catch (error) {
    return usageFailure(io, command, error);
  }
  const { values, positionals } = parsed;

  if (values.help === true) {
    io.stdout(`${command ? commandUsage(command) : globalUsage()}\n`);
    return 0;
  }
  if (values.version === true) {
    io.stdout(`crumbs ${packageVersion()}\n`);
    return 0;
  }
  if (command === undefined) {
    const extra = positionals[0];
    io.stderr(
      `${extra === undefined ? 'crumbs: missing command' : `crumbs: unexpected ${extra}`}\n\n${globalUsage()}\n`,
    );
    return 2;
  }

  try {
    const global = resolveGlobal(values, io.env);
    const token: TokenProvider =
      global.token !== undefined
        ? async () => global.token
        : storedToken(CredentialStore.of(io.env), global.endpoint);
    return await command.run({
      values,
      positionals,
      global,
      io,
      token,
      client: () => clientFor(global, token),
    });
  } catch (error) {
    return reportFailure(io, command, error);
  }
}

function reportFailure(io: CliIo, command: Command, error: unknown): number {
  if (error instanceof UsageError) return usageFailure(io, command, error);
  if (error instanceof ApiProblemError) {
    io.stderr(`${describeProblem(error)}\n`);
    return 1;
  }
  if (error instanceof ApiConnectionError) {
    const hint =
      error.code === 'TIMEOUT'
        ? 'Is the API overloaded or stuck? Check the `crumbs dev` terminal.'
        : `Is it running? Start it with \`npm start\` (or \`crumbs dev\`), or point --endpoint / ${ENV.endpoint} at a running API.`;
    io.stderr(`crumbs: ${error.message}\n${hint}\n`);
    return 1;
  }
  if (error instanceof InputError || error instanceof ApiResponseError) {
    io.stderr(`crumbs ${command.name}: ${error.message}\n`);
    return 1;
  }
  // A bug, not an expected failure: show the stack so it can be reported.
  io.stderr(
    `crumbs ${command.name}: unexpected error\n${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  return 1;
}

function describeProblem(error: ApiProblemError): string {
  const { status, title, detail } = error;
  // A validation detail often just joins the field errors; print them once, one per line.
  const redundant =
    detail === undefined ||
    detail === title ||
    (error.errors.length > 0 && error.errors.every((e) => detail.includes(e.message)));
  const lines = [`Error ${status}: ${title}${redundant ? '' : ` — ${detail}`}`];
  for (const issue of error.errors) lines.push(`  ${issue.path || '(body)'}: ${issue.message}`);
  if (status === 401)
    lines.push(
      `Sign in with \`crumbs login\`, or pass --token or set ${ENV.localToken} (\`crumbs dev\` prints the local token).`,
    );
  return lines.join('\n');
}

function usageFailure(io: CliIo, command: Command | undefined, error: unknown): number {
  const message = error instanceof Error ? error.message : String(error);
  const prefix = command ? `crumbs ${command.name}` : 'crumbs';
  const showUsage = !(error instanceof UsageError) || error.showUsage;
  const tail = showUsage
    ? `\n\n${command ? commandUsage(command) : globalUsage()}`
    : `\nRun \`crumbs ${command ? `${command.name} ` : ''}--help\` for usage.`;
  io.stderr(`${prefix}: ${message}${tail}\n`);
  return 2;
}

function commandUsage(command: Command): string {
  return `${command.usage}\n\n${GLOBAL_USAGE}`;
}

function globalUsage(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length));
  const list = COMMANDS.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`).join('\n');
  return `Usage: crumbs <command> [flags]

crumbs: agents and tools defined as data. Breadcrumbs are versioned JSON records; this CLI reads and writes them
through the crumbs HTTP API, and \`crumbs dev\` runs the whole stack locally.

Commands:
${list}
  help     show help for a command (\`crumbs help put\`)

${GLOBAL_USAGE}

Run \`crumbs <command> --help\` for a command's flags.`;
}

function packageVersion(): string {
  const text = readFileSync(new URL('../package.json', import.meta.url), 'utf8');
  const parsed: unknown = JSON.parse(text);
  const version =
    parsed !== null && typeof parsed === 'object' ? (parsed as { version?: unknown }).version : undefined;
  return typeof version === 'string' ? version : 'unknown';
}
