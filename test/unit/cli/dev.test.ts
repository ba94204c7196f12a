import { beforeEach, describe, expect, it, vi } from 'vitest';
import { type CliIo, main } from '#cli/main.ts';
import type { LocalStackOptions } from '#local/stack.ts';

const stack = vi.hoisted(() => ({
  startLocalStack: vi.fn(),
  stop: vi.fn(async () => {}),
}));

vi.mock('#local/stack.ts', () => ({ startLocalStack: stack.startLocalStack }));

function harness(env: NodeJS.ProcessEnv = {}) {
  const out = { stdout: '', stderr: '' };
  const handlers: ((signal: NodeJS.Signals) => void)[] = [];
  const exits: number[] = [];
  const io: CliIo = {
    stdout: (s) => {
      out.stdout += s;
    },
    stderr: (s) => {
      out.stderr += s;
    },
    env,
    onSignal: (handler) => {
      handlers.push(handler);
      return () => handlers.splice(handlers.indexOf(handler), 1);
    },
    exit: (code) => {
      exits.push(code);
    },
  };
  const signal = (name: NodeJS.Signals) => {
    for (const handler of [...handlers]) handler(name);
  };
  return { io, out, handlers, exits, signal };
}

const ENDPOINTS = {
  api: 'http://127.0.0.1:4710',
  dynamodb: 'http://127.0.0.1:4711',
  sqs: 'http://127.0.0.1:4712',
  eventbridge: 'http://127.0.0.1:4713',
  scheduler: 'http://127.0.0.1:4714',
};

beforeEach(() => {
  stack.stop.mockReset();
  stack.stop.mockImplementation(async () => {});
  stack.startLocalStack.mockReset();
  stack.startLocalStack.mockImplementation(async (options: LocalStackOptions) => {
    options.log?.('dynamodb local started');
    return {
      endpoints: ENDPOINTS,
      token: 'secret-token',
      dashboard: 'http://127.0.0.1:4710/ui/#token=secret-token&workspace=demo',
      warnings: [],
      stop: stack.stop,
    };
  });
});

/** Waits until the command has printed that it is ready. */
async function ready(out: { stdout: string }): Promise<void> {
  await vi.waitFor(() => expect(out.stdout).toContain('Press Ctrl-C to stop.'));
}

