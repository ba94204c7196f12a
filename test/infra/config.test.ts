import { readFileSync } from 'node:fs';
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
      otlp: { endpoint: 'xray', captureContent: false },
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

  describe('without crumbs:jwtIssuer: the stack’s own user pool', () => {
    const { 'crumbs:jwtIssuer': _i, 'crumbs:jwtAudience': _a, 'crumbs:workspacesClaim': _c, ...bare } = VALID;

    it('signs people in to a user pool whose groups are the workspaces, tokens good for 15 minutes', () => {
      const config = read(bare);
      expect(config).not.toHaveProperty('jwtIssuer');
      expect(config).toMatchObject({
        jwtAudience: [],
        workspacesClaim: 'cognito:groups',
        userPool: { tokenValidityMinutes: 15 },
      });
      expect(read({ ...bare, 'crumbs:workspacesClaim': 'cognito:groups' }).workspacesClaim).toBe(
        'cognito:groups',
      );
    });

    it('reads crumbs:tokenValidityMinutes, and refuses one outside 5 to 1440', () => {
      expect(read({ ...bare, 'crumbs:tokenValidityMinutes': '60' }).userPool).toEqual({
        tokenValidityMinutes: 60,
      });
      for (const bad of [4, 1441, 7.5, 'soon']) {
        expect(() => read({ ...bare, 'crumbs:tokenValidityMinutes': bad })).toThrow(
          /"crumbs:tokenValidityMinutes" must be a whole number of minutes from 5 to 1440/,
        );
      }
    });

    it('refuses settings that belong to an issuer instead of ignoring them', () => {
      expect(() => read({ ...bare, 'crumbs:jwtAudience': 'crumbs-api' })).toThrow(
        /"crumbs:jwtAudience" names audiences of an issuer; without "crumbs:jwtIssuer" the stack creates a Cognito user pool/,
      );
      expect(() => read({ ...bare, 'crumbs:signInClientId': 'abc' })).toThrow(/"crumbs:signInClientId"/);
      expect(() => read({ ...bare, 'crumbs:workspacesClaim': 'crumbs:workspaces' })).toThrow(
        /the user pool's workspaces are its groups \(cognito:groups\)/,
      );
    });

    it('is what cdk.json gives: it holds no issuer, no audience and no placeholder', () => {
      const cdkJson = JSON.parse(readFileSync(new URL('../../cdk.json', import.meta.url), 'utf8')) as {
        context: Record<string, unknown>;
      };
      expect(JSON.stringify(cdkJson)).not.toMatch(/EXAMPLE|jwtIssuer|jwtAudience|example\.com/);
      expect(read(cdkJson.context).userPool).toEqual({ tokenValidityMinutes: 15 });
    });
  });

  describe('with crumbs:jwtIssuer', () => {
    it('needs its audiences, and reads the workspaces claim as crumbs:workspaces unless one is named', () => {
      const { 'crumbs:jwtAudience': _a, 'crumbs:workspacesClaim': _c, ...issuerOnly } = VALID;
      expect(() => read(issuerOnly)).toThrow(/"crumbs:jwtAudience" is required with "crumbs:jwtIssuer"/);
      const config = read({ ...issuerOnly, 'crumbs:jwtAudience': 'crumbs-api' });
      expect(config.workspacesClaim).toBe('crumbs:workspaces');
      expect(config).not.toHaveProperty('userPool');
    });

    it('takes a sign-in client that is one of the audiences, and refuses one that is not', () => {
      expect(read({ ...VALID, 'crumbs:signInClientId': 'crumbs-cli' }).signInClientId).toBe('crumbs-cli');
      expect(() => read({ ...VALID, 'crumbs:signInClientId': 'other' })).toThrow(
        /"crumbs:signInClientId" is "other", which is not one of "crumbs:jwtAudience" \(crumbs-api, crumbs-cli\)/,
      );
    });

    it('refuses crumbs:tokenValidityMinutes: the issuer sets its own lifetimes', () => {
      expect(() => read({ ...VALID, 'crumbs:tokenValidityMinutes': 30 })).toThrow(
        /applies only to the user pool crumbs creates/,
      );
    });
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
