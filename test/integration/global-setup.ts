/**
 * Starts one local stack (DynamoDB Local, fauxqs, the local EventBridge, pollers, the HTTP API) for all
 * integration tests, on free ports, with a scripted OpenAI-compatible model server (test/support/fake-openai.ts)
 * behind the `openai-compatible` provider. Tests isolate themselves by workspace.
 */
import type { TestProject } from 'vitest/node';
import { type LocalStack, startLocalStack } from '#local/stack.ts';
import { type FakeOpenAi, startFakeOpenAi } from '../support/fake-openai.ts';

export const TEST_TOKEN = 'integration-test-token';

declare module 'vitest' {
  export interface ProvidedContext {
    crumbs: { api: string; dynamodb: string; sqs: string; eventbridge: string; token: string };
    /** Base URL of the scripted OpenAI-compatible server the stack's `openai-compatible/<script>` models call. */
    fakeOpenAi: string;
  }
}

let stack: LocalStack | undefined;
let fakeOpenAi: FakeOpenAi | undefined;

export async function setup(project: TestProject): Promise<void> {
  fakeOpenAi = await startFakeOpenAi();
  // The stack runs in this process: its agent executor reads the base URL from here.
  process.env.OPENAI_COMPATIBLE_BASE_URL = fakeOpenAi.baseUrl;
  // The test stack calls MCP servers, APIs and A2A partners on loopback: it allows private networks explicitly
  // (the executors' network guard refuses them otherwise).
  process.env.CRUMBS_ALLOW_PRIVATE_NETWORK = '1';
  // Credentials the agent-type tests reference by secret_ref (locally: environment variables).
  process.env.PARTNER_TOKEN = 'partner-s3cret';
  stack = await startLocalStack({
    apiPort: 0,
    dynamodbPort: 0,
    sqsPort: 0,
    eventbridgePort: 0,
    token: TEST_TOKEN,
  });
  project.provide('crumbs', { ...stack.endpoints, token: stack.token });
  project.provide('fakeOpenAi', fakeOpenAi.baseUrl);
}

export async function teardown(): Promise<void> {
  await stack?.stop();
  await fakeOpenAi?.stop();
}
