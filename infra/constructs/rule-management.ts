/**
 * The rule manager: its own static rule on the first crumbs bus (definition changes and rules-sync requests) feeds
 * its queue, and it compiles definitions into rules on the bus pool that target the executor queues. What one
 * workspace may hold of the pool (definitions, rules) is set on it here. A part of the stateless stack: its
 * resources are created in the stack's scope (see `topology-functions.ts` for why).
 */
import type { Alarm } from 'aws-cdk-lib/aws-cloudwatch';
import { type IEventBus, Rule } from 'aws-cdk-lib/aws-events';
import { SqsQueue } from 'aws-cdk-lib/aws-events-targets';
import type { Queue } from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import type { WorkspaceQuotaOverrides } from '#shared/config.ts';
import { ENV, type ExecutorRunner, ruleManagerPattern, topology } from '#shared/topology.ts';
import type { CrumbsFunction } from './crumbs-function.ts';
import { sqsTrigger, type TopologyFunctions } from './topology-functions.ts';
import { WorkQueue } from './work-queue.ts';

export interface RuleManagementProps {
  readonly stage: string;
  readonly functions: TopologyFunctions;
  /** The first crumbs bus: the rule manager's own rule is on it. */
  readonly bus: IEventBus;
  /** The queues compiled rules target, by executor runner. */
  readonly executorQueues: Readonly<Record<ExecutorRunner, Queue>>;
  /** Where every compiled rule target dead-letters. */
  readonly ruleTargetsDlq: Queue;
  /** What one workspace may hold of the pool (`ENV.maxDefinitionsPerWorkspace`, `ENV.maxRulesPerWorkspace`). */
  readonly quotas: { readonly definitions: number; readonly rules: number };
  /**
   * Quotas of single workspaces, over `quotas` (`ENV.workspaceQuotas`).
   * @default - none
   */
  readonly workspaceQuotas?: WorkspaceQuotaOverrides;
}

export class RuleManagement {
  public readonly queue: WorkQueue;
  /** The rule manager's own static rule: definition changes and sync requests → its queue. */
  public readonly rule: Rule;
  public readonly function: CrumbsFunction;
  public readonly alarms: readonly Alarm[];

  constructor(scope: Construct, props: RuleManagementProps) {
    const declaration = topology.functions.ruleManager;
    this.queue = new WorkQueue(scope, 'RuleManagerQueue', {
      declaration: sqsTrigger(declaration).queue,
      stage: props.stage,
    });
    this.alarms = [this.queue.deadLetterAlarm];
    this.rule = new Rule(scope, 'RuleManagerRule', {
      eventBus: props.bus,
      ruleName: topology.bus.ruleManagerRuleName,
      description: 'Definition changes and rules-sync requests, to the crumbs rule manager',
      eventPattern: ruleManagerPattern(),
      // Events EventBridge cannot deliver land in the same DLQ as messages the rule manager failed on.
      targets: [new SqsQueue(this.queue.queue, { deadLetterQueue: this.queue.deadLetterQueue })],
    });
    this.function = props.functions.consuming(declaration, this.queue.queue, {
      ruleTargets: { executorQueues: props.executorQueues, ruleTargetsDlq: props.ruleTargetsDlq },
    });
    this.function.addEnvironment(ENV.maxDefinitionsPerWorkspace, String(props.quotas.definitions));
    this.function.addEnvironment(ENV.maxRulesPerWorkspace, String(props.quotas.rules));
    if (props.workspaceQuotas !== undefined) {
      this.function.addEnvironment(ENV.workspaceQuotas, JSON.stringify(props.workspaceQuotas));
    }
  }
}
