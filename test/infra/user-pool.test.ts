/**
 * The templates of a first deploy with no issuer (`cdk.json`'s own context): a Cognito user pool that takes no
 * sign-ups, its managed login domain under a prefix unique to the stack, one public app client (code + PKCE, no
 * secret) with the CLI's loopback callback and the dashboard, and every place a token is checked — the front door's
 * TOKEN authorizer (its function's issuer and audiences), the AppSync Events API and its onSubscribe handler —
 * taking that client's tokens in both shapes.
 */
import { readFileSync } from 'node:fs';
import { App, Stack } from 'aws-cdk-lib';
import { Template as CdkTemplate } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { readConfig } from '#infra/config.ts';
import { CrumbsUserPool } from '#infra/constructs/user-pool.ts';
import { buildCrumbs } from '#infra/crumbs-app.ts';
import { ENV, topology } from '#shared/topology.ts';

type Json = Record<string, unknown>;
interface Resource {
  Type: string;
  Properties: Json;
  DeletionPolicy?: string;
  UpdateReplacePolicy?: string;
}
interface Template {
  Resources: Record<string, Resource>;
  Outputs: Record<string, { Value: unknown }>;
}

let stateful: Template;
let stateless: Template;

beforeAll(() => {
  const cdkJson = JSON.parse(readFileSync(new URL('../../cdk.json', import.meta.url), 'utf8')) as {
    context: Json;
  };
  const app = new App({
    context: { ...cdkJson.context, 'crumbs:stage': 'first', 'aws:cdk:bundling-stacks': [] },
  });
  const stacks = buildCrumbs(app, readConfig(app.node));
  const assembly = app.synth();
  stateful = assembly.getStackByName(stacks.stateful.stackName).template as Template;
  stateless = assembly.getStackByName(stacks.stateless.stackName).template as Template;
});

function only(template: Template, type: string): [string, Resource] {
  const found = Object.entries(template.Resources).filter(([, r]) => r.Type === type);
  expect(found, type).toHaveLength(1);
  return found[0] as [string, Resource];
}

function functionEnv(name: string): Json {
  const fn = Object.values(stateless.Resources).find(
    (r) => r.Type === 'AWS::Lambda::Function' && r.Properties.FunctionName === `crumbs-first-${name}`,
  );
  return ((fn?.Properties.Environment as Json | undefined)?.Variables ?? {}) as Json;
}

const text = (value: unknown) => JSON.stringify(value);

describe('the user pool of a stack with no issuer', () => {
  it('lives in the stateful stack and takes no sign-ups: administrators add people', () => {
    const [, pool] = only(stateful, 'AWS::Cognito::UserPool');
    expect(pool.Properties).toMatchObject({
      AdminCreateUserConfig: { AllowAdminCreateUserOnly: true },
      UsernameAttributes: ['email'],
      UserPoolTier: 'ESSENTIALS',
      MfaConfiguration: 'OPTIONAL',
    });
    expect(Object.values(stateless.Resources).some((r) => r.Type === 'AWS::Cognito::UserPool')).toBe(false);
  });

  it('goes with the stack unless crumbs:retainData keeps it, as the table', () => {
    const [, pool] = only(stateful, 'AWS::Cognito::UserPool');
    expect(pool.DeletionPolicy).toBe('Delete');
    expect(pool.Properties.DeletionProtection).toBe('INACTIVE');
    const retained = new Stack(new App(), 'Retained');
    new CrumbsUserPool(retained, { stage: 'first', retainData: true });
    const [, kept] = Object.entries(
      (CdkTemplate.fromStack(retained).toJSON() as { Resources: Record<string, Resource> }).Resources,
    ).find(([, r]) => r.Type === 'AWS::Cognito::UserPool') as [string, Resource];
    expect(kept.DeletionPolicy).toBe('Retain');
    expect(kept.Properties.DeletionProtection).toBe('ACTIVE');
  });

  it("has a managed login domain whose prefix carries the stack's UUID, so no other stage, account or redeploy collides", () => {
    const [, domain] = only(stateful, 'AWS::Cognito::UserPoolDomain');
    expect(domain.Properties.ManagedLoginVersion).toBe(2);
    expect(domain.Properties.Domain).toEqual({
      'Fn::Join': [
        '-',
        ['crumbs-first', { 'Fn::Select': [2, { 'Fn::Split': ['/', { Ref: 'AWS::StackId' }] }] }],
      ],
    });
  });
});

