/**
 * The front door as synthesized: one REGIONAL REST API whose resource tree is walked here as API Gateway walks it
 * (a static path part before a variable one, no going back up), so each assertion is about what a request to a
 * path reaches — which function, through which kind of integration, behind which authorizer.
 */
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { readConfig } from '#infra/config.ts';
import { buildCrumbs } from '#infra/crumbs-app.ts';
import { AUTHORIZER } from '#shared/core/front-door/authorizer.ts';
import { ENV, FRONT_DOOR, type HttpTrigger, topology } from '#shared/topology.ts';
import { inMemoryApi } from '../support/memory/api.ts';

const STAGE = 'test';
const ISSUER = 'https://issuer.example.com/pool';

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
      'crumbs:jwtIssuer': ISSUER,
      'crumbs:jwtAudience': 'crumbs-api,3n4b5urk1ft4fl3mg5e62d9ado',
      'crumbs:workspacesClaim': 'cognito:groups',
      'aws:cdk:bundling-stacks': [],
    },
  });
  const stacks = buildCrumbs(app, readConfig(app.node));
  resources = Template.fromStack(stacks.stateless).toJSON().Resources as Record<string, Resource>;
});

function ofType(type: string): [string, Resource][] {
  return Object.entries(resources).filter(([, r]) => r.Type === type);
}

function refId(value: unknown): string | undefined {
  if (value && typeof value === 'object') {
    const v = value as Json;
    const getAtt = v['Fn::GetAtt'];
    if (Array.isArray(getAtt) && typeof getAtt[0] === 'string') return getAtt[0];
    if (typeof v.Ref === 'string') return v.Ref;
  }
  return undefined;
}

function functionName(id: string): string {
  return String(resources[id]?.Properties.FunctionName).replace(`crumbs-${STAGE}-`, '');
}

function functionEnv(name: string): Json {
  const found = ofType('AWS::Lambda::Function').find(([id]) => functionName(id) === name);
  return ((found?.[1].Properties.Environment as Json | undefined)?.Variables ?? {}) as Json;
}

interface Node {
  part: string;
  children: Node[];
  methods: Map<string, Json>;
}

/** The resource tree: the root, and each resource under its parent with its methods. */
function tree(): Node {
  const nodes = new Map<string, Node>();
  const root: Node = { part: '', children: [], methods: new Map() };
  for (const [id, r] of ofType('AWS::ApiGateway::Resource')) {
    nodes.set(id, { part: String(r.Properties.PathPart), children: [], methods: new Map() });
  }
  const nodeOf = (ref: unknown): Node => {
    const id = refId(ref);
    const node = id === undefined ? undefined : nodes.get(id);
    // The root's id is the RestApi's RootResourceId attribute.
    return node ?? root;
  };
  for (const [id, r] of ofType('AWS::ApiGateway::Resource')) {
    nodeOf(r.Properties.ParentId).children.push(nodes.get(id) as Node);
  }
  for (const [, m] of ofType('AWS::ApiGateway::Method')) {
    nodeOf(m.Properties.ResourceId).methods.set(String(m.Properties.HttpMethod), m.Properties);
  }
  return root;
}

/** The method API Gateway picks for `method path`: static part first, then the variable one, never back up. */
function resolve(root: Node, method: string, path: string): Json | undefined {
  let node = root;
  const parts = path.split('/').filter(Boolean);
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i] as string;
    const fixed = node.children.find((c) => c.part === part);
    const variable = node.children.find((c) => c.part.startsWith('{'));
    const next = fixed ?? variable;
    if (next === undefined) return undefined;
    node = next;
    if (node.part.endsWith('+}')) break;
  }
  return node.methods.get(method) ?? node.methods.get('ANY');
}

/** The function a method's integration invokes. */
function target(method: Json): string {
  const uri = JSON.stringify((method.Integration as Json).Uri);
  const fn = ofType('AWS::Lambda::Function').find(([id]) => uri.includes(`"${id}"`));
  return fn ? functionName(fn[0]) : '?';
}

const PUBLIC = [
  'GET /health',
  'GET /v1/openapi.json',
  'GET /ui',
  'GET /ui/app.js',
  'GET /.well-known/oauth-protected-resource/v1/workspaces/team-a/mcp',
  'GET /a2a/public/workspaces/team-a/agents/helper/.well-known/agent-card.json',
];

