import { App } from 'aws-cdk-lib';
import { beforeAll, describe, expect, it } from 'vitest';
import { readConfig } from '#infra/config.ts';
import { clientIdPattern } from '#infra/constructs/delta-channels.ts';
import { buildCrumbs } from '#infra/crumbs-app.ts';
import { ENV, EXECUTOR_RUNNERS } from '#shared/topology.ts';

const STAGE = 'test';
const ISSUER = 'https://issuer.example.com/pool';

type Json = Record<string, unknown>;
interface Resource {
  Type: string;
  Properties: Json;
}

let resources: Record<string, Resource>;
let outputs: Record<string, { Value: unknown }>;

beforeAll(() => {
  const app = new App({
    context: {
      'crumbs:stage': STAGE,
      'crumbs:jwtIssuer': ISSUER,
      'crumbs:jwtAudience': 'crumbs-api',
      'crumbs:workspacesClaim': 'custom:workspaces',
      'aws:cdk:bundling-stacks': [],
    },
  });
  const stacks = buildCrumbs(app, readConfig(app.node));
  const template = app.synth().getStackByName(stacks.stateless.stackName).template as {
    Resources: Record<string, Resource>;
    Outputs: Record<string, { Value: unknown }>;
  };
  resources = template.Resources;
  outputs = template.Outputs;
});

const ofType = (type: string) => Object.entries(resources).filter(([, r]) => r.Type === type);

function refId(value: unknown): string | undefined {
  const v = value as Json | undefined;
  const getAtt = v?.['Fn::GetAtt'];
  if (Array.isArray(getAtt) && typeof getAtt[0] === 'string') return getAtt[0];
  return typeof v?.Ref === 'string' ? v.Ref : undefined;
}

function functionByName(name: string): [string, Resource] {
  const found = ofType('AWS::Lambda::Function').find(
    ([, r]) => r.Properties.FunctionName === `crumbs-${STAGE}-${name}`,
  );
  if (!found) throw new Error(`no function ${name}`);
  return found;
}

