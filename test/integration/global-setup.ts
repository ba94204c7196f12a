/**
 * Starts one local stack (DynamoDB Local, fauxqs, the local EventBridge, pollers, the HTTP API) for all
 * integration tests, on free ports, with a scripted OpenAI-compatible model server (test/support/fake-openai.ts)
 * behind the `openai-compatible` provider. Tests isolate themselves by workspace.
 */
import type { TestProject } from 'vitest/node';
import { type LocalStack, startLocalStack } from '#local/stack.ts';
import { parseScopedTokens } from '#local/tokens.ts';
import { type FakeOpenAi, startFakeOpenAi } from '../support/fake-openai.ts';

export const TEST_TOKEN = 'integration-test-token';
/** A token that may use only `SCOPED_WORKSPACE` (CRUMBS_TOKENS): every other workspace answers 403. */
export const SCOPED_TOKEN = 'integration-scoped-token';
export const SCOPED_WORKSPACE = 'scoped-only';

declare module 'vitest' {
  export interface ProvidedContext {
    crumbs: {
      api: string;
      dynamodb: string;
      sqs: string;
      eventbridge: string;
      token: string;
      scopedToken: string;
      scopedWorkspace: string;
    };
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
  stack = await startLocalStack({
    apiPort: 0,
    dynamodbPort: 0,
    sqsPort: 0,
    eventbridgePort: 0,
    token: TEST_TOKEN,
    scopedTokens: parseScopedTokens(JSON.stringify({ [SCOPED_TOKEN]: [SCOPED_WORKSPACE] })),
    // Tests call their own HTTP servers on 127.0.0.1 through the http tool.
    allowPrivateNetwork: true,
  });
  project.provide('crumbs', {
    ...stack.endpoints,
    token: stack.token,
    scopedToken: SCOPED_TOKEN,
    scopedWorkspace: SCOPED_WORKSPACE,
  });
  project.provide('fakeOpenAi', fakeOpenAi.baseUrl);
}

export async function teardown(): Promise<void> {
  await stack?.stop();
  await fakeOpenAi?.stop();
}
