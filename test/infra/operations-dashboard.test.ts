/**
 * The CloudWatch dashboard of the stateless stack (`infra/constructs/operations-dashboard.ts`), read from the
 * synthesized template: its body is CloudFormation's join of JSON text and references, rebuilt here with each
 * reference as `<<logical id>>` so the widgets can be read as JSON.
 */
import { App } from 'aws-cdk-lib';
import { beforeAll, describe, expect, it } from 'vitest';
import { readConfig } from '#infra/config.ts';
import { buildCrumbs } from '#infra/crumbs-app.ts';
import { METRICS_NAMESPACE, topology } from '#shared/topology.ts';

const STAGE = 'test';
const CONTEXT = {
  'crumbs:stage': STAGE,
  'crumbs:jwtIssuer': 'https://issuer.example.com/pool',
  'crumbs:jwtAudience': 'crumbs-api',
  'crumbs:workspacesClaim': 'crumbs:workspaces',
  'aws:cdk:bundling-stacks': [],
};

type Json = Record<string, unknown>;
interface Resource {
  Type: string;
  Properties: Json;
}
interface Widget {
  type: string;
  properties: { title?: string; metrics?: unknown[][] };
}

let resources: Record<string, Resource>;
let dashboardName: unknown;
let widgets: Widget[];

beforeAll(() => {
  const app = new App({ context: CONTEXT });
  const stacks = buildCrumbs(app, readConfig(app.node));
  const template = app.synth().getStackByName(stacks.stateless.stackName).template as {
    Resources: Record<string, Resource>;
  };
  resources = template.Resources;
  const dashboards = Object.values(resources).filter((r) => r.Type === 'AWS::CloudWatch::Dashboard');
  expect(dashboards).toHaveLength(1);
  const [dashboard] = dashboards as [Resource];
  dashboardName = dashboard.Properties.DashboardName;
  const body = dashboard.Properties.DashboardBody as { 'Fn::Join': [string, unknown[]] };
  const text = body['Fn::Join'][1]
    .map((part) => (typeof part === 'string' ? part : `<<${refId(part)}>>`))
    .join('');
  widgets = (JSON.parse(text) as { widgets: Widget[] }).widgets;
});

function refId(value: unknown): string {
  const v = value as Json;
  const getAtt = v['Fn::GetAtt'];
  if (Array.isArray(getAtt)) return String(getAtt[0]);
  if (typeof v.Ref === 'string') return v.Ref;
  throw new Error(`not a reference: ${JSON.stringify(value)}`);
}

function widget(title: string): Widget {
  const found = widgets.find((w) => w.properties.title === title);
  if (!found) throw new Error(`no widget "${title}" in ${widgets.map((w) => w.properties.title).join(', ')}`);
  return found;
}

/** The `<<id>>` of each plain metric of the widget named `metricName`. */
function metricTargets(title: string, metricName: string): string[] {
  return (widget(title).properties.metrics ?? [])
    .filter((m) => m[1] === metricName)
    .map((m) => String(m[3]).replace(/^<<(.*)>>$/, '$1'));
}

const ids = (type: string) =>
  Object.entries(resources)
    .filter(([, r]) => r.Type === type)
    .map(([id]) => id);

function deadLetterQueueIds(): Set<string> {
  const found = new Set<string>();
  for (const id of ids('AWS::SQS::Queue')) {
    const target = (resources[id]?.Properties.RedrivePolicy as Json | undefined)?.deadLetterTargetArn;
    if (target !== undefined) found.add(refId(target));
  }
  for (const id of ids('AWS::Lambda::EventSourceMapping')) {
    const onFailure = ((resources[id]?.Properties.DestinationConfig as Json | undefined)?.OnFailure as Json)
      ?.Destination;
    if (onFailure !== undefined) found.add(refId(onFailure));
  }
  return found;
}

/** Queues an event source mapping reads, but the DLQ handler's (dead letters have their own widget). */
function workQueueIds(): Set<string> {
  const dlqs = deadLetterQueueIds();
  const dlqHandler = `crumbs-${STAGE}-${topology.functions.dlqHandler.name}`;
  return new Set(
    ids('AWS::Lambda::EventSourceMapping')
      .map((id) => resources[id]?.Properties as Json)
      .filter((m) => resources[refId(m.FunctionName)]?.Properties.FunctionName !== dlqHandler)
      .map((m) => m.EventSourceArn)
      // The publisher's mapping reads the table's stream (imported from the stateful stack): not a queue.
      .filter((arn) => arn != null && !(typeof arn === 'object' && 'Fn::ImportValue' in arn))
      .map(refId)
      .filter((id) => resources[id]?.Type === 'AWS::SQS::Queue' && !dlqs.has(id)),
  );
}

