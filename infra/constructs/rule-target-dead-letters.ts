/**
 * The compiled rules' dead-letter queue: where EventBridge puts an event a definition's rule matched but could not
 * deliver to its executor queue, after the target's retry policy (`topology.bus.ruleTargets`). The rule manager
 * names it in every target's DeadLetterConfig (it needs no grant for that: EventBridge checks the queue's policy
 * when it sends, and an SQS DLQ needs no iam:PassRole). The queue policy lets EventBridge send only on behalf of
 * the compiled rules (`rule/<bus>/<prefix>*`, on every bus of the pool).
 *
 * The DLQ handler consumes it and answers each dead letter with an error breadcrumb
 * (`shared/core/rules/rule-target-dead-letters.ts`); what it fails on is parked, like the executor DLQs' failures. The
 * depth alarm fires when dead letters wait, i.e. when the DLQ handler is not keeping up or failing.
 */
import { Duration } from 'aws-cdk-lib';
import type { Alarm } from 'aws-cdk-lib/aws-cloudwatch';
import { PolicyStatement, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { type IQueue, Queue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { topology } from '#shared/topology.ts';
import { DEAD_LETTER_RETENTION, deadLetterAlarm, oneOrList, SECURE_QUEUE, stageName } from './work-queue.ts';

export interface RuleTargetDeadLettersProps {
  readonly stage: string;
  /** ARN patterns of the rules that may dead-letter here: the rule manager's compiled rules, one per bus. */
  readonly ruleArnPatterns: readonly string[];
  /** Timeout of the function that consumes the queue; its visibility timeout is 6 × this. */
  readonly consumerTimeout: Duration;
  /** Where messages go that the consumer failed to handle `maxReceiveCount` times. */
  readonly parkingQueue: IQueue;
  /**
   * Receives before a message is parked.
   * @default 5
   */
  readonly maxReceiveCount?: number;
}

export class RuleTargetDeadLetters extends Construct {
  public readonly queue: Queue;
  public readonly alarm: Alarm;

  constructor(scope: Construct, id: string, props: RuleTargetDeadLettersProps) {
    super(scope, id);
    this.queue = new Queue(this, 'Queue', {
      ...SECURE_QUEUE,
      queueName: stageName(topology.bus.ruleTargets.dlqName, props.stage),
      retentionPeriod: DEAD_LETTER_RETENTION,
      visibilityTimeout: Duration.seconds(props.consumerTimeout.toSeconds() * 6),
      deadLetterQueue: { queue: props.parkingQueue, maxReceiveCount: props.maxReceiveCount ?? 5 },
    });
    this.queue.addToResourcePolicy(
      new PolicyStatement({
        sid: 'CompiledRulesMayDeadLetter',
        principals: [new ServicePrincipal('events.amazonaws.com')],
        actions: ['sqs:SendMessage'],
        resources: [this.queue.queueArn],
        conditions: { ArnLike: { 'aws:SourceArn': oneOrList(props.ruleArnPatterns) } },
      }),
    );
    this.alarm = deadLetterAlarm(
      this,
      'Alarm',
      this.queue,
      'Events a compiled rule could not deliver to its executor queue wait for the DLQ handler',
    );
  }
}
