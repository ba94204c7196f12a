/**
 * Timers and schedules on AWS: an EventBridge Scheduler schedule group, the timers queue every schedule targets
 * (with its DLQ and alarm, as every crumbs work queue), and the execution role Scheduler assumes to deliver, which
 * may send to that queue and its DLQ and nothing else. Functions that create schedules get `iam:PassRole` on that
 * one role (`CrumbsFunction.bindTimers`), so no schedule can target anything but the timers queue.
 */
import { Duration, Stack } from 'aws-cdk-lib';
import type { Alarm } from 'aws-cdk-lib/aws-cloudwatch';
import { PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { CfnScheduleGroup } from 'aws-cdk-lib/aws-scheduler';
import { Construct } from 'constructs';
import type { QueueDeclaration } from '#shared/topology.ts';
import { stageName, WorkQueue } from './work-queue.ts';

export interface TimersProps {
  readonly stage: string;
  /** The timers queue's declaration (the timer function's trigger). */
  readonly queue: QueueDeclaration;
  /** The group's name before the stage suffix (`topology.timers.scheduleGroup`). */
  readonly scheduleGroup: string;
  /** The role's name before the stage suffix (`topology.timers.schedulerRoleName`). */
  readonly schedulerRoleName: string;
}

export class Timers extends Construct {
  public readonly queue: WorkQueue;
  public readonly scheduleGroup: CfnScheduleGroup;
  public readonly scheduleGroupName: string;
  /** Assumed by EventBridge Scheduler (this account only) to send fired schedules to the timers queue. */
  public readonly schedulerRole: Role;
  public readonly deadLetterAlarm: Alarm;

  constructor(scope: Construct, id: string, props: TimersProps) {
    super(scope, id);
    this.queue = new WorkQueue(this, 'Queue', { declaration: props.queue, stage: props.stage });
    this.deadLetterAlarm = this.queue.deadLetterAlarm;
    this.scheduleGroupName = stageName(props.scheduleGroup, props.stage);
    this.scheduleGroup = new CfnScheduleGroup(this, 'ScheduleGroup', { name: this.scheduleGroupName });
    const account = Stack.of(this).account;
    this.schedulerRole = new Role(this, 'SchedulerRole', {
      // IAM names are global to the account: the region makes the same stage deployable in two regions.
      roleName: `${stageName(props.schedulerRoleName, props.stage)}-${Stack.of(this).region}`,
      description: 'EventBridge Scheduler delivers crumbs timers and schedules to the timers queue',
      assumedBy: new ServicePrincipal('scheduler.amazonaws.com', {
        conditions: { StringEquals: { 'aws:SourceAccount': account } },
      }),
      maxSessionDuration: Duration.hours(1),
    });
    this.schedulerRole.addToPolicy(
      new PolicyStatement({
        sid: 'SendFiredTimers',
        actions: ['sqs:SendMessage'],
        resources: [this.queue.queue.queueArn, this.queue.deadLetterQueue.queueArn],
      }),
    );
  }

  /** The ARN of every schedule in the group (`schedule/<group>/*`). */
  scheduleArnPattern(): string {
    return Stack.of(this).formatArn({
      service: 'scheduler',
      resource: 'schedule',
      resourceName: `${this.scheduleGroupName}/*`,
    });
  }
}
