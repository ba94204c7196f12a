/**
 * Rule manager. Triggered by its SQS queue, fed by the static rule `crumbs-system-rule-manager` on the crumbs bus
 * (changes of agent.def.v1, tool.def.v1, workflow.def.v1, context.config.v1, agent.definition.v1, and
 * system.rules_sync.v1 requests). Reads definitions; manages EventBridge rules under its name prefix on the buses of
 * the pool (PutRule/PutTargets/RemoveTargets/DeleteRule; every target with the rule-targets DLQ and retry policy),
 * recording which buses hold a workspace's rules in its `bus-placement` breadcrumb, and, for schedule.def.v1,
 * EventBridge Scheduler schedules in the crumbs group; writes definition.status.v1 (with the provider and model an
 * agent will run, by CRUMBS_DEFAULT_LLM_PROVIDER) and sync-result breadcrumbs; asks the secret source whether each
 * secret_ref names a secret of its workspace (DescribeSecret on AWS, never the value); keeps each workspace's
 * definitions and rules within the operator's per-workspace quotas (quota items in the table). Messages about one
 * definition run in order; failed ones come back after a back-off (ChangeMessageVisibility on its queue).
 */
import { DynamoBreadcrumbStore, defaultDocumentClient } from '#shared/adapters/dynamodb/breadcrumb-store.ts';
import { DynamoWorkspaceQuotas } from '#shared/adapters/dynamodb/workspace-quotas.ts';
import { defaultEventBridgeClient } from '#shared/adapters/eventbridge/event-bus.ts';
import { EventBridgeRuleRegistry } from '#shared/adapters/eventbridge/rule-registry.ts';
import { schedulerTimersFrom } from '#shared/adapters/scheduler/scheduler-timers.ts';
import { secretsFromEnv } from '#shared/adapters/secrets/secret-source.ts';
import {
  busPoolOf,
  parseEnv,
  RuleManagerEnvSchema,
  TimersEnvSchema,
  workspaceQuotasOf,
} from '#shared/config.ts';
import { definitionKeyOf, handleRuleManagerMessage } from '#shared/core/rules/rule-manager.ts';
import type { RuleManagerDependencies } from '#shared/core/rules/rule-manager-deps.ts';
import { ENV, topology } from '#shared/topology.ts';
import { powertools } from '../wiring/powertools.ts';
import { sqsHandler } from '../wiring/sqs-handler.ts';

const env = parseEnv(RuleManagerEnvSchema);
const pt = powertools('crumbs-rule-manager', [defaultDocumentClient(), defaultEventBridgeClient()]);
const registries = new Map(busPoolOf(env).map((bus) => [bus, new EventBridgeRuleRegistry(bus)] as const));
const deps: RuleManagerDependencies = {
  store: new DynamoBreadcrumbStore({ tableName: env[ENV.tableName] }),
  rules: registries.get(env[ENV.busName]) ?? new EventBridgeRuleRegistry(env[ENV.busName]),
  busName: env[ENV.busName],
  pool: {
    buses: [...registries.keys()],
    rulesOn: (bus: string) => registries.get(bus) ?? new EventBridgeRuleRegistry(bus),
    placementCacheMs: env[ENV.busPlacementCacheMs],
  },
  prefix: env[ENV.ruleNamePrefix],
  executorQueueArns: env[ENV.executorQueueArns],
  defaultLlmProvider: env[ENV.defaultLlmProvider],
  modelAliases: env[ENV.modelAliases],
  ruleTargetsDlqArn: env[ENV.ruleTargetsDlqArn],
  timeoutCeilingMs: env[ENV.timeoutCeilingMs],
  log: pt.logger,
  schedules: schedulerTimersFrom(parseEnv(TimersEnvSchema)),
  secrets: secretsFromEnv(),
  quotas: { store: new DynamoWorkspaceQuotas(env[ENV.tableName]), ...workspaceQuotasOf(env) },
};

export const handler = sqsHandler(pt, {
  queue: topology.functions.ruleManager.trigger.queue,
  handle: (record) => handleRuleManagerMessage(record, deps),
  inOrderOf: definitionKeyOf,
  measure: (metrics, { records, batchItemFailures }) => {
    metrics.addMetric('DefinitionChanges', 'Count', records.length);
    metrics.addMetric('DefinitionChangesFailed', 'Count', batchItemFailures.length);
  },
});
