/**
 * A queue that feeds a function, with its dead-letter queue and an alarm on the DLQ's depth: every async path in
 * crumbs ends in a DLQ that somebody is told about. Names, visibility timeout and receive count come from the
 * queue's declaration in `shared/topology.ts`.
 */
import { Duration } from 'aws-cdk-lib';
import { Alarm, ComparisonOperator, TreatMissingData } from 'aws-cdk-lib/aws-cloudwatch';
import { PolicyStatement, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { type IQueue, Queue, QueueEncryption, type QueueProps } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import type { QueueDeclaration } from '#shared/topology.ts';

/** The longest SQS allows: a dead letter should outlive a long weekend and its investigation. */
export const DEAD_LETTER_RETENTION = Duration.days(14);

/** Settings every crumbs queue shares: encrypted at rest, TLS only. */
export const SECURE_QUEUE: Pick<QueueProps, 'encryption' | 'enforceSSL'> = {
  encryption: QueueEncryption.SQS_MANAGED,
  enforceSSL: true,
};

/** Alarm when a dead-letter queue holds any message. */
export function deadLetterAlarm(scope: Construct, id: string, queue: IQueue, description: string): Alarm {
  return new Alarm(scope, id, {
    alarmName: `${queue.queueName}-not-empty`,
    alarmDescription: description,
    metric: queue.metricApproximateNumberOfMessagesVisible({
      period: Duration.minutes(1),
      statistic: 'Maximum',
    }),
    threshold: 0,
    comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
    evaluationPeriods: 1,
    treatMissingData: TreatMissingData.NOT_BREACHING,
  });
}

/** A condition value: one string as itself (so a one-bus pool's template has no list of one), more as a list. */
export function oneOrList(values: readonly string[]): string | string[] {
  return values.length === 1 ? (values[0] as string) : [...values];
}

/** `crumbs-agent` → `crumbs-agent-dev`: stages can share an account and region. */
export function stageName(name: string, stage: string): string {
  return `${name}-${stage}`;
}

export interface WorkQueueProps {
  /** The queue's declaration in the topology (names, visibility timeout, maxReceiveCount). */
  readonly declaration: QueueDeclaration;
  readonly stage: string;
  /**
   * Timeout of the function that consumes the DLQ, if one does; the DLQ's visibility timeout is 6 × this
   * (Lambda requires at least 1 ×, AWS recommends 6 ×).
   * @default - nobody consumes the DLQ; SQS's default visibility timeout
   */
  readonly deadLetterConsumerTimeout?: Duration;
  /**
   * Where messages go that the DLQ's consumer failed to handle `maxReceiveCount` times, so a broken DLQ handler
   * parks them instead of retrying them until they expire.
   * @default - no redrive from the DLQ (only valid when nothing consumes it)
   */
  readonly parkingQueue?: IQueue;
}

export class WorkQueue extends Construct {
  public readonly queue: Queue;
  public readonly deadLetterQueue: Queue;
  public readonly deadLetterAlarm: Alarm;
  public readonly declaration: QueueDeclaration;

  constructor(scope: Construct, id: string, props: WorkQueueProps) {
    super(scope, id);
    const { declaration, stage } = props;
    this.declaration = declaration;

    this.deadLetterQueue = new Queue(this, 'DeadLetterQueue', {
      ...SECURE_QUEUE,
      queueName: stageName(declaration.dlqName, stage),
      retentionPeriod: DEAD_LETTER_RETENTION,
      visibilityTimeout: props.deadLetterConsumerTimeout
        ? Duration.seconds(props.deadLetterConsumerTimeout.toSeconds() * 6)
        : undefined,
      deadLetterQueue: props.parkingQueue
        ? { queue: props.parkingQueue, maxReceiveCount: declaration.maxReceiveCount }
        : undefined,
    });

    this.queue = new Queue(this, 'Queue', {
      ...SECURE_QUEUE,
      queueName: stageName(declaration.name, stage),
      visibilityTimeout: Duration.seconds(declaration.visibilityTimeoutSeconds),
      deadLetterQueue: { queue: this.deadLetterQueue, maxReceiveCount: declaration.maxReceiveCount },
    });

    this.deadLetterAlarm = deadLetterAlarm(
      this,
      'DeadLetterAlarm',
      this.deadLetterQueue,
      `Messages of ${declaration.name} failed ${declaration.maxReceiveCount} times and wait in its DLQ`,
    );
  }

  /**
   * Lets EventBridge deliver to this queue from rules whose ARN matches one of `ruleArnPatterns` (the rule
   * manager's compiled rules, `rule/<bus>/<prefix>*` on each bus of the pool), and from no other rule.
   */
  allowRuleDelivery(ruleArnPatterns: readonly string[]): this {
    this.queue.addToResourcePolicy(
      new PolicyStatement({
        sid: 'CompiledRulesMaySend',
        principals: [new ServicePrincipal('events.amazonaws.com')],
        actions: ['sqs:SendMessage'],
        resources: [this.queue.queueArn],
        conditions: { ArnLike: { 'aws:SourceArn': oneOrList(ruleArnPatterns) } },
      }),
    );
    return this;
  }
}
