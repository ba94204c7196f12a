/**
 * The crumbs app as a function of its configuration: the two stacks, wired, with the cdk-nag AwsSolutions pack
 * applied. `bin/app.ts` calls it for `cdk synth` / `cdk deploy`; the template tests call it too, so what they
 * assert is what gets deployed.
 */
import { Annotations, type App, Aspects, Tags } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { CrumbsConfig } from './config.ts';
import { LogGroupRetention } from './constructs/data-retention.ts';
import { StatefulStack } from './stacks/stateful-stack.ts';
import { StatelessStack } from './stacks/stateless-stack.ts';

export interface CrumbsStacks {
  readonly stateful: StatefulStack;
  readonly stateless: StatelessStack;
}

export interface BuildOptions {
  /** See `StatelessStackProps.entryOverrides`: local experiments only. */
  readonly entryOverrides?: Readonly<Record<string, string>>;
}

export function buildCrumbs(app: App, config: CrumbsConfig, options: BuildOptions = {}): CrumbsStacks {
  const env = { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION };
  const stateful = new StatefulStack(app, `crumbs-${config.stage}-stateful`, {
    env,
    stage: config.stage,
    buses: config.buses,
    userPool: config.userPool !== undefined,
    retainData: config.retainData,
    description: 'crumbs: breadcrumbs table and event buses (stateful)',
  });
  const stateless = new StatelessStack(app, `crumbs-${config.stage}-stateless`, {
    env,
    stage: config.stage,
    description: 'crumbs: functions, queues, rules, REST API front door and alarms (stateless)',
    table: stateful.table,
    blobs: stateful.blobs.bucket,
    busNames: stateful.busNames,
    ...(config.jwtIssuer !== undefined
      ? {
          jwtIssuer: config.jwtIssuer,
          jwtAudience: config.jwtAudience,
          ...(config.signInClientId !== undefined ? { signInClientId: config.signInClientId } : {}),
        }
      : {}),
    ...(config.userPool !== undefined && stateful.userPool !== undefined
      ? {
          userPool: {
            pool: stateful.userPool.pool,
            domainBaseUrl: stateful.userPool.domain.baseUrl(),
            tokenValidityMinutes: config.userPool.tokenValidityMinutes,
          },
        }
      : {}),
    workspacesClaim: config.workspacesClaim,
    llmSecretPrefix: config.llmSecretPrefix,
    defaultLlmProvider: config.defaultLlmProvider,
    modelAliases: config.modelAliases,
    ...(config.llmPrices !== undefined ? { llmPrices: config.llmPrices } : {}),
    ...(config.dailyBudgets !== undefined ? { dailyBudgets: config.dailyBudgets } : {}),
    otlp: config.otlp,
    workspaceQuotas: config.workspaceQuotas,
    ...(config.maxResponseBytes !== undefined ? { maxResponseBytes: config.maxResponseBytes } : {}),
    tenantLimits: config.tenantLimits,
    apiThrottle: config.apiThrottle,
    embeddings: config.embeddings,
    ...(config.apiReservedConcurrency !== undefined
      ? { apiReservedConcurrency: config.apiReservedConcurrency }
      : {}),
    entryOverrides: options.entryOverrides,
  });
  stateless.addStackDependency(stateful);
  // The table is referred to strongly: CloudFormation then refuses to replace it while the stateless stack uses it,
  // and its exports never change with other settings. The buses are referred to by name (`busNames`), so a shrinking
  // pool leaves no export in use behind.
  Annotations.of(stateless).acknowledgeWarning(
    '@aws-cdk/core:crossStackReferencesDefaultStrong',
    'The stateless stack holds strong references to the table of the stateful stack',
  );
  Tags.of(app).add('app', 'crumbs');
  Tags.of(app).add('crumbs:stage', config.stage);
  Aspects.of(app).add(new LogGroupRetention(config.retainData));
  Aspects.of(app).add(new AwsSolutionsChecks({ verbose: true }));
  return { stateful, stateless };
}
