/**
 * The stateless stack's template as the infra tests read it: synthesized offline (no bundling) for a stage, with a
 * JWT issuer set so no user pool is made, and any CDK context a test adds.
 */
import { App } from 'aws-cdk-lib';
import { readConfig } from '#infra/config.ts';
import { buildCrumbs } from '#infra/crumbs-app.ts';

export type Json = Record<string, unknown>;
export interface Resource {
  Type: string;
  Properties: Json;
}

export function statelessResources(stage: string, context: Json = {}): Record<string, Resource> {
  const app = new App({
    context: {
      'crumbs:stage': stage,
      'crumbs:jwtIssuer': 'https://issuer.example.com/pool',
      'crumbs:jwtAudience': 'crumbs-api',
      'crumbs:workspacesClaim': 'crumbs:workspaces',
      'aws:cdk:bundling-stacks': [],
      ...context,
    },
  });
  const stacks = buildCrumbs(app, readConfig(app.node));
  return app.synth().getStackByName(stacks.stateless.stackName).template.Resources as Record<
    string,
    Resource
  >;
}
