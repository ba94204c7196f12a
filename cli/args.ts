/**
 * Argument handling shared by every command: the global flags, the command interface, and small readers that
 * turn `node:util` `parseArgs` values into typed values or a `UsageError` (exit code 2).
 *
 * Global flags may appear before or after the command name (`crumbs --json ls` and `crumbs ls --json`); the
 * command's own flags are parsed together with them, strictly, so an unknown flag is a usage error.
 * Precedence for every setting: flag, then environment variable, then default.
 */
import { readFile } from 'node:fs/promises';
import { extname } from 'node:path';
import { type ParseArgsConfig, parseArgs } from 'node:util';
import { parse as parseYaml } from 'yaml';
import { CrumbsClient, type TokenProvider } from '#shared/client/crumbs-client.ts';
import { ENV } from '#shared/topology.ts';

export interface CliIo {
  readonly stdout: (s: string) => void;
  readonly stderr: (s: string) => void;
  readonly env: NodeJS.ProcessEnv;
  /** Reads all of stdin; `undefined` when stdin is a terminal (nothing was piped). @default process.stdin */
  readonly readStdin?: () => Promise<string | undefined>;
  /** Where `crumbs dev` hears SIGINT/SIGTERM. Returns an unsubscribe function. @default process signals */
  readonly onSignal?: (handler: (signal: NodeJS.Signals) => void) => () => void;
  /** Immediate exit for a second Ctrl-C during shutdown. @default process.exit */
  readonly exit?: (code: number) => void;
  /** stdout is a terminal: answers stream there by default (`cli/stream-answer.ts`). @default false */
  readonly stdoutIsTerminal?: boolean;
  /** Opens a URL in the user's browser (`crumbs login`'s sign-in page). @default the desktop's opener */
  readonly openUrl?: (url: string) => void | Promise<void>;
}

export type OptionsConfig = NonNullable<ParseArgsConfig['options']>;
export type OptionValue = string | boolean | (string | boolean)[] | undefined;
export type OptionValues = Record<string, OptionValue>;

export const DEFAULT_ENDPOINT = 'http://127.0.0.1:4710';
export const DEFAULT_WORKSPACE = 'default';

export const GLOBAL_OPTIONS = {
  endpoint: { type: 'string' },
  workspace: { type: 'string', short: 'w' },
  token: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean' },
} as const satisfies OptionsConfig;

export const GLOBAL_USAGE = `Global flags:
  --endpoint URL      API endpoint (env ${ENV.endpoint}, default ${DEFAULT_ENDPOINT})
  -w, --workspace WS  workspace (env ${ENV.workspace}, default ${DEFAULT_WORKSPACE})
  --token TOKEN       bearer token (env ${ENV.localToken}; \`crumbs dev\` prints it); default: your
                      \`crumbs login\` session for the endpoint
  --json              print the API's JSON instead of tables
  -h, --help          show help
  --version           print the crumbs version`;

export interface GlobalOptions {
  readonly endpoint: string;
  readonly workspace: string;
  readonly token: string | undefined;
  readonly json: boolean;
}

export interface CommandContext {
  readonly values: OptionValues;
  readonly positionals: readonly string[];
  readonly global: GlobalOptions;
  readonly io: CliIo;
  /** The API client for the global endpoint, token and workspace. */
  client(): CrumbsClient;
  /**
   * The bearer token to send: `--token` or `CRUMBS_TOKEN`, else the endpoint's signed-in session (`crumbs login`),
   * refreshed when it is about to expire.
   */
  token(): Promise<string | undefined>;
}

export interface Command {
  readonly name: string;
  /** One line for the command list. */
  readonly summary: string;
  /** Full usage text (without the global flags, which are appended). */
  readonly usage: string;
  readonly options: OptionsConfig;
  run(ctx: CommandContext): Promise<number>;
}

/** Bad command line: printed with a usage hint, exit code 2. */
export class UsageError extends Error {
  readonly retriable = false;

