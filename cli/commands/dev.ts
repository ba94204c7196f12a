/**
 * `crumbs dev` (what `npm start` runs): starts the local stack — DynamoDB Local, SQS, EventBridge and the HTTP
 * API — prints the endpoints and the token, and runs until SIGINT or SIGTERM, then stops everything.
 *
 * The stack module is imported lazily so that every other command starts without loading it. The signal
 * source and the forced exit come from `CliIo`, so tests drive shutdown without sending real signals.
 * A second signal during shutdown exits at once (130), for when stopping hangs.
 */
import type { LocalStack, LocalStackOptions } from '#local/stack.ts';
import { parseScopedTokens, ScopedTokensError } from '#local/tokens.ts';
import { NetworkEnvSchema, parseEnv } from '#shared/config.ts';
import { ValidationError } from '#shared/domain/errors.ts';
import { ENV } from '#shared/topology.ts';
import {
  type CliIo,
  type Command,
  listenToProcessSignals,
  noPositionals,
  type OptionValues,
  optString,
  toInt,
  UsageError,
} from '../args.ts';

// The defaults match `DEFAULT_PORTS` in the stack module; that value is not imported, because importing it
// would load the whole stack for every command.
const PORTS = [
  { flag: 'port', env: ENV.localPort, option: 'apiPort', fallback: 4710 },
  { flag: 'dynamodb-port', env: ENV.localDynamodbPort, option: 'dynamodbPort', fallback: 4711 },
  { flag: 'sqs-port', env: ENV.localSqsPort, option: 'sqsPort', fallback: 4712 },
  { flag: 'eventbridge-port', env: ENV.localEventbridgePort, option: 'eventbridgePort', fallback: 4713 },
  { flag: 'scheduler-port', env: ENV.localSchedulerPort, option: 'schedulerPort', fallback: 4714 },
  // Unset: the stack picks 4715, or a free port when the API's is 0 (tests running several stacks).
  { flag: 'events-port', env: ENV.localEventsPort, option: 'eventsPort', fallback: undefined },
] as const;

// The maximum of buses is `topology.bus.pool.maxSize` (not imported, for the reason above).
const COUNTS = [
  { flag: 'buses', env: ENV.localBuses, option: 'buses', max: 20 },
  { flag: 'rules-per-bus', env: ENV.localRulesPerBus, option: 'rulesPerBus', max: 100_000 },
  {
    flag: 'max-definitions-per-workspace',
    env: ENV.maxDefinitionsPerWorkspace,
    option: 'maxDefinitionsPerWorkspace',
    max: 1_000_000,
  },
  {
    flag: 'max-rules-per-workspace',
    env: ENV.maxRulesPerWorkspace,
    option: 'maxRulesPerWorkspace',
    max: 1_000_000,
  },
] as const;

