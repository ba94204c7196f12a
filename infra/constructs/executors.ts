/**
 * The executors: one queue (with its DLQ and alarm) and one function per executor runner. Compiled definition
 * rules deliver to the queues (only rules named with the rule manager's prefix may: `allowRuleDelivery`); each
 * runner's function consumes its queue. A part of the stateless stack: its resources are created in the stack's
 * scope (see `topology-functions.ts` for why).
 */
import { Duration } from 'aws-cdk-lib';
import type { Alarm } from 'aws-cdk-lib/aws-cloudwatch';
import type { IQueue, Queue } from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { EXECUTOR_RUNNERS, type ExecutorRunner, topology } from '#shared/topology.ts';
import type { CrumbsFunction } from './crumbs-function.ts';
import { pascal, sqsTrigger, type TopologyFunctions } from './topology-functions.ts';
import { WorkQueue } from './work-queue.ts';

export interface ExecutorsProps {
  readonly stage: string;
  readonly functions: TopologyFunctions;
  /** ARN patterns of the compiled rules (one per bus of the pool): the only rules that may send to the queues. */
  readonly ruleArnPatterns: readonly string[];
  /** Where the DLQ handler's failures on the queues' dead letters go. */
  readonly parkingQueue: IQueue;
}

export class Executors {
  public readonly queues: Readonly<Record<ExecutorRunner, WorkQueue>>;
  public readonly functions: Readonly<Record<ExecutorRunner, CrumbsFunction>>;
  /** The queues' DLQ depth alarms. */
  public readonly alarms: readonly Alarm[];

  constructor(scope: Construct, props: ExecutorsProps) {
    const f = topology.functions;
    const queues: Partial<Record<ExecutorRunner, WorkQueue>> = {};
    const functions: Partial<Record<ExecutorRunner, CrumbsFunction>> = {};
    const alarms: Alarm[] = [];
    for (const kind of EXECUTOR_RUNNERS) {
      const declaration = f.executors[kind];
      const queue = new WorkQueue(scope, `${pascal(declaration.name)}Queue`, {
        declaration: sqsTrigger(declaration).queue,
        stage: props.stage,
        deadLetterConsumerTimeout: Duration.seconds(f.dlqHandler.timeoutSeconds),
        parkingQueue: props.parkingQueue,
      }).allowRuleDelivery(props.ruleArnPatterns);
      queues[kind] = queue;
      alarms.push(queue.deadLetterAlarm);
      // The event source grants consuming the queue, which includes sqs:GetQueueUrl and
      // sqs:ChangeMessageVisibility: the executor uses both to bring a failed message back after a back-off in
      // seconds instead of the visibility timeout (shared/adapters/sqs/sqs-batch.ts; asserted in the template tests).
      functions[kind] = props.functions.consuming(declaration, queue.queue);
    }
    this.queues = queues as Record<ExecutorRunner, WorkQueue>;
    this.functions = functions as Record<ExecutorRunner, CrumbsFunction>;
    this.alarms = alarms;
  }

  /** Each runner's queue (what the rule manager targets). */
  queueMap(): Record<ExecutorRunner, Queue> {
    return Object.fromEntries(EXECUTOR_RUNNERS.map((kind) => [kind, this.queues[kind].queue])) as Record<
      ExecutorRunner,
      Queue
    >;
  }

  /** Each runner's DLQ, in runner order (the DLQ handler's event sources). */
  deadLetterQueues(): Queue[] {
    return EXECUTOR_RUNNERS.map((kind) => this.queues[kind].deadLetterQueue);
  }
}