describe('the front door', () => {
  it('is one REGIONAL REST API (EDGE idles a stream out after 30 s) with a stage named after the crumbs stage', () => {
    const apis = ofType('AWS::ApiGateway::RestApi');
    expect(apis).toHaveLength(1);
    expect(apis[0]?.[1].Properties.EndpointConfiguration).toEqual({ Types: ['REGIONAL'] });
    const stages = ofType('AWS::ApiGateway::Stage');
    expect(stages.map(([, s]) => s.Properties.StageName)).toEqual([STAGE]);
    expect(stages[0]?.[1].Properties).toMatchObject({
      TracingEnabled: true,
      AccessLogSetting: { DestinationArn: expect.anything(), Format: expect.any(String) },
    });
    expect(ofType('AWS::ApiGatewayV2::Api')).toEqual([]);
  });

  it('checks tokens with a TOKEN authorizer on the Authorization header, cached for its TTL, given the issuer, audiences and claim', () => {
    const authorizers = ofType('AWS::ApiGateway::Authorizer');
    expect(authorizers).toHaveLength(1);
    const props = authorizers[0]?.[1].Properties as Json;
    expect(props).toMatchObject({
      Type: 'TOKEN',
      IdentitySource: AUTHORIZER.identitySource,
      IdentityValidationExpression: AUTHORIZER.validationRegex,
      AuthorizerResultTtlInSeconds: AUTHORIZER.ttlSeconds,
    });
    expect(JSON.stringify(props.AuthorizerUri)).toContain(
      ofType('AWS::Lambda::Function').find(([id]) => functionName(id) === 'authorizer')?.[0],
    );
    expect(functionEnv('authorizer')).toMatchObject({
      [ENV.jwtIssuer]: ISSUER,
      [ENV.jwtAudience]: 'crumbs-api,3n4b5urk1ft4fl3mg5e62d9ado',
      [ENV.workspacesClaim]: 'cognito:groups',
    });
  });

  it('puts the authorizer on every method but the public ones', () => {
    const authorizerId = ofType('AWS::ApiGateway::Authorizer')[0]?.[0];
    const root = tree();
    for (const route of PUBLIC) {
      const [method, path] = route.split(' ') as [string, string];
      expect(resolve(root, method, path)?.AuthorizationType, route).toBe('NONE');
    }
    const methods = ofType('AWS::ApiGateway::Method').map(([, m]) => m.Properties);
    const open = methods.filter((m) => m.AuthorizationType === 'NONE');
    expect(open).toHaveLength(PUBLIC.length);
    for (const m of methods.filter((x) => x.AuthorizationType !== 'NONE')) {
      expect(m.AuthorizationType).toBe('CUSTOM');
      expect(refId(m.AuthorizerId)).toBe(authorizerId);
    }
  });

  it('serves the streaming routes through STREAM integrations of response-streaming functions, for up to 15 minutes', () => {
    const root = tree();
    const streaming = [
      ['POST /v1/workspaces/team-a/mcp', 'mcp'],
      ['POST /a2a/workspaces/team-a/agents/helper', 'a2a'],
      ['GET /v1/workspaces/team-a/streams/0123456789abcdef/events', 'api'],
      ['GET /v1/workspaces/team-a/changes', 'api'],
      ['POST /v1/workspaces/team-a/breadcrumbs', 'api'],
    ] as const;
    for (const [route, fn] of streaming) {
      const [method, path] = route.split(' ') as [string, string];
      const found = resolve(root, method, path);
      expect(found, route).toBeDefined();
      expect(target(found as Json), route).toBe(fn);
      const integration = (found as Json).Integration as Json;
      expect(integration, route).toMatchObject({
        Type: 'AWS_PROXY',
        ResponseTransferMode: 'STREAM',
        TimeoutInMillis: FRONT_DOOR.limits.streamSeconds * 1000,
      });
      // InvokeWithResponseStream's path, not Invoke's.
      expect(JSON.stringify(integration.Uri), route).toContain('/response-streaming-invocations');
    }
    const ui = resolve(root, 'GET', '/ui/app.js') as Json;
    expect(target(ui)).toBe('ui');
    expect((ui.Integration as Json).ResponseTransferMode ?? 'BUFFERED').toBe('BUFFERED');
    expect(JSON.stringify((ui.Integration as Json).Uri)).toContain('2015-03-31/functions/');
  });

  it('gives each streaming function a timeout past the stream cap and within Lambda and API Gateway limits', () => {
    expect(FRONT_DOOR.streamCapSeconds).toBeLessThan(FRONT_DOOR.streamFunctionTimeoutSeconds);
    expect(FRONT_DOOR.streamFunctionTimeoutSeconds).toBeLessThanOrEqual(FRONT_DOOR.limits.streamSeconds);
    expect(FRONT_DOOR.jsonWaitSeconds).toBeLessThan(FRONT_DOOR.limits.idleSeconds);
    expect(FRONT_DOOR.keepAliveSeconds).toBeLessThan(FRONT_DOOR.limits.idleSeconds);
    for (const name of ['api', 'mcp', 'a2a']) {
      const fn = ofType('AWS::Lambda::Function').find(([id]) => functionName(id) === name)?.[1];
      expect(fn?.Properties.Timeout, name).toBe(FRONT_DOOR.streamFunctionTimeoutSeconds);
    }
  });

  it('reaches the api function, behind the authorizer, on every route of the API (none falls into a dead end)', () => {
    const root = tree();
    for (const route of inMemoryApi().api.routes) {
      const path = route.template.replace(/\{[^}]+\}/g, 'x1');
      for (const method of route.methods) {
        const found = resolve(root, method, path);
        expect(found, `${method} ${route.template}`).toBeDefined();
        expect(target(found as Json), `${method} ${route.template}`).toBe('api');
        expect((found as Json).AuthorizationType, `${method} ${route.template}`).toBe(
          route.public ? 'NONE' : 'CUSTOM',
        );
      }
    }
    // Paths no route names, under every resource made for another function, still reach the api (its 404).
    for (const path of [
      '/v1/workspaces/x1/mcp/extra',
      '/a2a/workspaces/x1/agents/x2/extra',
      '/.well-known/other',
      '/ui/a/b',
      '/nothing/here',
    ]) {
      expect(target(resolve(root, 'GET', path) as Json), path).toMatch(/^(api|ui)$/);
    }
    expect(target(resolve(root, 'PUT', '/v1/workspaces/x1/mcp') as Json)).toBe('api');
  });

  it('tells the streaming functions the API base URL they publish, built from the API id and the stage', () => {
    const apiId = ofType('AWS::ApiGateway::RestApi')[0]?.[0];
    for (const name of ['api', 'mcp', 'a2a']) {
      const url = JSON.stringify(functionEnv(name)[ENV.apiUrl]);
      expect(url, name).toContain(`"Ref":"${apiId}"`);
      expect(url, name).toContain(`/${STAGE}`);
      expect(url, name).toContain('.execute-api.');
    }
    expect(functionEnv('ui')[ENV.apiUrl]).toBeUndefined();
  });

  it('answers a refused token with the same problem body and WWW-Authenticate as the local server', () => {
    const responses = ofType('AWS::ApiGateway::GatewayResponse').map(([, r]) => r.Properties);
    // No token: UNAUTHORIZED; a token the authorizer denies: ACCESS_DENIED — the same 401 either way.
    const denied = responses.find((r) => r.ResponseType === 'ACCESS_DENIED');
    const unauthorized = responses.find((r) => r.ResponseType === 'UNAUTHORIZED');
    expect(denied).toEqual({ ...unauthorized, ResponseType: 'ACCESS_DENIED' });
    expect(unauthorized).toMatchObject({
      StatusCode: '401',
      ResponseParameters: {
        'gatewayresponse.header.Content-Type': "'application/problem+json'",
        'gatewayresponse.header.WWW-Authenticate': "'Bearer'",
      },
    });
    const templates = (unauthorized?.ResponseTemplates ?? {}) as Json;
    const body = JSON.parse(String(templates['application/json'])) as Json;
    expect(body).toMatchObject({ status: 401, type: 'https://crumbs.dev/problems/unauthorized' });
  });

  it('routes exactly what the topology declares to each function', () => {
    const root = tree();
    for (const fn of [topology.functions.mcp, topology.functions.a2a, topology.functions.ui]) {
      const trigger: HttpTrigger = fn.trigger;
      for (const route of [...(trigger.routes ?? []), ...(trigger.publicRoutes ?? [])]) {
        const [method, template] = route.split(' ') as [string, string];
        const path = template.replace(/\{proxy\+\}/, 'a.js').replace(/\{[^}]+\}/g, 'x1');
        expect(target(resolve(root, method, path) as Json), route).toBe(fn.name);
      }
    }
  });
});