describe('the app client people sign in with', () => {
  it('is public (no secret), authorization code only, with the fixed CLI callback and the dashboard', () => {
    const [, client] = only(stateless, 'AWS::Cognito::UserPoolClient');
    const p = client.Properties;
    expect(p.GenerateSecret).toBe(false);
    expect(p.AllowedOAuthFlows).toEqual(['code']);
    expect(p.AllowedOAuthScopes).toEqual([...topology.signIn.scopes]);
    expect(p.SupportedIdentityProviders).toEqual(['COGNITO']);
    expect(p.EnableTokenRevocation).toBe(true);
    const callbacks = p.CallbackURLs as unknown[];
    expect(callbacks[0]).toBe('http://localhost:4790/callback');
    // The front door's dashboard, built from the REST API's id (not its stage: the stage depends on the methods,
    // whose functions are told the client id).
    expect(text(callbacks[1])).toMatch(/"https:\/\/",\{"Ref":"FrontDoor[0-9A-F]+"\},".execute-api."/);
    expect(text(callbacks[1])).toContain('/first/ui/');
    expect(p.LogoutURLs).toEqual(p.CallbackURLs);
  });

  it('issues access and ID tokens good for 15 minutes (how long one outlives a revocation), refresh for 30 days', () => {
    const [, client] = only(stateless, 'AWS::Cognito::UserPoolClient');
    expect(client.Properties).toMatchObject({
      AccessTokenValidity: 15,
      IdTokenValidity: 15,
      RefreshTokenValidity: 30 * 24 * 60,
      TokenValidityUnits: { AccessToken: 'minutes', IdToken: 'minutes', RefreshToken: 'minutes' },
    });
  });

  it('has a managed login style (the pages show an error to a client without one)', () => {
    const [clientId] = only(stateless, 'AWS::Cognito::UserPoolClient');
    const [, branding] = only(stateless, 'AWS::Cognito::ManagedLoginBranding');
    expect(branding.Properties).toMatchObject({
      ClientId: { Ref: clientId },
      UseCognitoProvidedValues: true,
    });
  });
});

