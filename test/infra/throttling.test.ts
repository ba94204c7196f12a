/**
 * Throttling in the synthesized templates: the stage-wide rate and burst on the front door's stage (defaults, and
 * the CDK context that sets them), reserved concurrency for the api function only when the operator sets it (a
 * reservation a new account cannot hold would fail the first deploy), and the per-workspace request rate handed to
 * the API and protocol server functions, with single workspaces' own rates.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_API_THROTTLE } from '#infra/deploy-settings.ts';
import { ENV, TENANT_LIMITS } from '#shared/topology.ts';
import { type Json, type Resource, statelessResources } from '../support/synth.ts';

const stateless = (context: Json = {}) => statelessResources('throttle', context);

const of = (resources: Record<string, Resource>, type: string) =>
  Object.values(resources).filter((r) => r.Type === type);

const fn = (resources: Record<string, Resource>, name: string) =>
  of(resources, 'AWS::Lambda::Function').find((r) => r.Properties.FunctionName === `crumbs-throttle-${name}`);

const envOf = (resources: Record<string, Resource>, name: string): Json =>
  ((fn(resources, name)?.Properties.Environment as Json | undefined)?.Variables ?? {}) as Json;

describe('the stage-wide throttle', () => {
  it('throttles every route of the stage at the defaults, and at the context values when set', () => {
    // A REST API stage throttles every resource and method through its `/*` `*` method setting.
    const everyRoute = (resources: Record<string, Resource>) => {
      const [stage] = of(resources, 'AWS::ApiGateway::Stage');
      const settings = (stage?.Properties.MethodSettings ?? []) as Json[];
      return settings.filter((m) => m.ResourcePath === '/*' && m.HttpMethod === '*');
    };
    const defaults = everyRoute(stateless());
    expect(defaults).toHaveLength(1);
    expect(defaults[0]).toMatchObject({
      ThrottlingRateLimit: DEFAULT_API_THROTTLE.rateLimit,
      ThrottlingBurstLimit: DEFAULT_API_THROTTLE.burstLimit,
      // The stage's logging and metrics settings stay on the same method setting.
      LoggingLevel: 'ERROR',
      MetricsEnabled: true,
    });
    expect(everyRoute(stateless({ 'crumbs:apiRateLimit': 50, 'crumbs:apiBurstLimit': '80' }))).toEqual([
      expect.objectContaining({ ThrottlingRateLimit: 50, ThrottlingBurstLimit: 80 }),
    ]);
  });

  it('refuses a throttle that is not a whole number, naming the key', () => {
    expect(() => stateless({ 'crumbs:apiRateLimit': 'fast' })).toThrow(/crumbs:apiRateLimit/);
    expect(() => stateless({ 'crumbs:apiReservedConcurrency': -1 })).toThrow(/crumbs:apiReservedConcurrency/);
  });
});

describe('reserved concurrency', () => {
  it('reserves nothing by default (a new account with a quota of 10 could not deploy a reservation)', () => {
    for (const f of of(stateless(), 'AWS::Lambda::Function')) {
      expect(f.Properties.ReservedConcurrentExecutions, String(f.Properties.FunctionName)).toBeUndefined();
    }
  });

  it('reserves what crumbs:apiReservedConcurrency says for the api function only', () => {
    const resources = stateless({ 'crumbs:apiReservedConcurrency': 40 });
    expect(fn(resources, 'api')?.Properties.ReservedConcurrentExecutions).toBe(40);
    const others = of(resources, 'AWS::Lambda::Function').filter(
      (f) => f.Properties.FunctionName !== 'crumbs-throttle-api' && f.Properties.ReservedConcurrentExecutions,
    );
    expect(others).toEqual([]);
  });
});

describe('the per-workspace request rate', () => {
  it('is given to the API, MCP and A2A functions, with single workspaces own rates', () => {
    const resources = stateless({
      'crumbs:tenantLimits': { workspaceRequestRate: 20 },
      'crumbs:workspaceQuotas': { 'big-team': { requestRate: 200, requestBurst: 400 } },
    });
    for (const name of ['api', 'mcp', 'a2a']) {
      const env = envOf(resources, name);
      expect(env[ENV.workspaceRequestRate], name).toBe('20');
      expect(env[ENV.workspaceRequestBurst], name).toBe(String(TENANT_LIMITS.workspaceRequestBurst));
      expect(JSON.parse(String(env[ENV.workspaceQuotas])), name).toEqual({
        'big-team': { requestRate: 200, requestBurst: 400 },
      });
    }
    const executor = envOf(resources, 'executor-tool');
    expect(executor[ENV.workspaceRequestRate]).toBeUndefined();
  });
});
