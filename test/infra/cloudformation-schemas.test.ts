/**
 * Every resource of every synthesized template holds to CloudFormation's resource schemas, and every IAM action a
 * policy names exists in AWS's list of actions for its service (sources: `test/support/cloudformation-schemas.ts`).
 * Several configurations are synthesized, so a resource only some stages have is checked too. The negative tests
 * keep the check honest: a made-up property, a property of the wrong type, a made-up resource type and a made-up
 * action must each be found.
 */
import { App, Stack } from 'aws-cdk-lib';
import { beforeAll, describe, expect, it } from 'vitest';
import { readConfig } from '#infra/config.ts';
import { buildCrumbs } from '#infra/crumbs-app.ts';
import {
  policyActions,
  resourceSchemaFindings,
  SOURCES,
  unknownActions,
} from '../support/cloudformation-schemas.ts';

type Json = Record<string, unknown>;

const BASE = {
  'crumbs:stage': 'schemas',
  'crumbs:jwtIssuer': 'https://issuer.example.com/pool',
  'crumbs:jwtAudience': 'crumbs-api',
  'crumbs:workspacesClaim': 'crumbs:workspaces',
  'aws:cdk:bundling-stacks': [],
};

/** The configurations whose templates are checked: the default, and the settings that add or change resources. */
const CONFIGURATIONS: Record<string, Json> = {
  default: {},
  'a pool of 5 buses, reserved concurrency, retained data': {
    'crumbs:buses': 5,
    'crumbs:apiReservedConcurrency': 20,
    'crumbs:retainData': true,
  },
  'embeddings off': { 'crumbs:embeddings': 'none' },
  // A first deploy's: no issuer, so the stack's own Cognito user pool, its domain, app client and login branding.
  "no issuer (the stack's own user pool)": {
    'crumbs:jwtIssuer': undefined,
    'crumbs:jwtAudience': undefined,
    'crumbs:workspacesClaim': undefined,
  },
  'embeddings from an OpenAI-compatible endpoint': {
    'crumbs:embeddings': 'openai-compatible/nomic-embed-text',
    'crumbs:embeddingsBaseUrl': 'https://embeddings.example.com/v1',
  },
};

const templates: { name: string; template: Json }[] = [];

beforeAll(async () => {
  for (const [name, context] of Object.entries(CONFIGURATIONS)) {
    // Each synth blocks the worker for seconds (a minute on a loaded machine): yield between them, so vitest's
    // worker RPC (60 s timeout) is answered and the run does not end in "Timeout calling onTaskUpdate".
    await new Promise((resolve) => setTimeout(resolve, 0));
    const merged = Object.entries({ ...BASE, ...context }).filter(([, value]) => value !== undefined);
    const app = new App({ context: Object.fromEntries(merged) });
    buildCrumbs(app, readConfig(app.node));
    const assembly = app.synth();
    for (const stack of app.node.findAll().filter((c): c is Stack => c instanceof Stack)) {
      const template = assembly.getStackByName(stack.stackName).template as Json;
      templates.push({ name: `${name}: ${stack.stackName}`, template });
    }
  }
});

describe(`the templates against ${SOURCES.resources}`, () => {
  it('every resource of every template validates against its type schema', () => {
    expect(templates.length).toBeGreaterThanOrEqual(6);
    const findings = templates.flatMap(({ name, template }) =>
      resourceSchemaFindings(template).map((f) => ({ template: name, ...f })),
    );
    expect(findings).toEqual([]);
  });

  it('checks resources of many types (the check is not vacuous)', () => {
    const types = new Set(
      templates.flatMap(({ template }) =>
        Object.values(template.Resources as Record<string, Json>).map((r) => String(r.Type)),
      ),
    );
    for (const type of [
      'AWS::Lambda::Function',
      'AWS::IAM::Role',
      'AWS::IAM::Policy',
      'AWS::SQS::Queue',
      'AWS::Events::Rule',
      'AWS::DynamoDB::Table',
      'AWS::AppSync::Api',
      'AWS::ApiGateway::RestApi',
      'AWS::ApiGateway::Authorizer',
      'AWS::Cognito::UserPool',
      'AWS::Cognito::UserPoolClient',
    ]) {
      expect(types).toContain(type);
    }
  });

  it('finds a made-up property, a property of the wrong type, a missing required one and a made-up type', () => {
    const template = {
      Resources: {
        Queue: { Type: 'AWS::SQS::Queue', Properties: { QueueName: 'q', VisibilityTimeoutSecs: 30 } },
        Timeout: { Type: 'AWS::SQS::Queue', Properties: { VisibilityTimeout: ['thirty'] } },
        Fn: { Type: 'AWS::Lambda::Function', Properties: { Runtime: 'nodejs22.x' } },
        Made: { Type: 'AWS::Crumbs::Thing', Properties: {} },
        Attr: { Type: 'AWS::SQS::Queue', Properties: {}, DeletePolicy: 'Retain' },
      },
    };
    const findings = resourceSchemaFindings(template);
    const of = (id: string) => findings.find((f) => f.resource === id)?.problems.join('\n') ?? '';
    expect(of('Queue')).toMatch(/VisibilityTimeoutSecs/);
    expect(of('Timeout')).toMatch(/VisibilityTimeout/);
    expect(of('Fn')).toMatch(/Code|Role/);
    expect(of('Made')).toMatch(/not a CloudFormation resource type/);
    expect(of('Attr')).toMatch(/DeletePolicy/);
  });

  it('accepts intrinsic functions where values go', () => {
    const template = {
      Resources: {
        Queue: {
          Type: 'AWS::SQS::Queue',
          Properties: {
            QueueName: { 'Fn::Join': ['-', ['a', { Ref: 'AWS::Region' }]] },
            VisibilityTimeout: { Ref: 'Timeout' },
            Tags: [{ Key: 'a', Value: { 'Fn::GetAtt': ['X', 'Arn'] } }],
          },
        },
      },
    };
    expect(resourceSchemaFindings(template)).toEqual([]);
  });
});

describe(`the policies against ${SOURCES.iam}`, () => {
  it('every IAM action of every template exists in its service', async () => {
    const findings = [];
    for (const { name, template } of templates) {
      for (const f of await unknownActions(template)) findings.push({ template: name, ...f });
    }
    expect(findings).toEqual([]);
  });

  it('checks the actions of role policies, resource policies and Lambda permissions', () => {
    const actions = new Set(
      templates.flatMap(({ template }) => policyActions(template).map((a) => a.action)),
    );
    for (const action of [
      'dynamodb:GetItem',
      'events:PutEvents',
      'sqs:SendMessage',
      'sts:AssumeRole',
      'lambda:InvokeFunction',
    ]) {
      expect(actions).toContain(action);
    }
  });

  it('finds a made-up action, an unknown service and a wildcard that matches nothing', async () => {
    const template = {
      Resources: {
        Policy: {
          Type: 'AWS::IAM::Policy',
          Properties: {
            PolicyDocument: {
              Statement: [
                { Effect: 'Allow', Action: ['dynamodb:GetItem', 'dynamodb:GetItemz'], Resource: '*' },
                { Effect: 'Allow', Action: 'crumbsy:Put', Resource: '*' },
                { Effect: 'Allow', Action: 'sqs:Frobnicate*', Resource: '*' },
                { Effect: 'Allow', Action: 'sqs:Send*', Resource: '*' },
              ],
            },
          },
        },
      },
    };
    const problems = (await unknownActions(template)).map((f) => f.action);
    expect(problems).toEqual(['dynamodb:GetItemz', 'crumbsy:Put', 'sqs:Frobnicate*']);
  });
});
