import { App } from 'aws-cdk-lib';
import { describe, expect, it } from 'vitest';
import { DEFAULT_LLM_SECRET_PREFIX, readConfig } from '#infra/config.ts';
import { TENANT_LIMITS } from '#shared/topology.ts';

const VALID = {
  'crumbs:stage': 'dev',
  'crumbs:jwtIssuer': 'https://issuer.example.com/',
  'crumbs:jwtAudience': 'crumbs-api, crumbs-cli',
  'crumbs:workspacesClaim': 'crumbs:workspaces',
};

const read = (context: Record<string, unknown>) => readConfig(new App({ context }).node);

describe('readConfig', () => {
  it('reads the crumbs context, splitting a comma-separated audience', () => {
    expect(read(VALID)).toEqual({
      stage: 'dev',
      buses: 1,
      jwtIssuer: 'https://issuer.example.com/',
      jwtAudience: ['crumbs-api', 'crumbs-cli'],
      workspacesClaim: 'crumbs:workspaces',
      llmSecretPrefix: DEFAULT_LLM_SECRET_PREFIX,
      defaultLlmProvider: 'bedrock',
      modelAliases: {},
      workspaceQuotas: { definitions: 150, rules: 75 },
      tenantLimits: { ...TENANT_LIMITS },
      retainData: false,
      apiThrottle: { rateLimit: 500, burstLimit: 1000 },
      embeddings: { kind: 'bedrock', model: 'amazon.titan-embed-text-v2:0' },
    });
  });

  it('takes the default LLM provider from crumbs:defaultLlmProvider and refuses one that is not a provider', () => {
    expect(read({ ...VALID, 'crumbs:defaultLlmProvider': 'openrouter' }).defaultLlmProvider).toBe(
      'openrouter',
    );
    expect(() => read({ ...VALID, 'crumbs:defaultLlmProvider': 'gpt' })).toThrow(
      /crumbs:defaultLlmProvider.*bedrock.*"gpt"/,
    );
  });

  it('reads crumbs:modelAliases as a JSON object or its text, and refuses a target without a provider', () => {
    const aliases = { 'gpt-4': 'openai/gpt-4o' };
    expect(read({ ...VALID, 'crumbs:modelAliases': aliases }).modelAliases).toEqual(aliases);
    expect(read({ ...VALID, 'crumbs:modelAliases': JSON.stringify(aliases) }).modelAliases).toEqual(aliases);
    expect(() => read({ ...VALID, 'crumbs:modelAliases': { 'gpt-4': 'gpt-4o' } })).toThrow(
      /"crumbs:modelAliases" must be a JSON object.*expected <provider>\/<model id>/,
    );
  });

  it('reads crumbs:llmPrices as a JSON object or its text, and refuses a price that is not one', () => {
    const prices = { 'openai/gpt-4o': { input: 2.5, output: 10 } };
    expect(read({ ...VALID, 'crumbs:llmPrices': prices }).llmPrices).toBe(JSON.stringify(prices));
    expect(read({ ...VALID, 'crumbs:llmPrices': JSON.stringify(prices) }).llmPrices).toBe(
      JSON.stringify(prices),
    );
    expect(() => read({ ...VALID, 'crumbs:llmPrices': { 'openai/gpt-4o': { input: 'cheap' } } })).toThrow(
      /"crumbs:llmPrices" must be a JSON object/,
    );
  });

  it('refuses the retired Powertools layer settings instead of ignoring them', () => {
    expect(() => read({ ...VALID, 'crumbs:powertools': 'layer' })).toThrow(
      /"crumbs:powertools" is no longer read: Powertools is bundled into every function/,
    );
    const arn = 'arn:aws:lambda:eu-west-1:094274105915:layer:AWSLambdaPowertoolsTypeScriptV2:40';
    expect(() => read({ ...VALID, 'crumbs:powertoolsLayerArn': arn })).toThrow(
      /"crumbs:powertoolsLayerArn" is no longer read/,
    );
  });

  it('takes the LLM secret name prefix from crumbs:llmSecretName when given', () => {
    expect(read({ ...VALID, 'crumbs:llmSecretName': 'team-a/llm/' }).llmSecretPrefix).toBe('team-a/llm/');
  });

  it('refuses to synthesize without an issuer, naming the context key to set', () => {
    const { 'crumbs:jwtIssuer': _issuer, ...rest } = VALID;
    expect(() => read(rest)).toThrow(/crumbs:jwtIssuer.*required/);
  });

  it('reads the response ceiling from crumbs:maxResponseBytes, absent by default, and refuses one out of range', () => {
    expect(read(VALID)).not.toHaveProperty('maxResponseBytes');
    expect(read({ ...VALID, 'crumbs:maxResponseBytes': '1048576' }).maxResponseBytes).toBe(1048576);
    for (const bad of [0, 512, 'lots', 2 ** 31]) {
      expect(() => read({ ...VALID, 'crumbs:maxResponseBytes': bad })).toThrow(/crumbs:maxResponseBytes/);
    }
  });

  it("reads single workspaces' own quotas from crumbs:workspaceQuotas (an object or its JSON), and refuses a bad one", () => {
    expect(read(VALID).workspaceQuotas).not.toHaveProperty('workspaces');
    const own = { 'big-team': { rules: 500 } };
    expect(read({ ...VALID, 'crumbs:workspaceQuotas': own }).workspaceQuotas.workspaces).toEqual(own);
    expect(
      read({ ...VALID, 'crumbs:workspaceQuotas': JSON.stringify(own) }).workspaceQuotas.workspaces,
    ).toEqual(own);
    for (const bad of ['[1]', { 'no spaces allowed': { rules: 1 } }, { team: { rules: 0 } }]) {
      expect(() => read({ ...VALID, 'crumbs:workspaceQuotas': bad })).toThrow(/crumbs:workspaceQuotas/);
    }
  });

  it('reads the size of the bus pool from crumbs:buses (a number or a string), and refuses one out of range', () => {
    expect(read({ ...VALID, 'crumbs:buses': 3 }).buses).toBe(3);
    expect(read({ ...VALID, 'crumbs:buses': '4' }).buses).toBe(4);
    for (const bad of [0, 21, 1.5, 'many']) {
      expect(() => read({ ...VALID, 'crumbs:buses': bad })).toThrow(
        /"crumbs:buses" must be a whole number from 1 to 20/,
      );
    }
  });

  it('refuses a non-https issuer and a stage that cannot be part of resource names', () => {
    expect(() => read({ ...VALID, 'crumbs:jwtIssuer': 'http://issuer' })).toThrow(/https:\/\//);
    expect(() => read({ ...VALID, 'crumbs:stage': 'Prod_1' })).toThrow(/crumbs:stage/);
  });
});