export const devCommand: Command = {
  name: 'dev',
  summary: 'run the local stack (DynamoDB Local, SQS, EventBridge, Scheduler, HTTP API) until Ctrl-C',
  usage: `Usage: crumbs dev [--port N] [--dynamodb-port N] [--sqs-port N] [--eventbridge-port N]
                  [--scheduler-port N] [--events-port N] [--data-dir DIR] [--host H] [--allow-private-network]
                  [--otlp-endpoint URL] [--buses N] [--rules-per-bus N] [--max-definitions-per-workspace N]
                  [--max-rules-per-workspace N] [--secrets FILE]
                  [--oidc-issuer URL --oidc-client-id ID [--oidc-audience A,B] [--workspaces-claim C]]

Runs crumbs on this machine (no Docker, no AWS account) and prints the API endpoint and token.
Ctrl-C stops everything; a second Ctrl-C exits at once.

Flags:
  --port N               HTTP API port (env ${ENV.localPort}, default 4710)
  --dynamodb-port N      DynamoDB Local port (env ${ENV.localDynamodbPort}, default 4711)
  --sqs-port N           SQS port (env ${ENV.localSqsPort}, default 4712)
  --eventbridge-port N   EventBridge port (env ${ENV.localEventbridgePort}, default 4713)
  --scheduler-port N     EventBridge Scheduler port (env ${ENV.localSchedulerPort}, default 4714)
  --events-port N        delta channels (AppSync Events' protocol) port (env ${ENV.localEventsPort}, default 4715)
  --data-dir DIR         keep DynamoDB data in DIR (default: in memory)
  --buses N              event buses that definitions' rules are spread over (env ${ENV.localBuses}, default 1; at
                         most 20), as the CDK context value crumbs:buses on AWS
  --rules-per-bus N      the local EventBridge's "Rules per event bus" quota (env ${ENV.localRulesPerBus}, default
                         300 as on AWS): your account's raised quota, or a low one to see definitions spread
  --max-definitions-per-workspace N
                         definitions one workspace may have (env ${ENV.maxDefinitionsPerWorkspace}; default
                         twice the rules quota); past it a new definition is invalid, naming this setting
  --max-rules-per-workspace N
                         rules of the bus pool one workspace may hold (env ${ENV.maxRulesPerWorkspace}; default
                         a quarter of buses × rules per bus, 75), so no workspace can fill the pool for the others
  --secrets FILE         each workspace's secrets, a JSON file {"<workspace>": {"<name>": "<value>"}} that a
                         definition's secret_ref names (env ${ENV.localSecretsFile}; default DIR/secrets.json with
                         --data-dir); read again when it changes. A workspace sees only its own entry, never
                         this process's environment variables
  --host H               interface the HTTP API and dashboard listen on (default 127.0.0.1); DynamoDB Local,
                         SQS, EventBridge and Scheduler always listen on 127.0.0.1 only
  --token TOKEN          use this API token, good for every workspace (env ${ENV.localToken}; default: generated)
  --oidc-issuer URL      also take JWTs of this OpenID Connect issuer, checked by the front door's authorizer
                         function as on AWS (signature against its keys, iss, exp, aud or else client_id), so \`crumbs login\` and the
                         dashboard's Sign in work locally; without it crumbs dev signs nobody in (use its token)
  --oidc-client-id ID    the issuer's public client people sign in with (redirect URIs
                         http://localhost:4790/callback and <api>/ui/); an accepted audience
  --oidc-audience A,B    further accepted audiences (aud, else client_id)
  --workspaces-claim C   the claim listing a person's workspaces (default crumbs:workspaces; cognito:groups for a
                         Cognito user pool)
  --allow-private-network
                         let tools and agents reach private and loopback addresses (env
                         ${ENV.allowPrivateNetwork}=1): MCP servers, APIs and A2A partners of agents, and the
                         http tool when its definition also asks with config.allow_private
  --otlp-endpoint URL    send every function's OpenTelemetry spans (GenAI conventions) to this OTLP/HTTP traces
                         URL, e.g. http://localhost:4318/v1/traces (env ${ENV.otlpEndpoint}; headers in
                         ${ENV.otlpHeaders} as name=value,name=value; prompts and completions on model
                         calls' spans only with ${ENV.otelCaptureContent}=true)

Environment:
  ${ENV.localScopedTokens}          scoped tokens, a JSON object mapping token → list of workspaces (or "*"), e.g.
                         {"alice-token":["team-a"]}; a scoped token gets 403 on every other workspace
  ${ENV.localSecrets}         each workspace's secrets as JSON, as in --secrets (the file's entries win)
  ${ENV.jwtIssuer}, ${ENV.jwtAudience}
                         as --oidc-issuer and --oidc-audience when those flags are not given (audiences
                         comma-separated: aud, or client_id without aud)
  ${ENV.apiUrl}         the API's public URL, for agent cards and MCP's metadata (default: its own endpoint)

  ${ENV.maxResponseBytes}
                         the most bytes any response body a definition's request reads may have (default
                         5242880, 5 MiB); a definition asking for more is invalid
  ${ENV.llmPrices}      model prices over the defaults, USD per million tokens, e.g.
                         {"openai/gpt-4o":{"input":2.5,"output":10,"cached_input":1.25}} (\`crumbs usage\`)
  ${ENV.dailyBudgets}   each workspace's budget for model calls in USD per UTC day, e.g.
                         {"default":5,"workspaces":{"team-a":50}}; each model call reserves its worst case
                         first and is refused once the day is spent`,
  options: {
    port: { type: 'string' },
    'dynamodb-port': { type: 'string' },
    'sqs-port': { type: 'string' },
    'eventbridge-port': { type: 'string' },
    'scheduler-port': { type: 'string' },
    'events-port': { type: 'string' },
    'data-dir': { type: 'string' },
    buses: { type: 'string' },
    'rules-per-bus': { type: 'string' },
    'max-definitions-per-workspace': { type: 'string' },
    'max-rules-per-workspace': { type: 'string' },
    secrets: { type: 'string' },
    host: { type: 'string' },
    'allow-private-network': { type: 'boolean' },
    'otlp-endpoint': { type: 'string' },
    'oidc-issuer': { type: 'string' },
    'oidc-client-id': { type: 'string' },
    'oidc-audience': { type: 'string' },
    'workspaces-claim': { type: 'string' },
  },
  async run(ctx) {
    noPositionals(ctx);
    const { io } = ctx;
    const options: { -readonly [K in keyof LocalStackOptions]: LocalStackOptions[K] } = {
      log: (line) => io.stderr(`${line}\n`),
    };
    for (const port of PORTS) {
      const flag = optString(ctx.values, port.flag);
      const fromEnv = io.env[port.env];
      // 0 asks the system for a free port.
      if (flag !== undefined) options[port.option] = toInt(flag, `--${port.flag}`, { min: 0, max: 65535 });
      else if (fromEnv) options[port.option] = toInt(fromEnv, port.env, { min: 0, max: 65535 });
      else if (port.fallback !== undefined) options[port.option] = port.fallback;
    }
    const host = optString(ctx.values, 'host');
    if (host !== undefined) {
      if (host.trim() === '') throw new UsageError('--host: expected a host name or address');
      options.host = host;
    }
    for (const count of COUNTS) {
      const flag = optString(ctx.values, count.flag);
      const fromEnv = io.env[count.env];
      if (flag !== undefined)
        options[count.option] = toInt(flag, `--${count.flag}`, { min: 1, max: count.max });
      else if (fromEnv) options[count.option] = toInt(fromEnv, count.env, { min: 1, max: count.max });
    }
    const dataDir = optString(ctx.values, 'data-dir');
    if (dataDir !== undefined) options.dataDir = dataDir;
    const secretsFile = optString(ctx.values, 'secrets') ?? (io.env[ENV.localSecretsFile] || undefined);
    if (secretsFile !== undefined) options.secretsFile = secretsFile;
    const secretsJson = io.env[ENV.localSecrets];
    if (secretsJson) {
      try {
        options.secrets = JSON.parse(secretsJson) as NonNullable<LocalStackOptions['secrets']>;
      } catch (error) {
        throw new UsageError(`${ENV.localSecrets}: not JSON: ${(error as Error).message}`);
      }
    }
    if (ctx.global.token !== undefined) options.token = ctx.global.token;
    try {
      options.scopedTokens = parseScopedTokens(io.env[ENV.localScopedTokens]);
    } catch (error) {
      if (error instanceof ScopedTokensError) throw new UsageError(error.message);
      throw error;
    }
    const publicUrl = io.env[ENV.apiUrl]?.trim();
    if (publicUrl) options.publicUrl = httpUrl(publicUrl, ENV.apiUrl);
    const oidc = oidcOptions(ctx.values, io.env);
    if (oidc !== undefined) options.oidc = oidc;
    if (ctx.values['allow-private-network'] === true || io.env[ENV.allowPrivateNetwork] === '1') {
      options.allowPrivateNetwork = true;
    }
    const otlp = (ctx.values['otlp-endpoint'] as string | undefined) ?? io.env[ENV.otlpEndpoint];
    if (otlp !== undefined && otlp.trim() !== '' && otlp.trim() !== 'none') {
      options.otlpEndpoint = httpUrl(otlp.trim(), `--otlp-endpoint (or ${ENV.otlpEndpoint})`);
    }
    // The handlers read it from this process's environment when they call out; a bad value stops the start.
    try {
      parseEnv(NetworkEnvSchema, io.env);
    } catch (error) {
      if (error instanceof ValidationError) throw new UsageError(error.message);
      throw error;
    }

    // Listen before starting: Ctrl-C during startup stops the stack as soon as it is up, and stays ours
    // throughout, so no signal falls through to Node's default (which would kill us and orphan java).
    const signals = listenForShutdown(io);
    try {
      const { startLocalStack } = await import('#local/stack.ts');
      let stack: LocalStack;
      try {
        stack = await startLocalStack(options);
      } catch (error) {
        // Port conflicts, a missing Java, a failed child process: the stack's message says which and what to do.
        io.stderr(`crumbs dev: ${error instanceof Error ? error.message : String(error)}\n`);
        return 1;
      }
      printReady(io, stack, ctx.global.json, oidc);
      await signals.first;
      io.stderr('stopping…\n');
      try {
        await stack.stop();
      } catch (error) {
        io.stderr(`crumbs dev: stopping failed: ${error instanceof Error ? error.message : String(error)}\n`);
        return 1;
      }
      io.stderr('stopped\n');
      return 0;
    } finally {
      signals.unsubscribe();
    }
  },
};

