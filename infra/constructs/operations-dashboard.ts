/**
 * The CloudWatch dashboard an operator opens first (`crumbs-<stage>`): is work flowing, is it failing, what does
 * it cost. One row per question:
 *   - queues: depth (messages visible) and age of the oldest message of every work queue;
 *   - dead letters: messages in every DLQ (the alarms say when; this says how many and since when);
 *   - functions: errors (Sum) and p95 duration of every function;
 *   - model calls: input and output tokens and cost per hour, from the executors' own metrics (EMF, namespace
 *     `METRICS_NAMESPACE`, dimension `service`: `functions/wiring/executor-handler.ts` adds them per batch);
 *   - loop stops: triggers the hop limit stopped (executors) and change events the thread budget shed (publisher).
 * A construct of its own, so the stack only hands it what it already built.
 */
import { Duration } from 'aws-cdk-lib';
import {
  Dashboard,
  GraphWidget,
  type IMetric,
  MathExpression,
  Metric,
  TextWidget,
} from 'aws-cdk-lib/aws-cloudwatch';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { METRICS_NAMESPACE } from '#shared/topology.ts';
import type { CrumbsFunction } from './crumbs-function.ts';

export interface OperationsDashboardProps {
  readonly stage: string;
  /** The queues that feed functions: depth and age of the oldest message. */
  readonly workQueues: readonly IQueue[];
  /** Every dead-letter queue. */
  readonly deadLetterQueues: readonly IQueue[];
  /** Every function: errors and p95 duration. */
  readonly functions: readonly CrumbsFunction[];
  /** The Powertools `service` of each executor (`crumbs-<function name>`): model usage and loop stops. */
  readonly executorServices: readonly string[];
  /** The publisher's `service`: the change events its thread budget shed. */
  readonly publisherService: string;
}

const FIVE_MINUTES = Duration.minutes(5);
const HOUR = Duration.hours(1);
const WIDTH = 12;

export class OperationsDashboard extends Construct {
  public readonly dashboard: Dashboard;

  constructor(scope: Construct, id: string, props: OperationsDashboardProps) {
    super(scope, id);
    const appMetric = (metricName: string, service: string, period: Duration, label?: string) =>
      new Metric({
        namespace: METRICS_NAMESPACE,
        metricName,
        dimensionsMap: { service },
        statistic: 'Sum',
        period,
        ...(label !== undefined ? { label } : {}),
      });
    /** One series summing a metric over the executors (a single line per question, not one per runner). */
    const overExecutors = (metricName: string, label: string, period: Duration): IMetric => {
      const usingMetrics: Record<string, IMetric> = {};
      // Ids are per graph: a metric's name in them keeps two series of one graph apart.
      props.executorServices.forEach((service, i) => {
        usingMetrics[`${metricName.toLowerCase()}${i}`] = appMetric(metricName, service, period);
      });
      return new MathExpression({
        expression: Object.keys(usingMetrics).join(' + '),
        usingMetrics,
        label,
        period,
      });
    };
    const graph = (title: string, left: IMetric[], right?: IMetric[]) =>
      new GraphWidget({
        title,
        left,
        ...(right !== undefined ? { right } : {}),
        width: WIDTH,
        height: 6,
      });

    this.dashboard = new Dashboard(this, 'Dashboard', {
      dashboardName: `crumbs-${props.stage}`,
      defaultInterval: Duration.hours(3),
    });
    this.dashboard.addWidgets(
      new TextWidget({
        markdown: `# crumbs (${props.stage})\nQueues, dead letters, functions, model usage and loop stops.`,
        width: 24,
        height: 2,
      }),
    );
    this.dashboard.addWidgets(
      graph(
        'Queue depth (messages visible)',
        props.workQueues.map((q) =>
          q.metricApproximateNumberOfMessagesVisible({ period: FIVE_MINUTES, statistic: 'Maximum' }),
        ),
      ),
      graph(
        'Age of the oldest message (s)',
        props.workQueues.map((q) =>
          q.metricApproximateAgeOfOldestMessage({ period: FIVE_MINUTES, statistic: 'Maximum' }),
        ),
      ),
    );
    this.dashboard.addWidgets(
      graph(
        'Dead letters (messages visible)',
        props.deadLetterQueues.map((q) =>
          q.metricApproximateNumberOfMessagesVisible({ period: FIVE_MINUTES, statistic: 'Maximum' }),
        ),
      ),
      graph('Loop stops', [
        overExecutors('LoopStops', 'triggers stopped at the hop limit', FIVE_MINUTES),
        appMetric(
          'ChangeEventsShed',
          props.publisherService,
          FIVE_MINUTES,
          'events shed by the thread budget',
        ),
      ]),
    );
    this.dashboard.addWidgets(
      graph(
        'Errors per function',
        props.functions.map((f) => f.function.metricErrors({ period: FIVE_MINUTES, statistic: 'Sum' })),
      ),
      graph(
        'Duration p95 per function (ms)',
        props.functions.map((f) => f.function.metricDuration({ period: FIVE_MINUTES, statistic: 'p95' })),
      ),
    );
    this.dashboard.addWidgets(
      graph('Model tokens per hour', [
        overExecutors('ModelInputTokens', 'input tokens', HOUR),
        overExecutors('ModelOutputTokens', 'output tokens', HOUR),
      ]),
      graph('Model cost per hour (USD)', [overExecutors('ModelCostUsd', 'cost (USD)', HOUR)]),
    );
  }
}
