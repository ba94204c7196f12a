/**
 * `crumbs doctor` against mocked accounts (aws-sdk-client-mock at the SDK boundary): a ready account passes every
 * line; each way an account falls short fails its line with what to do — not bootstrapped, an old bootstrap, a model
 * not offered in the region, denied by policy, without entitlement, with the provider's form not submitted, an
 * unknown model id, EventBridge's rules-per-bus quota below what crumbs assumes, a Lambda concurrency quota of a new
 * account, a reservation Lambda would refuse, AppSync Events missing from the region, an issuer that does not answer
 * or names itself differently, a configuration that does not read. Also the command's output and exit code.
 */
import { AppSyncClient, ListApisCommand } from '@aws-sdk/client-appsync';
import { BedrockClient, GetFoundationModelAvailabilityCommand } from '@aws-sdk/client-bedrock';
import {
  ListAWSDefaultServiceQuotasCommand,
  ListServiceQuotasCommand,
  ServiceQuotasClient,
} from '@aws-sdk/client-service-quotas';
import { GetParameterCommand, SSMClient } from '@aws-sdk/client-ssm';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { setDoctorDeps } from '#cli/commands/doctor.ts';
import { type DoctorDeps, type DoctorLine, executorConcurrency, runDoctor } from '#cli/doctor.ts';
import { main } from '#cli/main.ts';
import type { CrumbsConfig } from '#infra/config.ts';
import { TENANT_LIMITS } from '#shared/topology.ts';

const ssm = mockClient(SSMClient);
const bedrock = mockClient(BedrockClient);
const quotas = mockClient(ServiceQuotasClient);
const appsync = mockClient(AppSyncClient);

const ISSUER = 'https://issuer.example.com/pool';

function config(overrides: Partial<CrumbsConfig> = {}): CrumbsConfig {
  return {
    stage: 'dev',
    buses: 2,
    jwtIssuer: ISSUER,
    jwtAudience: ['crumbs-api'],
    workspacesClaim: 'crumbs:workspaces',
    llmSecretPrefix: 'crumbs/llm/',
    defaultLlmProvider: 'bedrock',
    modelAliases: {},
    workspaceQuotas: { definitions: 150, rules: 75 },
    tenantLimits: { ...TENANT_LIMITS },
    retainData: false,
    apiThrottle: { rateLimit: 500, burstLimit: 1000 },
    embeddings: { kind: 'bedrock', model: 'amazon.titan-embed-text-v2:0' },
    ...overrides,
  } as CrumbsConfig;
}

function issuerFetch(doc: unknown, status = 200): typeof fetch {
  return async () =>
    new Response(JSON.stringify(doc), { status, headers: { 'content-type': 'application/json' } });
}

function deps(
  fetchFn: typeof fetch = issuerFetch({ issuer: ISSUER, jwks_uri: `${ISSUER}/keys` }),
): DoctorDeps {
  const region = 'eu-west-1';
  return {
    region,
    ssm: new SSMClient({ region }),
    bedrock: new BedrockClient({ region }),
    quotas: new ServiceQuotasClient({ region }),
    appsync: new AppSyncClient({ region }),
    fetch: fetchFn,
  };
}

const AVAILABLE = {
  modelId: 'm',
  agreementAvailability: { status: 'AVAILABLE' as const },
  authorizationStatus: 'AUTHORIZED' as const,
  entitlementAvailability: 'AVAILABLE' as const,
  regionAvailability: 'AVAILABLE' as const,
};

function readyAccount(): void {
  ssm.on(GetParameterCommand).resolves({ Parameter: { Value: '27' } });
  bedrock.on(GetFoundationModelAvailabilityCommand).resolves(AVAILABLE);
  quotas
    .on(ListServiceQuotasCommand, { ServiceCode: 'events' })
    .resolves({ Quotas: [{ QuotaName: 'Rules per event bus', Value: 300 }] })
    .on(ListServiceQuotasCommand, { ServiceCode: 'lambda' })
    .resolves({ Quotas: [] })
    .on(ListAWSDefaultServiceQuotasCommand, { ServiceCode: 'lambda' })
    .resolves({ Quotas: [{ QuotaName: 'Concurrent executions', Value: 1000 }] });
  appsync.on(ListApisCommand).resolves({ apis: [] });
}

function awsError(name: string, message: string): Error {
  return Object.assign(new Error(message), { name, $metadata: {} });
}

const line = (lines: DoctorLine[], name: string) => lines.find((l) => l.name === name);

beforeEach(() => {
  ssm.reset();
  bedrock.reset();
  quotas.reset();
  appsync.reset();
  readyAccount();
});

afterEach(() => setDoctorDeps(() => deps()));