describe('crumbs dev', () => {
  it('prints the endpoints, the token and an export line, then stops on SIGTERM and exits 0', async () => {
    const h = harness();
    const running = main(['dev'], h.io);
    await ready(h.out);
    expect(h.out.stdout).toMatch(/^ {2}api\s+http:\/\/127\.0\.0\.1:4710$/m);
    expect(h.out.stdout).toMatch(/^ {2}dynamodb\s+http:\/\/127\.0\.0\.1:4711$/m);
    expect(h.out.stdout).toMatch(/^ {2}sqs\s+http:\/\/127\.0\.0\.1:4712$/m);
    expect(h.out.stdout).toMatch(/^ {2}eventbridge\s+http:\/\/127\.0\.0\.1:4713$/m);
    expect(h.out.stdout).toMatch(/^ {2}token\s+secret-token$/m);
    // The CLI's export line names the workspace the dashboard opens on.
    expect(h.out.stdout).toContain(
      'export CRUMBS_ENDPOINT=http://127.0.0.1:4710 CRUMBS_TOKEN=secret-token CRUMBS_WORKSPACE=demo',
    );
    expect(h.out.stdout).toContain('Dashboard: http://127.0.0.1:4710/ui/#token=secret-token&workspace=demo');
    expect(h.out.stderr).toContain('dynamodb local started');
    expect(stack.stop).not.toHaveBeenCalled();

    h.signal('SIGTERM');
    expect(await running).toBe(0);
    expect(stack.stop).toHaveBeenCalledTimes(1);
    expect(h.out.stderr).toContain('stopping…');
    expect(h.out.stderr).toContain('stopped');
    expect(h.handlers).toHaveLength(0);
  });

  it('uses default ports, then env ports, then flag ports, and passes host, data dir and token', async () => {
    const defaults = harness();
    const first = main(['dev'], defaults.io);
    await ready(defaults.out);
    defaults.signal('SIGINT');
    await first;
    expect(stack.startLocalStack).toHaveBeenLastCalledWith(
      expect.objectContaining({ apiPort: 4710, dynamodbPort: 4711, sqsPort: 4712, eventbridgePort: 4713 }),
    );

    const h = harness({ CRUMBS_PORT: '5710', CRUMBS_SQS_PORT: '5712', CRUMBS_TOKEN: 'env-token' });
    const second = main(
      [
        'dev',
        '--port',
        '6710',
        '--dynamodb-port',
        '6711',
        '--host',
        '0.0.0.0',
        '--data-dir',
        '/tmp/crumbs-data',
      ],
      h.io,
    );
    await ready(h.out);
    h.signal('SIGINT');
    expect(await second).toBe(0);
    expect(stack.startLocalStack).toHaveBeenLastCalledWith(
      expect.objectContaining({
        apiPort: 6710,
        dynamodbPort: 6711,
        sqsPort: 5712,
        eventbridgePort: 4713,
        host: '0.0.0.0',
        dataDir: '/tmp/crumbs-data',
        token: 'env-token',
      }),
    );
  });

  it("passes an issuer's JWTs (as --oidc-issuer) and the public URL from the environment, and refuses an issuer without audiences", async () => {
    const h = harness({
      CRUMBS_JWT_ISSUER: 'http://127.0.0.1:9000/pool',
      CRUMBS_JWT_AUDIENCE: 'client-a, client-b',
      CRUMBS_API_URL: 'https://tunnel.example.com',
    });
    const running = main(['dev'], h.io);
    await ready(h.out);
    h.signal('SIGINT');
    expect(await running).toBe(0);
    expect(stack.startLocalStack).toHaveBeenLastCalledWith(
      expect.objectContaining({
        oidc: { issuer: 'http://127.0.0.1:9000/pool', audiences: ['client-a', 'client-b'] },
        publicUrl: 'https://tunnel.example.com',
      }),
    );
    const bad = harness({ CRUMBS_JWT_ISSUER: 'http://127.0.0.1:9000/pool' });
    expect(await main(['dev'], bad.io)).toBe(2);
    expect(bad.out.stderr).toContain('CRUMBS_JWT_AUDIENCE must name the accepted audiences');
    const notUrl = harness({ CRUMBS_API_URL: 'tunnel' });
    expect(await main(['dev'], notUrl.io)).toBe(2);
    expect(notUrl.out.stderr).toContain('CRUMBS_API_URL: expected an http(s) URL');
  });

  it('takes an OIDC issuer to sign in with (--oidc-issuer, its client an audience), and prints it', async () => {
    const h = harness();
    const running = main(
      [
        'dev',
        '--oidc-issuer',
        'https://login.example.com/',
        '--oidc-client-id',
        'crumbs-cli',
        '--oidc-audience',
        'crumbs-api, crumbs-cli',
        '--workspaces-claim',
        'cognito:groups',
      ],
      h.io,
    );
    await ready(h.out);
    expect(h.out.stdout).toContain(
      'sign-in      https://login.example.com/ (client crumbs-cli): crumbs login, or Sign in on the dashboard',
    );
    h.signal('SIGINT');
    expect(await running).toBe(0);
    expect(stack.startLocalStack).toHaveBeenLastCalledWith(
      expect.objectContaining({
        oidc: {
          issuer: 'https://login.example.com/',
          audiences: ['crumbs-cli', 'crumbs-api'],
          clientId: 'crumbs-cli',
          workspacesClaim: 'cognito:groups',
        },
      }),
    );
  });

  it.each([
    [['--oidc-client-id', 'c'], '--oidc-client-id needs --oidc-issuer'],
    [['--oidc-issuer', 'https://login.example.com'], '--oidc-issuer needs --oidc-client-id'],
    [
      ['--oidc-issuer', 'login.example.com', '--oidc-client-id', 'c'],
      "--oidc-issuer: expected the issuer's http(s) URL",
    ],
  ])('refuses %j as a usage error before starting anything', async (args, message) => {
    const h = harness();
    expect(await main(['dev', ...args], h.io)).toBe(2);
    expect(h.out.stderr).toContain(message);
    expect(stack.startLocalStack).not.toHaveBeenCalled();
  });

  it('prints the start failure and exits 1 when the stack cannot start', async () => {
    stack.startLocalStack.mockRejectedValueOnce(
      new Error(
        'port 4711 (DynamoDB Local) is already in use; pass --dynamodb-port or set CRUMBS_DYNAMODB_PORT',
      ),
    );
    const h = harness();
    expect(await main(['dev'], h.io)).toBe(1);
    expect(h.out.stderr).toContain('port 4711 (DynamoDB Local) is already in use');
    expect(h.out.stdout).toBe('');
    expect(h.handlers).toHaveLength(0);
  });

  it('exits at once with 130 on a second signal while stopping hangs', async () => {
    let finishStop: () => void = () => {};
    stack.stop.mockImplementation(
      () =>
        new Promise<void>((resolve) => {
          finishStop = resolve;
        }),
    );
    const h = harness();
    const running = main(['dev'], h.io);
    await ready(h.out);
    h.signal('SIGINT');
    await vi.waitFor(() => expect(stack.stop).toHaveBeenCalled());
    h.signal('SIGINT');
    expect(h.exits).toEqual([130]);
    finishStop();
    await running;
  });

  it('rejects a bad port with exit 2 before starting anything', async () => {
    const h = harness({ CRUMBS_EVENTBRIDGE_PORT: 'abc' });
    expect(await main(['dev'], h.io)).toBe(2);
    expect(h.out.stderr).toContain('CRUMBS_EVENTBRIDGE_PORT: expected an integer');
    const flag = harness();
    expect(await main(['dev', '--port', '70000'], flag.io)).toBe(2);
    expect(flag.out.stderr).toContain('--port: expected an integer from 0 to 65535');
    expect(stack.startLocalStack).not.toHaveBeenCalled();
  });

  it('passes --buses and --rules-per-bus (or CRUMBS_BUSES, CRUMBS_RULES_PER_BUS) to the stack, and refuses bad ones', async () => {
    const h = harness({ CRUMBS_RULES_PER_BUS: '10' });
    const running = main(['dev', '--buses', '4'], h.io);
    await ready(h.out);
    h.signal('SIGINT');
    expect(await running).toBe(0);
    expect(stack.startLocalStack).toHaveBeenLastCalledWith(
      expect.objectContaining({ buses: 4, rulesPerBus: 10 }),
    );
    const bad = harness();
    expect(await main(['dev', '--buses', '21'], bad.io)).toBe(2);
    expect(bad.out.stderr).toContain('--buses: expected an integer from 1 to 20');
    const badEnv = harness({ CRUMBS_RULES_PER_BUS: '0' });
    expect(await main(['dev'], badEnv.io)).toBe(2);
    expect(badEnv.out.stderr).toContain('CRUMBS_RULES_PER_BUS: expected an integer from 1');
  });

  it('passes the per-workspace quotas (flags or env) to the stack, and refuses bad ones', async () => {
    const h = harness({ CRUMBS_MAX_RULES_PER_WORKSPACE: '7' });
    const running = main(['dev', '--max-definitions-per-workspace', '12'], h.io);
    await ready(h.out);
    h.signal('SIGINT');
    expect(await running).toBe(0);
    expect(stack.startLocalStack).toHaveBeenLastCalledWith(
      expect.objectContaining({ maxDefinitionsPerWorkspace: 12, maxRulesPerWorkspace: 7 }),
    );
    const bad = harness();
    expect(await main(['dev', '--max-rules-per-workspace', '0'], bad.io)).toBe(2);
    expect(bad.out.stderr).toContain('--max-rules-per-workspace: expected an integer from 1');
  });

  it('passes the secrets file (--secrets or CRUMBS_SECRETS_FILE) and CRUMBS_SECRETS to the stack', async () => {
    const h = harness({ CRUMBS_SECRETS: '{"team-a":{"partner-token":"s3cret"}}' });
    const running = main(['dev', '--secrets', '/tmp/crumbs-secrets.json'], h.io);
    await ready(h.out);
    h.signal('SIGINT');
    expect(await running).toBe(0);
    expect(stack.startLocalStack).toHaveBeenLastCalledWith(
      expect.objectContaining({
        secretsFile: '/tmp/crumbs-secrets.json',
        secrets: { 'team-a': { 'partner-token': 's3cret' } },
      }),
    );
    const fromEnv = harness({ CRUMBS_SECRETS_FILE: '/tmp/other.json' });
    const again = main(['dev'], fromEnv.io);
    await ready(fromEnv.out);
    fromEnv.signal('SIGINT');
    expect(await again).toBe(0);
    expect(stack.startLocalStack).toHaveBeenLastCalledWith(
      expect.objectContaining({ secretsFile: '/tmp/other.json' }),
    );
    const bad = harness({ CRUMBS_SECRETS: '{not json' });
    expect(await main(['dev'], bad.io)).toBe(2);
    expect(bad.out.stderr).toContain('CRUMBS_SECRETS: not JSON');
  });

  it('prints endpoints and token as one JSON line with --json', async () => {
    const h = harness();
    const running = main(['dev', '--json'], h.io);
    await vi.waitFor(() => expect(h.out.stdout).not.toBe(''));
    expect(JSON.parse(h.out.stdout)).toEqual({
      endpoints: ENDPOINTS,
      token: 'secret-token',
      dashboard: 'http://127.0.0.1:4710/ui/#token=secret-token&workspace=demo',
      warnings: [],
    });
    h.signal('SIGTERM');
    expect(await running).toBe(0);
  });

  it('prints what the stack warns about (a service listening beyond loopback) in the banner', async () => {
    stack.startLocalStack.mockImplementation(async () => ({
      endpoints: ENDPOINTS,
      token: 'secret-token',
      dashboard: 'http://127.0.0.1:4710/ui/#token=secret-token&workspace=demo',
      warnings: ['DynamoDB Local listens on every interface (port 4711), with no authentication: …'],
      stop: stack.stop,
    }));
    const h = harness();
    const running = main(['dev'], h.io);
    await ready(h.out);
    expect(h.out.stdout).toMatch(/^WARNING: DynamoDB Local listens on every interface \(port 4711\)/m);
    h.signal('SIGTERM');
    expect(await running).toBe(0);
  });

  it('passes scoped tokens from CRUMBS_TOKENS and --allow-private-network to the stack', async () => {
    const h = harness({ CRUMBS_TOKENS: '{"alice-token-1":["team-a"],"admin-token-2":"*"}' });
    const running = main(['dev', '--allow-private-network'], h.io);
    await ready(h.out);
    h.signal('SIGINT');
    expect(await running).toBe(0);
    const options = stack.startLocalStack.mock.lastCall![0] as LocalStackOptions;
    expect(options.allowPrivateNetwork).toBe(true);
    expect(options.scopedTokens?.map((t) => [t.token, t.workspaces])).toEqual([
      ['alice-token-1', ['team-a']],
      ['admin-token-2', '*'],
    ]);

    const fromEnv = harness({ CRUMBS_ALLOW_PRIVATE_NETWORK: '1' });
    const second = main(['dev'], fromEnv.io);
    await ready(fromEnv.out);
    fromEnv.signal('SIGINT');
    await second;
    expect((stack.startLocalStack.mock.lastCall![0] as LocalStackOptions).allowPrivateNetwork).toBe(true);
  });

  it('passes --otlp-endpoint (or CRUMBS_OTLP_ENDPOINT) to the stack, and refuses one that is not an http(s) URL', async () => {
    const h = harness({ CRUMBS_OTLP_ENDPOINT: 'http://127.0.0.1:4318/v1/traces' });
    const running = main(['dev'], h.io);
    await ready(h.out);
    h.signal('SIGINT');
    expect(await running).toBe(0);
    expect(stack.startLocalStack).toHaveBeenLastCalledWith(
      expect.objectContaining({ otlpEndpoint: 'http://127.0.0.1:4318/v1/traces' }),
    );
    const flag = harness({ CRUMBS_OTLP_ENDPOINT: 'http://ignored/v1/traces' });
    const flagged = main(['dev', '--otlp-endpoint', 'https://api.honeycomb.io/v1/traces'], flag.io);
    await ready(flag.out);
    flag.signal('SIGINT');
    expect(await flagged).toBe(0);
    expect(stack.startLocalStack).toHaveBeenLastCalledWith(
      expect.objectContaining({ otlpEndpoint: 'https://api.honeycomb.io/v1/traces' }),
    );
    const calls = stack.startLocalStack.mock.calls.length;
    const bad = harness();
    expect(await main(['dev', '--otlp-endpoint', 'grpc://collector:4317'], bad.io)).toBe(2);
    expect(bad.out.stderr).toContain('--otlp-endpoint (or CRUMBS_OTLP_ENDPOINT): expected an http(s) URL');
    expect(stack.startLocalStack.mock.calls.length).toBe(calls);
  });

  it('refuses a bad CRUMBS_MAX_RESPONSE_BYTES with exit 2, naming it, before starting anything', async () => {
    for (const value of ['lots', '12', String(2 ** 31)]) {
      const h = harness({ CRUMBS_MAX_RESPONSE_BYTES: value });
      expect(await main(['dev'], h.io), value).toBe(2);
      expect(h.out.stderr, value).toContain('CRUMBS_MAX_RESPONSE_BYTES');
    }
    expect(stack.startLocalStack).not.toHaveBeenCalled();
  });

  it('refuses bad CRUMBS_TOKENS with exit 2 and a message saying what to write, before starting anything', async () => {
    for (const [value, says] of [
      ['{not json', 'not valid JSON'],
      ['["team-a"]', 'expected a JSON object mapping token'],
      ['{"alice-token-1":"team-a"}', 'expected a list of workspace names or "*"'],
      ['{"alice-token-1":["team a"]}', 'expected a workspace name'],
      ['{"alice-token-1":[]}', 'at least one workspace'],
    ] as const) {
      const h = harness({ CRUMBS_TOKENS: value });
      expect(await main(['dev'], h.io), value).toBe(2);
      expect(h.out.stderr, value).toContain('CRUMBS_TOKENS: ');
      expect(h.out.stderr, value).toContain(says);
    }
    expect(stack.startLocalStack).not.toHaveBeenCalled();
  });
});
