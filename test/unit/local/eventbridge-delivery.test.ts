/**
 * The local EventBridge's delivery retries, with SQS faked at the SDK boundary (`aws-sdk-client-mock`) so that
 * transient failures can be produced on demand; the queue-deleted path runs against fauxqs in
 * eventbridge-server.test.ts.
 */
import { GetQueueUrlCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { classifyDeliveryError, Deliverer } from '#local/eventbridge/delivery.ts';
import type { Rule, Target } from '#local/eventbridge/state.ts';

const sqs = mockClient(SQSClient);
afterAll(() => sqs.restore());

const TARGET = 'arn:aws:sqs:us-east-1:000000000000:executor';
const DLQ = 'arn:aws:sqs:us-east-1:000000000000:rule-targets-dlq';
const RULE: Rule = {
  Name: 'crumbs-def-x',
  Arn: 'arn:aws:events:us-east-1:000000000000:rule/crumbs/crumbs-def-x',
  EventBusName: 'crumbs',
  State: 'ENABLED',
  CreatedBy: '000000000000',
  targets: [],
};
const EVENT = { id: 'e-1', source: 'crumbs', 'detail-type': 'Breadcrumb Created', detail: { n: 1 } };

function throttled(): Error {
  return Object.assign(new Error('Rate exceeded'), { name: 'ThrottlingException' });
}

/** Deliveries to the target fail with `error` until `failures` have happened; the DLQ always accepts. */
function sqsFailing(failures: number, error: () => Error) {
  const sent: { queue: string; attributes: Record<string, string | undefined>; body: string }[] = [];
  let failed = 0;
  sqs.reset();
  sqs.on(GetQueueUrlCommand).callsFake(async (input: { QueueName: string }) => ({
    QueueUrl: `http://sqs.local/000000000000/${input.QueueName}`,
  }));
  sqs.on(SendMessageCommand).callsFake(async (input: SendMessageCommand['input']) => {
    const queue = String(input.QueueUrl).split('/').pop() ?? '';
    if (queue === 'executor' && failed < failures) {
      failed++;
      throw error();
    }
    sent.push({
      queue,
      body: input.MessageBody ?? '',
      attributes: Object.fromEntries(
        Object.entries(input.MessageAttributes ?? {}).map(([k, v]) => [k, v.StringValue]),
      ),
    });
    return { MessageId: 'm' };
  });
  return { sent, attempts: () => failed };
}

function deliver(target: Target, ingestionTime = new Date().toISOString()) {
  const deliverer = new Deliverer({
    sqsEndpoint: 'http://sqs.local',
    region: 'us-east-1',
    baseDelayMs: 1,
    maxAttempts: 10,
  });
  deliverer.schedule({ event: EVENT, rule: RULE, target, ingestionTime });
  return deliverer;
}

describe('local EventBridge delivery', () => {
  beforeEach(() => sqs.reset());

  it('retries a transient failure and delivers, without touching the DLQ', async () => {
    const { sent } = sqsFailing(2, throttled);
    const deliverer = deliver({
      Id: 'executor',
      Arn: TARGET,
      DeadLetterConfig: { Arn: DLQ },
      RetryPolicy: { MaximumRetryAttempts: 3, MaximumEventAgeInSeconds: 3600 },
    });
    await deliverer.idle();
    expect(sent.map((s) => s.queue)).toEqual(['executor']);
    expect(deliverer.stats).toMatchObject({ delivered: 1, retries: 2, deadLettered: 0, failed: 0 });
  });

  it('gives up after MaximumRetryAttempts retries and dead-letters the event with the attributes', async () => {
    const { sent, attempts } = sqsFailing(100, throttled);
    const deliverer = deliver({
      Id: 'executor',
      Arn: TARGET,
      DeadLetterConfig: { Arn: DLQ },
      RetryPolicy: { MaximumRetryAttempts: 2, MaximumEventAgeInSeconds: 3600 },
    });
    await deliverer.idle();
    expect(attempts()).toBe(3);
    expect(sent).toHaveLength(1);
    expect(sent[0]?.queue).toBe('rule-targets-dlq');
    expect(JSON.parse(sent[0]?.body ?? '{}')).toEqual(EVENT);
    expect(sent[0]?.attributes).toEqual({
      RULE_ARN: RULE.Arn,
      TARGET_ARN: TARGET,
      ERROR_CODE: 'THROTTLING',
      ERROR_MESSAGE: 'Rate exceeded',
      EXHAUSTED_RETRY_CONDITION: 'MaximumRetryAttempts',
      RETRY_ATTEMPTS: '2',
    });
    expect(deliverer.stats).toMatchObject({ delivered: 0, failed: 1, deadLettered: 1, retries: 2 });
  });

  it('stops retrying once the event is older than MaximumEventAgeInSeconds', async () => {
    const { sent, attempts } = sqsFailing(100, throttled);
    const twoMinutesAgo = new Date(Date.now() - 120_000).toISOString();
    const deliverer = deliver(
      {
        Id: 'executor',
        Arn: TARGET,
        DeadLetterConfig: { Arn: DLQ },
        RetryPolicy: { MaximumRetryAttempts: 185, MaximumEventAgeInSeconds: 60 },
      },
      twoMinutesAgo,
    );
    await deliverer.idle();
    expect(attempts()).toBe(1);
    expect(sent[0]?.attributes).toMatchObject({
      EXHAUSTED_RETRY_CONDITION: 'MaximumEventAgeInSeconds',
      RETRY_ATTEMPTS: '0',
    });
  });

  it('does not retry an error retrying cannot fix', async () => {
    const gone = () =>
      Object.assign(new Error('The specified queue does not exist.'), { name: 'QueueDoesNotExist' });
    const { sent, attempts } = sqsFailing(100, gone);
    const deliverer = deliver({
      Id: 'executor',
      Arn: TARGET,
      DeadLetterConfig: { Arn: DLQ },
      RetryPolicy: { MaximumRetryAttempts: 185, MaximumEventAgeInSeconds: 86_400 },
    });
    await deliverer.idle();
    expect(attempts()).toBe(1);
    expect(sent[0]?.attributes).toMatchObject({ ERROR_CODE: 'NO_RESOURCE', RETRY_ATTEMPTS: '0' });
    expect(sent[0]?.attributes).not.toHaveProperty('EXHAUSTED_RETRY_CONDITION');
  });
});

describe('classifyDeliveryError', () => {
  it.each([
    [{ name: 'QueueDoesNotExist' }, 'NO_RESOURCE', false],
    [{ name: 'AccessDenied' }, 'NO_PERMISSIONS', false],
    [{ name: 'InvalidParameterValue' }, 'INVALID_PARAMETER', false],
    [{ name: 'ThrottlingException' }, 'THROTTLING', true],
    [{ name: 'TimeoutError' }, 'TIMEOUT', true],
    [{ name: 'Error', code: 'ECONNREFUSED' }, 'CONNECTION_FAILURE', true],
    [{ name: 'InternalError' }, 'SDK_CLIENT_ERROR', true],
  ])('%j is %s (retried: %s)', (fields, code, retriable) => {
    const error = Object.assign(new Error('boom'), fields);
    expect(classifyDeliveryError(error)).toMatchObject({ code, retriable });
  });
});
