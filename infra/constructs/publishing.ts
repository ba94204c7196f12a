/**
 * The publisher turns the breadcrumbs table's stream into change events on the bus pool. Records it gives up on
 * after its retries go to an alarmed on-failure queue (`PublisherFailures`): their change events were not
 * published. A part of the stateless stack: its resources are created in the stack's scope (see
 * `topology-functions.ts` for why).
 */
import { Duration } from 'aws-cdk-lib';
import type { Alarm } from 'aws-cdk-lib/aws-cloudwatch';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { StartingPosition } from 'aws-cdk-lib/aws-lambda';
import { SqsDlq } from 'aws-cdk-lib/aws-lambda-event-sources';
import { Queue } from 'aws-cdk-lib/aws-sqs';
import { NagSuppressions } from 'cdk-nag';
import type { Construct } from 'constructs';
import { topology } from '#shared/topology.ts';
import type { CrumbsFunction } from './crumbs-function.ts';
import { streamTrigger, type TopologyFunctions } from './topology-functions.ts';
import { DEAD_LETTER_RETENTION, deadLetterAlarm, SECURE_QUEUE, stageName } from './work-queue.ts';

export interface PublishingProps {
  readonly stage: string;
  readonly functions: TopologyFunctions;
  /** The breadcrumbs table; it must have a stream. */
  readonly table: ITable;
}

export class Publishing {
  /** On-failure destination of the publisher's stream event source (records it gave up on). */
  public readonly failures: Queue;
  public readonly function: CrumbsFunction;
  public readonly alarms: readonly Alarm[];

  constructor(scope: Construct, props: PublishingProps) {
    const declaration = topology.functions.publisher;
    this.failures = new Queue(scope, 'PublisherFailures', {
      ...SECURE_QUEUE,
      queueName: stageName(declaration.trigger.onFailureQueueName, props.stage),
      retentionPeriod: DEAD_LETTER_RETENTION,
    });
    this.alarms = [
      deadLetterAlarm(
        scope,
        'PublisherFailuresAlarm',
        this.failures,
        'The publisher gave up on stream records after its retries; their change events were not published',
      ),
    ];
    NagSuppressions.addResourceSuppressions(this.failures, [
      {
        id: 'AwsSolutions-SQS3',
        reason:
          "This queue is the publisher's dead-letter destination (the stream event source's on-failure " +
          'destination), so it has no DLQ of its own; it is alarmed and kept for 14 days.',
      },
    ]);
    const stream = streamTrigger(declaration);
    this.function = props.functions.create(declaration);
    const tableStreamArn = props.table.tableStreamArn;
    if (!tableStreamArn) throw new Error('the breadcrumbs table has no stream; the publisher needs one');
    this.function.function.addEventSourceMapping('TableStream', {
      eventSourceArn: tableStreamArn,
      // TRIM_HORIZON: the stateful stack deploys first; breadcrumbs written before the publisher exists
      // (definitions put by hand, for example) are still published rather than silently skipped.
      startingPosition: StartingPosition.TRIM_HORIZON,
      batchSize: stream.batchSize,
      maxBatchingWindow: Duration.seconds(stream.maxBatchingWindowSeconds),
      retryAttempts: stream.retryAttempts,
      bisectBatchOnError: stream.bisectBatchOnError,
      parallelizationFactor: stream.parallelizationFactor,
      reportBatchItemFailures: true,
      onFailure: new SqsDlq(this.failures),
      ...(stream.filters
        ? { filters: stream.filters.map((pattern) => ({ pattern: JSON.stringify(pattern) })) }
        : {}),
    });
  }
}