/** Each series of an application metric summed over the executors: its expression and the services it reads. */
function overExecutors(title: string, metricName: string): { expression: string; services: string[] } {
  const metrics = widget(title).properties.metrics ?? [];
  const parts = metrics.filter((m) => m[0] === METRICS_NAMESPACE && m[1] === metricName);
  const partIds = parts.map((m) => (m.at(-1) as { id: string }).id);
  const expression = metrics
    .map((m) => m[0] as { expression?: string })
    .find((m) => typeof m === 'object' && partIds.every((id) => m.expression?.includes(id)))?.expression;
  return { expression: expression ?? '', services: parts.map((m) => String(m[3])) };
}

const executorServices = Object.values(topology.functions.executors)
  .map((fn) => `crumbs-${fn.name}`)
  .sort();

describe('the operations dashboard (CloudWatch)', () => {
  it('is one dashboard named after the stage', () => {
    expect(dashboardName).toBe(`crumbs-${STAGE}`);
  });

  it('shows the depth and the oldest message age of every queue that feeds a function', () => {
    const queues = [...workQueueIds()].sort();
    expect(queues.length).toBeGreaterThanOrEqual(Object.keys(topology.functions.executors).length + 3);
    expect(
      metricTargets('Queue depth (messages visible)', 'ApproximateNumberOfMessagesVisible').sort(),
    ).toEqual(queues);
    expect(metricTargets('Age of the oldest message (s)', 'ApproximateAgeOfOldestMessage').sort()).toEqual(
      queues,
    );
  });

  it('shows the messages in every dead-letter queue', () => {
    const shown = new Set(
      metricTargets('Dead letters (messages visible)', 'ApproximateNumberOfMessagesVisible'),
    );
    for (const dlq of deadLetterQueueIds()) expect(shown, dlq).toContain(dlq);
  });

  it('shows the errors and the p95 duration of every function', () => {
    const functions = ids('AWS::Lambda::Function').filter((id) =>
      String(resources[id]?.Properties.FunctionName ?? '').startsWith(`crumbs-${STAGE}-`),
    );
    expect(functions.length).toBeGreaterThan(10);
    expect(metricTargets('Errors per function', 'Errors').sort()).toEqual(functions.sort());
    const p95 = (widget('Duration p95 per function (ms)').properties.metrics ?? []).filter(
      (m) => m[1] === 'Duration',
    );
    expect(p95.map((m) => String(m[3]).replace(/^<<(.*)>>$/, '$1')).sort()).toEqual(functions.sort());
    for (const m of p95) expect(m.at(-1)).toMatchObject({ stat: 'p95' });
  });

  it("shows model tokens and cost per hour summed over every executor, from the executors' own metrics", () => {
    for (const [title, metric] of [
      ['Model tokens per hour', 'ModelInputTokens'],
      ['Model tokens per hour', 'ModelOutputTokens'],
      ['Model cost per hour (USD)', 'ModelCostUsd'],
    ] as const) {
      const { expression, services } = overExecutors(title, metric);
      expect(services.sort(), metric).toEqual(executorServices);
      expect(expression.split(' + '), metric).toHaveLength(executorServices.length);
    }
    const hourly = (widget('Model cost per hour (USD)').properties.metrics ?? []).filter(
      (m) => m[1] === 'ModelCostUsd',
    );
    for (const m of hourly) expect(m.at(-1)).toMatchObject({ period: 3600, stat: 'Sum' });
  });

  it("shows loop stops: triggers the executors stopped at the hop limit, events the publisher's thread budget shed", () => {
    expect(overExecutors('Loop stops', 'LoopStops').services.sort()).toEqual(executorServices);
    const shed = (widget('Loop stops').properties.metrics ?? []).find((m) => m[1] === 'ChangeEventsShed');
    expect(shed?.slice(0, 4)).toEqual([
      METRICS_NAMESPACE,
      'ChangeEventsShed',
      'service',
      `crumbs-${topology.functions.publisher.name}`,
    ]);
  });
});
