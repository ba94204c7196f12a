/**
 * Starts one local stack (DynamoDB Local, fauxqs, the local EventBridge, pollers, the HTTP API) for all
 * integration tests, on free ports. Tests isolate themselves by workspace.
 */
import type { TestProject } from 'vitest/node';
import { type LocalStack, startLocalStack } from '#local/stack.ts';
import { parseScopedTokens } from '#local/tokens.ts';

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
    scopedTokens: parseScopedTokens(JSON.stringify({ [SCOPED_TOKEN]: [SCOPED_WORKSPACE] })),
    // Tests call their own HTTP servers on 127.0.0.1 through the http tool.
    allowPrivateNetwork: true,
    retryDelaySeconds: 1,
  });
  project.provide('crumbs', {
    ...stack.endpoints,
    token: stack.token,
    scopedToken: SCOPED_TOKEN,
    scopedWorkspace: SCOPED_WORKSPACE,
  });
}

export async function teardown(): Promise<void> {
  await stack?.stop();
}
