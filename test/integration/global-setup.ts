/**
 * Starts one local stack (DynamoDB Local, fauxqs, the local EventBridge, pollers, the HTTP API) for all
 * integration tests, on free ports. Tests isolate themselves by workspace.
 */
import type { TestProject } from 'vitest/node';
import { type LocalStack, startLocalStack } from '#local/stack.ts';

export const TEST_TOKEN = 'integration-test-token';

declare module 'vitest' {
  export interface ProvidedContext {
    crumbs: { api: string; dynamodb: string; sqs: string; eventbridge: string; token: string };
  }
}

let stack: LocalStack | undefined;

export async function setup(project: TestProject): Promise<void> {
  stack = await startLocalStack({
    apiPort: 0,
    dynamodbPort: 0,
    sqsPort: 0,
    eventbridgePort: 0,
    token: TEST_TOKEN,
  });
  project.provide('crumbs', { ...stack.endpoints, token: stack.token });
}

export async function teardown(): Promise<void> {
  await stack?.stop();
}