describe('every place a token is checked takes the client’s tokens in both shapes', () => {
  it("front door: the TOKEN authorizer's function takes the pool as issuer and the client as audience (an ID token's aud, an access token's client_id)", () => {
    const [clientId] = only(stateless, 'AWS::Cognito::UserPoolClient');
    const [, authorizer] = only(stateless, 'AWS::ApiGateway::Authorizer');
    expect(authorizer.Properties.Type).toBe('TOKEN');
    const [authorizerFnId] = Object.entries(stateless.Resources).find(
      ([, r]) =>
        r.Type === 'AWS::Lambda::Function' && r.Properties.FunctionName === 'crumbs-first-authorizer',
    ) as [string, Resource];
    expect(text(authorizer.Properties.AuthorizerUri)).toContain(`"Fn::GetAtt":["${authorizerFnId}","Arn"]`);
    const env = functionEnv('authorizer');
    expect(env[ENV.jwtAudience]).toEqual({ Ref: clientId });
    expect(env[ENV.workspacesClaim]).toBe('cognito:groups');
    expect(text(env[ENV.jwtIssuer])).toMatch(
      /^\{"Fn::Join":\["",\["https:\/\/",\{"Fn::ImportValue":"crumbs-first-stateful:ExportsOutputFnGetAttUserPool[0-9A-F]+ProviderName/,
    );
  });

  it('AppSync Events: Cognito user pool auth, the client id pattern exactly the client (AppSync reads client_id or aud)', () => {
    const [clientId] = only(stateless, 'AWS::Cognito::UserPoolClient');
    const [, api] = only(stateless, 'AWS::AppSync::Api');
    const config = api.Properties.EventConfig as Json;
    const [people, iam] = config.AuthProviders as Json[];
    expect(people?.AuthType).toBe('AMAZON_COGNITO_USER_POOLS');
    expect((people?.CognitoConfig as Json | undefined)?.AppIdClientRegex).toEqual({
      'Fn::Join': ['', ['^(?:', { Ref: clientId }, ')$']],
    });
    expect(iam).toEqual({ AuthType: 'AWS_IAM' });
    expect(config.ConnectionAuthModes).toEqual([{ AuthType: 'AMAZON_COGNITO_USER_POOLS' }]);
    expect(config.DefaultSubscribeAuthModes).toEqual([{ AuthType: 'AMAZON_COGNITO_USER_POOLS' }]);
  });

  it('the onSubscribe handler of every namespace (deltas, changes) reads cognito:groups and takes only the client (aud, else client_id)', () => {
    const [clientId] = only(stateless, 'AWS::Cognito::UserPoolClient');
    const namespaces = Object.values(stateless.Resources).filter(
      (r) => r.Type === 'AWS::AppSync::ChannelNamespace',
    );
    expect(namespaces.map((ns) => ns.Properties.Name).sort()).toEqual(['changes', 'crumbs']);
    for (const ns of namespaces) {
      expect(ns.Properties.SubscribeAuthModes).toEqual([{ AuthType: 'AMAZON_COGNITO_USER_POOLS' }]);
      // The client id is filled in at deploy: the code is joined around a reference to it.
      const parts = (ns.Properties.CodeHandlers as { 'Fn::Join': [string, unknown[]] })['Fn::Join'][1];
      const at = parts.findIndex((p) => text(p) === text({ Ref: clientId }));
      expect(String(parts[at - 1])).toMatch(
        /const WORKSPACES_CLAIM = "cognito:groups";\nconst AUDIENCES = \["$/,
      );
      expect(String(parts[at + 1])).toMatch(/^"\];\n/);
    }
  });

  it('the api and protocol functions read the workspaces from cognito:groups', () => {
    for (const name of ['api', 'mcp', 'a2a']) {
      expect(functionEnv(name)[ENV.workspacesClaim], name).toBe('cognito:groups');
    }
  });
});

describe('what the dashboard and crumbs login read to sign in', () => {
  it('the ui function knows the issuer, the client and the managed login endpoints', () => {
    const [clientId] = only(stateless, 'AWS::Cognito::UserPoolClient');
    const env = functionEnv('ui');
    expect(env[ENV.signInClientId]).toEqual({ Ref: clientId });
    expect(text(env[ENV.jwtIssuer])).toContain('ProviderName');
    const endpoints = text(env[ENV.signInEndpoints]);
    for (const path of ['/oauth2/authorize', '/oauth2/token', '/oauth2/revoke', '/logout']) {
      expect(endpoints).toContain(path);
    }
    expect(endpoints).toContain('.auth.');
    expect(endpoints).toContain('amazoncognito.com');
    expect(env[ENV.workspacesClaim]).toBe('cognito:groups');
  });

  it('outputs the pool id, the client id and the sign-in domain', () => {
    expect(Object.keys(stateful.Outputs)).toContain('UserPoolId');
    expect(Object.keys(stateless.Outputs)).toEqual(
      expect.arrayContaining(['SignInClientId', 'SignInDomain']),
    );
  });

  it('holds no placeholder issuer anywhere', () => {
    expect(text(stateful)).not.toMatch(/EXAMPLE|example\.com/);
    expect(text(stateless)).not.toMatch(/EXAMPLE|example\.com/);
  });
});
