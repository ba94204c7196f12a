/**
 * OpenTelemetry in the synthesized templates: by default every function (the authorizer aside) sends its spans to
 * X-Ray's OTLP endpoint with `xray:PutSpans` granted; an operator's endpoint URL goes on the functions with read
 * access to the one secret holding its headers (never the headers themselves); `none` grants nothing; a URL with
 * credentials in it, or headers without a URL, fail the synth naming the key.
 */
import { describe, expect, it } from 'vitest';
import { ENV } from '#shared/topology.ts';
import { type Json, type Resource, statelessResources } from '../support/synth.ts';

const stateless = (context: Json = {}) => statelessResources('otel', context);

const functions = (resources: Record<string, Resource>) =>
  Object.values(resources).filter(
    (r) => r.Type === 'AWS::Lambda::Function' && r.Properties.FunctionName !== undefined,
  );

const envOf = (r: Resource): Json =>
  ((r.Properties.Environment as Json | undefined)?.Variables ?? {}) as Json;

/** Every statement of the role policies attached to a function's role, by the role's logical id. */
function statementsOf(resources: Record<string, Resource>, fn: Resource): Json[] {
  const role = (fn.Properties.Role as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];
  return Object.values(resources)
    .filter(
      (r) =>
        r.Type === 'AWS::IAM::Policy' &&
        ((r.Properties.Roles as { Ref: string }[]) ?? []).some((ref) => ref.Ref === role),
    )
    .flatMap((r) => (r.Properties.PolicyDocument as { Statement: Json[] }).Statement);
}

const named = (resources: Record<string, Resource>, name: string) =>
  functions(resources).find((r) => r.Properties.FunctionName === `crumbs-otel-${name}`)!;

describe('OpenTelemetry span export in the templates', () => {
  it("sends every function's spans to X-Ray's OTLP endpoint by default, granted xray:PutSpans", () => {
    const resources = stateless();
    for (const name of ['api', 'publisher', 'executor-agent', 'executor-tool']) {
      const fn = named(resources, name);
      expect(envOf(fn)[ENV.otlpEndpoint]).toBe('xray');
      expect(envOf(fn)[ENV.otelCaptureContent]).toBeUndefined();
      expect(statementsOf(resources, fn)).toContainEqual(
        expect.objectContaining({
          Sid: 'SendSpansToXRayOtlp',
          Action: ['xray:PutSpans', 'xray:PutSpansForIndexing'],
          Effect: 'Allow',
          Resource: '*',
        }),
      );
    }
    const authorizer = named(resources, 'authorizer');
    expect(envOf(authorizer)[ENV.otlpEndpoint]).toBeUndefined();
    expect(JSON.stringify(statementsOf(resources, authorizer))).not.toContain('xray:PutSpans');
  });

  it("sends them to the operator's endpoint with its headers read from a secret, and grants only that secret", () => {
    const resources = stateless({
      'crumbs:otlpEndpoint': 'https://api.honeycomb.io/v1/traces',
      'crumbs:otlpHeadersSecret': 'crumbs/otlp-headers',
      'crumbs:otelCaptureContent': true,
    });
    const fn = named(resources, 'executor-agent');
    expect(envOf(fn)).toMatchObject({
      [ENV.otlpEndpoint]: 'https://api.honeycomb.io/v1/traces',
      [ENV.otlpHeadersSecret]: 'crumbs/otlp-headers',
      [ENV.otelCaptureContent]: 'true',
    });
    const statements = statementsOf(resources, fn);
    const read = statements.find((s) => s.Sid === 'ReadOtlpHeaders')!;
    expect(read.Action).toBe('secretsmanager:GetSecretValue');
    expect(JSON.stringify(read.Resource)).toContain(':secret:crumbs/otlp-headers-??????');
    expect(JSON.stringify(statements)).not.toContain('xray:PutSpans');
  });

  it('grants nothing and sends nothing with none', () => {
    const resources = stateless({ 'crumbs:otlpEndpoint': 'none' });
    const fn = named(resources, 'publisher');
    expect(envOf(fn)[ENV.otlpEndpoint]).toBe('none');
    expect(JSON.stringify(statementsOf(resources, fn))).not.toMatch(/PutSpans|ReadOtlpHeaders/);
  });

  it('refuses credentials in the endpoint, headers without an endpoint URL, and a plain-http endpoint', () => {
    expect(() => stateless({ 'crumbs:otlpEndpoint': 'https://user:key@otlp.example.com/v1/traces' })).toThrow(
      /crumbs:otlpEndpoint.*must not carry credentials.*crumbs:otlpHeadersSecret/,
    );
    expect(() => stateless({ 'crumbs:otlpHeadersSecret': 'crumbs/otlp-headers' })).toThrow(
      /crumbs:otlpHeadersSecret.*goes with an endpoint URL/,
    );
    expect(() => stateless({ 'crumbs:otlpEndpoint': 'http://collector:4318/v1/traces' })).toThrow(
      /crumbs:otlpEndpoint.*https URL/,
    );
  });
});