describe('crumbs doctor on a ready account', () => {
  it('passes every line, naming what it found', async () => {
    const lines = await runDoctor(config(), deps());
    expect(lines.map((l) => [l.name, l.status])).toEqual([
      ['configuration', 'ok'],
      ['cdk bootstrap', 'ok'],
      ['bedrock default agent model', 'ok'],
      ['bedrock embedding model', 'ok'],
      ['eventbridge rules per bus', 'ok'],
      ['lambda concurrent executions', 'ok'],
      ['appsync events', 'ok'],
      ['jwt issuer', 'ok'],
    ]);
    expect(line(lines, 'cdk bootstrap')?.detail).toContain('version 27');
    expect(line(lines, 'bedrock default agent model')?.detail).toContain('amazon.nova-lite-v1:0');
    expect(line(lines, 'eventbridge rules per bus')?.detail).toContain('598 definitions');
    expect(line(lines, 'lambda concurrent executions')?.detail).toContain(`at most ${executorConcurrency()}`);
    expect(
      bedrock.commandCalls(GetFoundationModelAvailabilityCommand).map((c) => c.args[0].input.modelId),
    ).toEqual(['amazon.nova-lite-v1:0', 'amazon.titan-embed-text-v2:0']);
  });

  it('checks no Bedrock model the configuration does not name (embeddings off, agents on another provider)', async () => {
    const lines = await runDoctor(
      config({ embeddings: { kind: 'none' }, defaultLlmProvider: 'openai' }),
      deps(),
    );
    expect(lines.filter((l) => l.name.startsWith('bedrock'))).toEqual([]);
    expect(bedrock.commandCalls(GetFoundationModelAvailabilityCommand)).toHaveLength(0);
  });
});

describe('crumbs doctor on accounts that fall short', () => {
  it('says to bootstrap when the region is not, and to bootstrap again when it is too old', async () => {
    ssm.on(GetParameterCommand).rejects(awsError('ParameterNotFound', 'not found'));
    let l = line(await runDoctor(config(), deps()), 'cdk bootstrap');
    expect(l).toMatchObject({ status: 'failed', detail: 'eu-west-1 is not bootstrapped for the CDK' });
    expect(l?.fix).toContain('npx cdk bootstrap aws://<account-id>/eu-west-1');
    ssm.on(GetParameterCommand).resolves({ Parameter: { Value: '4' } });
    l = line(await runDoctor(config(), deps()), 'cdk bootstrap');
    expect(l).toMatchObject({ status: 'failed', detail: expect.stringContaining('bootstrap version 4') });
  });

  it.each([
    [
      { regionAvailability: 'NOT_AVAILABLE' },
      /not offered in eu-west-1/,
      /region that has it, or .*crumbs:defaultModel/,
    ],
    [{ authorizationStatus: 'NOT_AUTHORIZED' }, /not authorized .*SCP/, /bedrock:InvokeModel/],
    [{ entitlementAvailability: 'NOT_AVAILABLE' }, /no access/, /Marketplace permissions/],
    [
      { agreementAvailability: { status: 'NOT_AVAILABLE', errorMessage: 'use case form required' } },
      /agreement is not available \(use case form required\)/,
      /first-use form/,
    ],
    [{ agreementAvailability: { status: 'PENDING' } }, /agreement is pending/, /wait for the provider/],
  ])('fails the model line when Bedrock says %j', async (answer, detail, fix) => {
    bedrock
      .on(GetFoundationModelAvailabilityCommand)
      .resolves({ ...AVAILABLE, ...answer } as typeof AVAILABLE);
    const l = line(await runDoctor(config(), deps()), 'bedrock default agent model');
    expect(l?.status).toBe('failed');
    expect(l?.detail).toMatch(detail);
    expect(l?.fix).toMatch(fix);
  });

  it('checks an inference profile id as its model, and fails an unknown model id', async () => {
    bedrock
      .on(GetFoundationModelAvailabilityCommand, { modelId: 'anthropic.claude-3-5-haiku-20241022-v1:0' })
      .resolves(AVAILABLE)
      .on(GetFoundationModelAvailabilityCommand, { modelId: 'amazon.titan-embed-text-v9:0' })
      .rejects(awsError('ValidationException', 'The provided model identifier is invalid.'));
    const lines = await runDoctor(
      config({
        modelAliases: { default: 'bedrock/us.anthropic.claude-3-5-haiku-20241022-v1:0' },
        embeddings: { kind: 'bedrock', model: 'amazon.titan-embed-text-v9:0' },
      }),
      deps(),
    );
    expect(line(lines, 'bedrock default agent model')).toMatchObject({
      status: 'ok',
      detail: expect.stringContaining('inference profile of anthropic.claude-3-5-haiku-20241022-v1:0'),
    });
    expect(line(lines, 'bedrock embedding model')).toMatchObject({
      status: 'failed',
      detail: expect.stringContaining('knows no such model'),
      fix: expect.stringContaining('crumbs:embeddings'),
    });
  });

  it('warns when the rules-per-bus quota is below what the pool assumes (af-south-1: 100)', async () => {
    quotas
      .on(ListServiceQuotasCommand, { ServiceCode: 'events' })
      .resolves({ Quotas: [] })
      .on(ListAWSDefaultServiceQuotasCommand, { ServiceCode: 'events' })
      .resolves({ Quotas: [{ QuotaName: 'Rules per event bus', Value: 100 }] });
    const l = line(await runDoctor(config({ buses: 2 }), deps()), 'eventbridge rules per bus');
    expect(l).toMatchObject({
      status: 'warning',
      detail: expect.stringContaining('2 buses hold 198 definitions'),
    });
    expect(l?.fix).toContain('crumbs:buses=6');
  });

  it("fails a new account's Lambda concurrency of 10, and a reservation that leaves fewer than 100 unreserved", async () => {
    quotas
      .on(ListServiceQuotasCommand, { ServiceCode: 'lambda' })
      .resolves({ Quotas: [{ QuotaName: 'Concurrent executions', Value: 10 }] });
    let l = line(await runDoctor(config(), deps()), 'lambda concurrent executions');
    expect(l).toMatchObject({ status: 'failed', detail: expect.stringContaining('10:') });
    expect(l?.fix).toContain('request "Concurrent executions" of 1000');
    quotas
      .on(ListServiceQuotasCommand, { ServiceCode: 'lambda' })
      .resolves({ Quotas: [{ QuotaName: 'Concurrent executions', Value: 1000 }] });
    l = line(
      await runDoctor(config({ apiReservedConcurrency: 950 }), deps()),
      'lambda concurrent executions',
    );
    expect(l).toMatchObject({ status: 'failed', detail: expect.stringContaining('leaves 50 unreserved') });
    expect(l?.fix).toContain('at most 900');
  });

  it('fails AppSync Events in a region that does not offer it', async () => {
    appsync
      .on(ListApisCommand)
      .rejects(awsError('UnknownEndpoint', 'Inaccessible host: appsync.xx-east-9.amazonaws.com'));
    const l = line(await runDoctor(config(), deps()), 'appsync events');
    expect(l).toMatchObject({
      status: 'failed',
      detail: expect.stringContaining('not available in eu-west-1'),
    });
  });

  it('fails an issuer that does not answer, or whose discovery document names another issuer', async () => {
    let l = line(await runDoctor(config(), deps(issuerFetch({}, 404))), 'jwt issuer');
    expect(l).toMatchObject({ status: 'failed', detail: expect.stringContaining('answered 404') });
    l = line(
      await runDoctor(config(), deps(issuerFetch({ issuer: `${ISSUER}/`, jwks_uri: 'x' }))),
      'jwt issuer',
    );
    expect(l).toMatchObject({
      status: 'failed',
      fix: expect.stringContaining(`crumbs:jwtIssuer=${ISSUER}/`),
    });
    l = line(
      await runDoctor(
        config(),
        deps(async () => Promise.reject(new TypeError('fetch failed'))),
      ),
      'jwt issuer',
    );
    expect(l).toMatchObject({ status: 'failed', detail: expect.stringContaining('could not be read') });
  });

  it('says what is wrong with credentials that do not work', async () => {
    ssm.on(GetParameterCommand).rejects(awsError('CredentialsProviderError', 'Could not load credentials'));
    const l = line(await runDoctor(config(), deps()), 'cdk bootstrap');
    expect(l?.fix).toContain('aws sts get-caller-identity');
  });
});