describe('the delta channels (AppSync Events)', () => {
  it('is one Event API: OIDC of the HTTP API’s issuer to connect and subscribe, IAM to publish, errors logged', () => {
    const apis = ofType('AWS::AppSync::Api');
    expect(apis).toHaveLength(1);
    const config = apis[0]?.[1].Properties.EventConfig as Json;
    // No OIDC client id: AppSync would match it against `aud` alone and refuse every access token (no `aud`); the
    // onSubscribe handler checks `aud`, else `client_id`, against the API's audiences instead.
    expect(config.AuthProviders).toEqual([
      { AuthType: 'OPENID_CONNECT', OpenIDConnectConfig: { Issuer: ISSUER } },
      { AuthType: 'AWS_IAM' },
    ]);
    expect(config.ConnectionAuthModes).toEqual([{ AuthType: 'OPENID_CONNECT' }]);
    expect(config.DefaultSubscribeAuthModes).toEqual([{ AuthType: 'OPENID_CONNECT' }]);
    expect(config.DefaultPublishAuthModes).toEqual([{ AuthType: 'AWS_IAM' }]);
    expect(config.LogConfig).toMatchObject({ LogLevel: 'ERROR' });
  });

  it('has the namespace crumbs with the onSubscribe handler reading the operator’s claim; tokens cannot publish', () => {
    const namespaces = ofType('AWS::AppSync::ChannelNamespace');
    expect(namespaces.map(([, r]) => r.Properties.Name).sort()).toEqual(['changes', 'crumbs']);
    const ns = namespaces.find(([, r]) => r.Properties.Name === 'crumbs')?.[1].Properties as Json;
    expect(ns.Name).toBe('crumbs');
    expect(ns.PublishAuthModes).toEqual([{ AuthType: 'AWS_IAM' }]);
    expect(ns.SubscribeAuthModes).toEqual([{ AuthType: 'OPENID_CONNECT' }]);
    const code = String(ns.CodeHandlers);
    expect(code).toContain('export function onSubscribe(ctx)');
    expect(code).toContain('const WORKSPACES_CLAIM = "custom:workspaces";');
    expect(code).toContain('const AUDIENCES = ["crumbs-api"];');
    expect(code).toContain('util.unauthorized()');
  });

  it('grants appsync:EventPublish on the crumbs namespace to the agent executor and on changes to the publisher, only', () => {
    const publishing = ofType('AWS::IAM::Policy').filter(([, p]) =>
      (p.Properties.PolicyDocument as { Statement: Json[] }).Statement.some((s) =>
        ([] as unknown[]).concat(s.Action).includes('appsync:EventPublish'),
      ),
    );
    const grants = publishing.flatMap(([, p]) => {
      const statements = (p.Properties.PolicyDocument as { Statement: Json[] }).Statement.filter((s) =>
        ([] as unknown[]).concat(s.Action).includes('appsync:EventPublish'),
      );
      return (p.Properties.Roles as unknown[]).map((role) => ({
        role: refId(role),
        resources: JSON.stringify(statements.map((s) => s.Resource)),
      }));
    });
    const roleOf = (name: string) => refId(functionByName(name)[1].Properties.Role);
    expect(grants.map((g) => g.role).sort()).toEqual([roleOf('executor-agent'), roleOf('publisher')].sort());
    const agent = grants.find((g) => g.role === roleOf('executor-agent'))?.resources ?? '';
    expect(agent).toContain('channelNamespace/crumbs');
    expect(agent).not.toContain('channelNamespace/changes');
    const publisher = grants.find((g) => g.role === roleOf('publisher'))?.resources ?? '';
    expect(publisher).toContain('channelNamespace/changes');
    expect(publisher).not.toContain('channelNamespace/crumbs');
  });

  it('tells the agent executor, the API and the A2A server where the channels are, and outputs the realtime URL', () => {
    const env = (name: string) =>
      ((functionByName(name)[1].Properties.Environment as Json | undefined)?.Variables ?? {}) as Json;
    for (const name of ['executor-agent', 'api', 'a2a']) {
      expect(env(name)[ENV.eventsHttpUrl], name).toBeDefined();
      expect(JSON.stringify(env(name)[ENV.eventsRealtimeUrl]), name).toContain('/event/realtime');
    }
    for (const runner of EXECUTOR_RUNNERS.filter((r) => r !== 'agent')) {
      expect(env(`executor-${runner}`)[ENV.eventsHttpUrl], runner).toBeUndefined();
    }
    const output = Object.entries(outputs).find(([id]) => id.startsWith('DeltaChannelRealtimeUrl'));
    expect(JSON.stringify(output?.[1].Value)).toContain('/event/realtime');
  });
});

describe('with an operator’s issuer', () => {
  it('creates no user pool or client, and the dashboard reads the issuer (sign-in needs crumbs:signInClientId)', () => {
    expect(Object.values(resources).filter((r) => r.Type.startsWith('AWS::Cognito::'))).toEqual([]);
    const ui = (functionByName('ui')[1].Properties.Environment as Json).Variables as Json;
    expect(ui[ENV.jwtIssuer]).toBe(ISSUER);
    expect(ui[ENV.workspacesClaim]).toBe('custom:workspaces');
    expect(ui[ENV.signInClientId]).toBeUndefined();
  });
});

describe('clientIdPattern', () => {
  it('matches exactly the client ids, as one anchored pattern', () => {
    const pattern = new RegExp(clientIdPattern(['3n4b5urk1ft4fl3mg5e62d9ado', 'a.b']));
    expect(pattern.test('3n4b5urk1ft4fl3mg5e62d9ado')).toBe(true);
    expect(pattern.test('a.b')).toBe(true);
    expect(pattern.test('axb')).toBe(false);
    expect(pattern.test('x3n4b5urk1ft4fl3mg5e62d9adox')).toBe(false);
    expect(() => clientIdPattern([])).toThrow(/no client id/);
  });
});
