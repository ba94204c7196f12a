/**
 * Where dead letters end: the DLQ handler answers every executor DLQ's and the compiled rule targets' dead letters
 * with error breadcrumbs, and what it fails on itself is parked (`ParkedDeadLetters`), not retried until it
 * expires. Both are alarmed. Parts of the stateless stack: their resources are created in the stack's scope (see
 * `topology-functions.ts` for why).
 */
import { Duration } from 'aws-cdk-lib';
import type { Alarm } from 'aws-cdk-lib/aws-cloudwatch';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import { type IQueue, Queue } from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { topology } from '#shared/topology.ts';
import type { CrumbsFunction } from './crumbs-function.ts';
import { RuleTargetDeadLetters } from './rule-target-dead-letters.ts';
import type { TopologyFunctions } from './topology-functions.ts';
import { DEAD_LETTER_RETENTION, deadLetterAlarm, SECURE_QUEUE, stageName } from './work-queue.ts';

export interface ParkedDeadLettersProps {
  readonly stage: string;
}

export class ParkedDeadLetters {
  /** Dead letters the DLQ handler failed on, kept for manual inspection. */
  public readonly queue: Queue;
  public readonly alarm: Alarm;

  constructor(scope: Construct, props: ParkedDeadLettersProps) {
    this.queue = new Queue(scope, 'ParkedDeadLetters', {
      ...SECURE_QUEUE,
      queueName: stageName('crumbs-dead-letters-parked', props.stage),
      retentionPeriod: DEAD_LETTER_RETENTION,
    });
    this.alarm = deadLetterAlarm(
      scope,
      'ParkedDeadLettersAlarm',
      this.queue,
      'The DLQ handler failed on executor dead letters; they are parked for manual inspection',
    );
  }
}

export interface DeadLetterHandlingProps {
  readonly stage: string;
  readonly functions: TopologyFunctions;
  /** ARN patterns of the compiled rules (one per bus of the pool): they may dead-letter to the rule targets' DLQ. */
  readonly ruleArnPatterns: readonly string[];
  /** The executor queues' DLQs, each an event source of the DLQ handler. */
  readonly executorDeadLetterQueues: readonly IQueue[];
  /** Where the DLQ handler's failures go. */
  readonly parkingQueue: IQueue;
}

export class DeadLetterHandling {
  /** The compiled rule targets' DLQ (`topology.bus.ruleTargets`), with its policy and alarm. */
  public readonly ruleTargetDeadLetters: RuleTargetDeadLetters;
  /** Answers dead letters with error breadcrumbs. */
  public readonly handler: CrumbsFunction;
  public readonly alarms: readonly Alarm[];

  constructor(scope: Construct, props: DeadLetterHandlingProps) {
    const declaration = topology.functions.dlqHandler;
    // Compiled rule targets dead-letter here what EventBridge could not deliver to an executor queue.
    this.ruleTargetDeadLetters = new RuleTargetDeadLetters(scope, 'RuleTargetDeadLetters', {
      stage: props.stage,
      ruleArnPatterns: props.ruleArnPatterns,
      consumerTimeout: Duration.seconds(declaration.timeoutSeconds),
      parkingQueue: props.parkingQueue,
    });
    this.alarms = [this.ruleTargetDeadLetters.alarm];

    // One event source per executor DLQ and the rule targets' DLQ.
    this.handler = props.functions.create(declaration);
    for (const queue of [...props.executorDeadLetterQueues, this.ruleTargetDeadLetters.queue]) {
      this.handler.function.addEventSource(
        new SqsEventSource(queue, { batchSize: declaration.batchSize, reportBatchItemFailures: true }),
      );
    }
  }
}