describe('the crumbs doctor command', () => {
  const run = async (args: string[], env: NodeJS.ProcessEnv = { AWS_REGION: 'eu-west-1' }) => {
    let out = '';
    let err = '';
    const code = await main(['doctor', ...args], {
      stdout: (s) => {
        out += s;
      },
      stderr: (s) => {
        err += s;
      },
      env,
      stdoutIsTerminal: false,
    });
    return { code, out, err };
  };

  it('prints ✓ lines and exits 0 on a ready account, reading cdk.json with -c values over it', async () => {
    setDoctorDeps(() => deps());
    const { code, out } = await run(['-c', 'crumbs:stage=prod', '-c', `crumbs:jwtIssuer=${ISSUER}`]);
    expect(out).toContain('✓ configuration');
    expect(out).toContain('stage prod');
    expect(out).toContain('crumbs doctor: ready to deploy to eu-west-1');
    expect(code).toBe(0);
  });

  it('prints ✗ with what to do and exits 1 when a check fails; --json prints the report', async () => {
    setDoctorDeps(() => deps());
    ssm.on(GetParameterCommand).rejects(awsError('ParameterNotFound', 'not found'));
    const { code, out, err } = await run(['-c', `crumbs:jwtIssuer=${ISSUER}`]);
    expect(out).toMatch(/✗ cdk bootstrap\s+eu-west-1 is not bootstrapped/);
    expect(out).toContain('→ run npx cdk bootstrap');
    expect(err).toContain('1 to fix before cdk deploy');
    expect(code).toBe(1);
    const json = await run(['--json', '-c', `crumbs:jwtIssuer=${ISSUER}`]);
    expect(JSON.parse(json.out)).toMatchObject({ region: 'eu-west-1', checks: expect.any(Array) });
  });

  it('fails the configuration line on a context that does not read, and asks for a region when none is set', async () => {
    setDoctorDeps(() => deps());
    const bad = await run(['-c', 'crumbs:buses=99']);
    expect(bad.out).toMatch(/✗ configuration\s+CDK context "crumbs:buses" must be a whole number/);
    expect(bad.code).toBe(1);
    const noRegion = await run([], {});
    expect(noRegion.code).toBe(2);
    expect(noRegion.err).toContain('--region');
  });
});
