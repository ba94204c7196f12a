/**
 * Compiled rule targets have a dead-letter queue and a retry policy, and the local EventBridge honours them as
 * EventBridge does: on a local stack of its own (this test deletes an executor queue), seed 002's agent is applied
 * through the API, its agent queue is deleted behind its back, and the user message its rule matches ends in the
 * rule targets' DLQ, where the DLQ handler answers it with an agent.error.v1 in the message's thread, so the user
 * is not left waiting.
 */
import { EventBridgeClient, ListTargetsByRuleCommand } from '@aws-sdk/client-eventbridge';
import {
  DeleteQueueCommand,
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CrumbsClient } from '#cli/api-client.ts';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '#local/aws-env.ts';
import { type LocalStack, startLocalStack } from '#local/stack.ts';
import { topology } from '#shared/topology.ts';
import { eventually, uniqueWorkspace } from '../support/local.ts';
import { seed002Breadcrumb } from '../support/seeds.ts';

let stack: LocalStack;
let sqs: SQSClient;
let events: EventBridgeClient;

beforeAll(async () => {
  stack = await startLocalStack({
    apiPort: 0,
    dynamodbPort: 0,
    sqsPort: 0,
    eventbridgePort: 0,
    schedulerPort: 0,
    token: 'dlq-token',
    seedDemo: false,
  });
  const config = { region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS };
  sqs = new SQSClient({ ...config, endpoint: stack.endpoints.sqs, useQueueUrlAsEndpoint: false });
  events = new EventBridgeClient({ ...config, endpoint: stack.endpoints.eventbridge });
}, 90_000);

afterAll(async () => {
  sqs?.destroy();
  events?.destroy();
  await stack?.stop();
});

async function queueUrl(name: string): Promise<string> {
  return (await sqs.send(new GetQueueUrlCommand({ QueueName: name }))).QueueUrl ?? '';
}

describe('compiled rule targets: dead-letter queue and retry policy', () => {
  it('dead-letters what the agent rule cannot deliver, and answers the user message with an agent error', async () => {
    const c = new CrumbsClient({
      endpoint: stack.endpoints.api,
      token: 'dlq-token',
      workspace: uniqueWorkspace('dlq'),
    });
    const written = await c.put('agent-file-manager', seed002Breadcrumb as never);
    const status = await eventually(async () => {
      const page = await c.list({
        schema_name: 'definition.status.v1',
        tag: 'definition:agent-file-manager',
        limit: 1,
        view: 'full',
      });
      const s = page.items[0]?.context;
      return s && Number(s.definition_version) >= written.version ? s : undefined;
    }, 20_000);
    expect(status.state).toBe('active');

    // The compiled target carries the DLQ and the declared retry policy.
    const dlqUrl = await queueUrl(topology.bus.ruleTargets.dlqName);
    const dlqArn = (
      await sqs.send(new GetQueueAttributesCommand({ QueueUrl: dlqUrl, AttributeNames: ['QueueArn'] }))
    ).Attributes?.QueueArn;
    const { Targets } = await events.send(
      new ListTargetsByRuleCommand({ Rule: String(status.rule_name), EventBusName: topology.bus.name }),
    );
    expect(Targets).toHaveLength(1);
    expect(Targets?.[0]).toMatchObject({
      DeadLetterConfig: { Arn: dlqArn },
      RetryPolicy: {
        MaximumRetryAttempts: topology.bus.ruleTargets.maximumRetryAttempts,
        MaximumEventAgeInSeconds: topology.bus.ruleTargets.maximumEventAgeSeconds,
      },
    });

    // The agent queue disappears: EventBridge cannot deliver the next match.
    await sqs.send(
      new DeleteQueueCommand({
        QueueUrl: await queueUrl(topology.functions.executors.agent.trigger.queue.name),
      }),
    );
    const message = await c.create({
      schema_name: 'user.message.v1',
      tags: ['user:message'],
      context: { content: 'Can you list my files?' },
    });

    const answer = await eventually(
      async () =>
        (await c.list({ schema_name: 'agent.error.v1', tag: `thread:${message.id}`, limit: 5, view: 'full' }))
          .items[0],
      30_000,
    );
    expect(answer.created_by).toBe('agent:file-manager');
    expect(answer.context).toMatchObject({ agent_id: 'file-manager', response_to: message.id });
    expect(String(answer.context.error)).toContain(
      'EventBridge could not deliver it to the agent queue: NO_RESOURCE',
    );
    expect(answer.causation).toMatchObject({ caused_by: `${message.id}@1`, thread: message.id, hop: 1 });
  });
});