/** The workspace a dashboard link opens on (`#token=…&workspace=…`); undefined when it names none. */
export function dashboardWorkspace(dashboard: string): string | undefined {
  try {
    return new URLSearchParams(new URL(dashboard).hash.slice(1)).get('workspace') ?? undefined;
  } catch {
    return undefined;
  }
}

/**
 * `--oidc-issuer` and its companions, checked; else `CRUMBS_JWT_ISSUER` with `CRUMBS_JWT_AUDIENCE` (the names the
 * authorizer function reads on AWS); undefined when no issuer is given either way.
 */
function oidcOptions(values: OptionValues, env: CliIo['env']): LocalStackOptions['oidc'] {
  const issuer = optString(values, 'oidc-issuer');
  const clientId = optString(values, 'oidc-client-id');
  const audiences = (optString(values, 'oidc-audience') ?? '')
    .split(',')
    .map((a) => a.trim())
    .filter(Boolean);
  const claim = optString(values, 'workspaces-claim');
  if (issuer === undefined) {
    const stray =
      clientId !== undefined
        ? '--oidc-client-id'
        : audiences.length > 0
          ? '--oidc-audience'
          : claim !== undefined
            ? '--workspaces-claim'
            : undefined;
    if (stray !== undefined) throw new UsageError(`${stray} needs --oidc-issuer`);
    return oidcFromEnv(env);
  }
  try {
    const url = new URL(issuer);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('not http');
  } catch {
    throw new UsageError(`--oidc-issuer: expected the issuer's http(s) URL, got ${JSON.stringify(issuer)}`);
  }
  if (clientId === undefined && audiences.length === 0) {
    throw new UsageError(
      '--oidc-issuer needs --oidc-client-id (the client people sign in with) or --oidc-audience (what tokens are issued to)',
    );
  }
  return {
    issuer,
    audiences: [...new Set([...(clientId !== undefined ? [clientId] : []), ...audiences])],
    ...(clientId !== undefined ? { clientId } : {}),
    ...(claim !== undefined ? { workspacesClaim: claim } : {}),
  };
}