  constructor(
    message: string,
    /** Print the command's full usage after the message (unknown flags, missing arguments). */
    readonly showUsage = false,
  ) {
    super(message);
    this.name = 'UsageError';
  }
}

/** A local input that cannot be used (unreadable file, bad JSON/YAML): exit code 1, nothing sent. */
export class InputError extends Error {
  readonly retriable = false;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'InputError';
  }
}

/**
 * Finds the command name: the first argument that is neither a flag nor the value of a global flag that takes
 * one. Returns the name and the remaining arguments.
 */
export function splitCommand(argv: readonly string[]): { name: string | undefined; rest: string[] } {
  const takesValue = new Set<string>();
  for (const [long, config] of Object.entries(GLOBAL_OPTIONS)) {
    if (config.type === 'string') {
      takesValue.add(`--${long}`);
      if ('short' in config) takesValue.add(`-${config.short}`);
    }
  }
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    if (arg === '--') return { name: undefined, rest: [...argv] };
    if (takesValue.has(arg)) {
      i++;
      continue;
    }
    if (arg.startsWith('-') && arg !== '-') continue;
    return { name: arg, rest: [...argv.slice(0, i), ...argv.slice(i + 1)] };
  }
  return { name: undefined, rest: [...argv] };
}

export function parseCommandArgs(
  args: readonly string[],
  options: OptionsConfig,
): { values: OptionValues; positionals: string[] } {
  try {
    const { values, positionals } = parseArgs({
      args: [...args],
      options: { ...GLOBAL_OPTIONS, ...options },
      allowPositionals: true,
      strict: true,
    });
    return { values: values as OptionValues, positionals };
  } catch (error) {
    // parseArgs throws TypeErrors with codes like ERR_PARSE_ARGS_UNKNOWN_OPTION and a readable message.
    throw new UsageError(error instanceof Error ? error.message : String(error), true);
  }
}

export function resolveGlobal(values: OptionValues, env: NodeJS.ProcessEnv): GlobalOptions {
  const endpoint = optString(values, 'endpoint') ?? (env[ENV.endpoint] || DEFAULT_ENDPOINT);
  try {
    const url = new URL(endpoint);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('not http');
  } catch {
    throw new UsageError(`--endpoint: expected an http(s) URL, got ${JSON.stringify(endpoint)}`);
  }
  return {
    endpoint,
    workspace: optString(values, 'workspace') ?? (env[ENV.workspace] || DEFAULT_WORKSPACE),
    token: optString(values, 'token') ?? (env[ENV.localToken] || undefined),
    json: values.json === true,
  };
}

export function optString(values: OptionValues, name: string): string | undefined {
  const value = values[name];
  return typeof value === 'string' ? value : undefined;
}

export function strings(values: OptionValues, name: string): string[] {
  const value = values[name];
  if (value === undefined) return [];
  return (Array.isArray(value) ? value : [value]).filter((v): v is string => typeof v === 'string');
}

/** An integer flag within bounds, or undefined when absent. */
export function optInt(
  values: OptionValues,
  name: string,
  bounds: { min?: number; max?: number } = {},
): number | undefined {
  const raw = optString(values, name);
  return raw === undefined ? undefined : toInt(raw, `--${name}`, bounds);
}

export function toInt(raw: string, label: string, { min = 1, max = Number.MAX_SAFE_INTEGER } = {}): number {
  if (!/^\d+$/.test(raw.trim()))
    throw new UsageError(`${label}: expected an integer, got ${JSON.stringify(raw)}`);
  const n = Number(raw.trim());
  if (n < min || n > max)
    throw new UsageError(`${label}: expected an integer from ${min} to ${max}, got ${n}`);
  return n;
}

