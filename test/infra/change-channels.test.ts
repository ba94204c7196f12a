/**
 * The change channels in the synthesized template: the `changes` namespace on the delta channels' Event API, with
 * the same onSubscribe handler and auth modes (subscribe with the API's JWT, publish with IAM), the publisher
 * allowed to publish there and nowhere else, told where the API is, and the API told where clients subscribe.
 */
import { App } from 'aws-cdk-lib';
import { beforeAll, describe, expect, it } from 'vitest';
import { readConfig } from '#infra/config.ts';
import { buildCrumbs } from '#infra/crumbs-app.ts';
import { ENV } from '#shared/topology.ts';

const STAGE = 'test';
type Json = Record<string, unknown>;
interface Resource {
  Type: string;
  Properties: Json;
}

let resources: Record<string, Resource>;

beforeAll(() => {
  const app = new App({
    context: {
      'crumbs:stage': STAGE,
      'crumbs:jwtIssuer': 'https://issuer.example.com/pool',
      'crumbs:jwtAudience': 'crumbs-api',
      'crumbs:workspacesClaim': 'custom:workspaces',
      'aws:cdk:bundling-stacks': [],
    },
  });
  const stacks = buildCrumbs(app, readConfig(app.node));
  resources = (
    app.synth().getStackByName(stacks.stateless.stackName).template as { Resources: Record<string, Resource> }
  ).Resources;
});

const ofType = (type: string) => Object.entries(resources).filter(([, r]) => r.Type === type);
const namespace = (name: string) =>
  ofType('AWS::AppSync::ChannelNamespace').find(([, r]) => r.Properties.Name === name)?.[1]
    .Properties as Json;
const fn = (name: string) =>
  ofType('AWS::Lambda::Function').find(
    ([, r]) => r.Properties.FunctionName === `crumbs-${STAGE}-${name}`,
  )?.[1].Properties as Json;
const refOf = (v: unknown) => {
  const o = v as Json;
  const att = o['Fn::GetAtt'];
  return Array.isArray(att) ? att[0] : o.Ref;
};

describe('the change channels (AppSync Events)', () => {
  it('are the changes namespace of the one Event API, with the delta channels’ onSubscribe handler', () => {
    expect(ofType('AWS::AppSync::Api')).toHaveLength(1);
    const changes = namespace('changes');
    const deltas = namespace('crumbs');
    expect(refOf(changes.ApiId)).toBe(refOf(deltas.ApiId));
    expect(changes.CodeHandlers).toBe(deltas.CodeHandlers);
    expect(String(changes.CodeHandlers)).toContain("const CHANGES_NAMESPACE = 'changes';");
    expect(String(changes.CodeHandlers)).toContain('const WORKSPACES_CLAIM = "custom:workspaces";');
    expect(changes.SubscribeAuthModes).toEqual([{ AuthType: 'OPENID_CONNECT' }]);
    expect(changes.PublishAuthModes).toEqual([{ AuthType: 'AWS_IAM' }]);
  });

  it('let the publisher publish to them only, on the changes namespace’s ARN', () => {
    const publisherRole = refOf(fn('publisher').Role);
    const statements = ofType('AWS::IAM::Policy')
      .filter(([, p]) => (p.Properties.Roles as unknown[]).some((r) => refOf(r) === publisherRole))
      .flatMap(([, p]) => (p.Properties.PolicyDocument as { Statement: Json[] }).Statement)
      .filter((s) => ([] as unknown[]).concat(s.Action).some((a) => String(a).startsWith('appsync:')));
    expect(statements).toHaveLength(1);
    expect(statements[0]?.Action).toBe('appsync:EventPublish');
    const resource = JSON.stringify(statements[0]?.Resource);
    expect(resource).toContain(':apis/');
    expect(resource).toContain('/channelNamespace/changes');
  });

  it('tell the publisher where to publish and the API where clients subscribe', () => {
    const env = (name: string) => ((fn(name).Environment as Json | undefined)?.Variables ?? {}) as Json;
    expect(JSON.stringify(env('publisher')[ENV.eventsHttpUrl])).toContain('https://');
    expect(env('publisher')[ENV.eventsRealtimeUrl]).toBeDefined();
    expect(JSON.stringify(env('api')[ENV.eventsRealtimeUrl])).toContain('/event/realtime');
  });
});