function printReady(io: CliIo, stack: LocalStack, json: boolean, oidc: LocalStackOptions['oidc']): void {
  const { endpoints, token, dashboard, warnings } = stack;
  // The CLI in the other terminal works in the workspace the dashboard opens on: one workspace for the quick start.
  const workspace = dashboardWorkspace(dashboard);
  if (json) {
    io.stdout(`${JSON.stringify({ endpoints, token, dashboard, warnings })}\n`);
    return;
  }
  io.stdout(
    [
      'crumbs local stack is ready',
      ...warnings.map((warning) => `WARNING: ${warning}`),
      `  api          ${endpoints.api}`,
      `  dynamodb     ${endpoints.dynamodb}`,
      `  sqs          ${endpoints.sqs}`,
      `  eventbridge  ${endpoints.eventbridge}`,
      `  scheduler    ${endpoints.scheduler}`,
      `  token        ${token}`,
      ...(oidc !== undefined
        ? [
            `  sign-in      ${oidc.issuer}${oidc.clientId !== undefined ? ` (client ${oidc.clientId}): crumbs login, or Sign in on the dashboard` : ' (its JWTs are taken)'}`,
          ]
        : []),
      '',
      `Dashboard: ${dashboard}`,
      '',
      'In another terminal:',
      `  export ${ENV.endpoint}=${endpoints.api} ${ENV.localToken}=${token}${workspace ? ` ${ENV.workspace}=${workspace}` : ''}`,
      '',
      'Press Ctrl-C to stop.',
      '',
    ].join('\n'),
  );
}

/**
 * The first SIGINT/SIGTERM resolves `first` (graceful stop); a second one exits at once with 130, for when
 * stopping hangs.
 */
function listenForShutdown(io: CliIo): { first: Promise<NodeJS.Signals>; unsubscribe: () => void } {
  let count = 0;
  let resolveFirst: (signal: NodeJS.Signals) => void = () => {};
  const first = new Promise<NodeJS.Signals>((resolve) => {
    resolveFirst = resolve;
  });
  const subscribe = io.onSignal ?? listenToProcessSignals;
  const unsubscribe = subscribe((signal) => {
    count++;
    if (count === 1) {
      resolveFirst(signal);
      return;
    }
    io.stderr(`${signal} again: exiting without waiting for the stack to stop\n`);
    (io.exit ?? ((code: number) => process.exit(code)))(130);
  });
  return { first, unsubscribe };
}

/** `CRUMBS_JWT_ISSUER` and `CRUMBS_JWT_AUDIENCE` (comma-separated), checked; undefined without an issuer. */
function oidcFromEnv(env: CliIo['env']): LocalStackOptions['oidc'] {
  const issuer = env[ENV.jwtIssuer]?.trim();
  if (!issuer) return undefined;
  const audiences = (env[ENV.jwtAudience] ?? '')
    .split(',')
    .map((a) => a.trim())
    .filter(Boolean);
  if (audiences.length === 0) {
    throw new UsageError(`${ENV.jwtIssuer} is set: ${ENV.jwtAudience} must name the accepted audiences`);
  }
  return { issuer: httpUrl(issuer, ENV.jwtIssuer), audiences };
}

/** An http(s) URL from the environment, or a usage error naming the variable. */
function httpUrl(text: string, name: string): string {
  try {
    const url = new URL(text);
    if (url.protocol === 'http:' || url.protocol === 'https:') return text;
  } catch {
    // answered below
  }
  throw new UsageError(`${name}: expected an http(s) URL, got ${JSON.stringify(text.slice(0, 200))}`);
}