/** Exactly one positional argument (the breadcrumb id). */
export function onePositional(ctx: CommandContext, what: string): string {
  const [first, ...extra] = ctx.positionals;
  if (first === undefined || first === '') throw new UsageError(`missing ${what}`, true);
  if (extra.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(extra[0])}`, true);
  return first;
}

export function noPositionals(ctx: CommandContext): void {
  const [first] = ctx.positionals;
  if (first !== undefined) throw new UsageError(`unexpected argument ${JSON.stringify(first)}`, true);
}

/** A flag whose value is JSON (`--context '{"a":1}'`). */
export function jsonFlag(values: OptionValues, name: string): unknown {
  const raw = optString(values, name);
  if (raw === undefined) return undefined;
  try {
    return JSON.parse(raw);
  } catch (error) {
    throw new UsageError(`--${name}: not valid JSON (${(error as Error).message})`);
  }
}

/**
 * Reads a JSON or YAML document from a file, or from stdin when the path is `-`. `.json` files are parsed as
 * JSON (sharper error messages); everything else as YAML, which also accepts JSON.
 */
export async function readDocument(path: string, io: CliIo, label: string): Promise<unknown> {
  let text: string;
  if (path === '-') {
    const piped = await readStdinOf(io);
    if (piped === undefined) throw new InputError(`${label}: "-" reads stdin, but nothing was piped in`);
    text = piped;
  } else {
    try {
      text = await readFile(path, 'utf8');
    } catch (error) {
      throw new InputError(
        `${label}: cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? error})`,
        {
          cause: error,
        },
      );
    }
  }
  return parseDocument(text, path === '-' ? 'stdin' : path, extname(path).toLowerCase() === '.json', label);
}

export function parseDocument(text: string, source: string, jsonOnly: boolean, label: string): unknown {
  try {
    return jsonOnly ? JSON.parse(text) : parseYaml(text);
  } catch (error) {
    throw new InputError(
      `${label}: ${source} is not valid ${jsonOnly ? 'JSON' : 'JSON or YAML'} (${(error as Error).message})`,
      {
        cause: error,
      },
    );
  }
}

export async function readStdinOf(io: CliIo): Promise<string | undefined> {
  return (io.readStdin ?? readProcessStdin)();
}

async function readProcessStdin(): Promise<string | undefined> {
  if (process.stdin.isTTY) return undefined;
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin)
    chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
  return Buffer.concat(chunks).toString('utf8');
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** `--expires-at`: an ISO-8601 date-time, or epoch seconds when all digits. The API validates further. */
export function expiresAtFlag(values: OptionValues): string | number | undefined {
  const raw = optString(values, 'expires-at');
  if (raw === undefined) return undefined;
  if (/^\d+$/.test(raw)) return Number(raw);
  if (Number.isNaN(Date.parse(raw))) {
    throw new UsageError(
      `--expires-at: expected an ISO-8601 date-time or epoch seconds, got ${JSON.stringify(raw)}`,
    );
  }
  return raw;
}

export function clientFor(global: GlobalOptions, token?: TokenProvider): CrumbsClient {
  return new CrumbsClient({
    endpoint: global.endpoint,
    token: token ?? global.token,
    workspace: global.workspace,
  });
}

export function printJson(io: CliIo, value: unknown): void {
  io.stdout(`${JSON.stringify(value, null, 2)}\n`);
}

/** Warnings about what was written (fields crumbs does not know), one line each on stderr, as kubectl prints them. */
export function printWarnings(
  io: CliIo,
  id: string,
  warnings: readonly { path: string; message: string }[],
): void {
  for (const w of warnings) io.stderr(`warning: ${id}: context.${w.path}: ${w.message}\n`);
}

/** SIGINT and SIGTERM to `handler` until the returned function is called (long-running commands: dev, tail). */
export function listenToProcessSignals(handler: (signal: NodeJS.Signals) => void): () => void {
  process.on('SIGINT', handler);
  process.on('SIGTERM', handler);
  return () => {
    process.off('SIGINT', handler);
    process.off('SIGTERM', handler);
  };
}
