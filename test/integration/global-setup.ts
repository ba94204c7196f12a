/**
 * Starts one local stack (DynamoDB Local, fauxqs, the local EventBridge, pollers, the HTTP API) for all
 * integration tests, on free ports, with a scripted OpenAI-compatible model server (test/support/fake-openai.ts)
 * behind the `openai-compatible` provider. Tests isolate themselves by workspace.
 */
import type { JsonWebKey } from 'node:crypto';
import type { TestProject } from 'vitest/node';
import type { LocalStack } from '#local/stack.ts';
import { type FakeOpenAi, startFakeOpenAi } from '../support/fake-openai.ts';
import {
  acquireStack,
  releaseStack,
  SCOPED_TOKEN,
  SCOPED_WORKSPACE,
  SECRETS_WORKSPACE,
  sharedIssuer,
  TEST_TOKEN,
} from '../support/shared-stack.ts';

export { SCOPED_TOKEN, SCOPED_WORKSPACE, SECRETS_WORKSPACE, TEST_TOKEN };

declare module 'vitest' {
  export interface ProvidedContext {
    crumbs: {
      api: string;
      dynamodb: string;
      sqs: string;
      eventbridge: string;
      scheduler: string;
      blobs: string;
      token: string;
      scopedToken: string;
      scopedWorkspace: string;
    };
    /** Base URL of the scripted OpenAI-compatible server the stack's `openai-compatible/<script>` models call. */
    fakeOpenAi: string;
    /** The stack's OpenID Connect issuer (`test/support/oidc-issuer.ts`) and its signing key. */
    oidc: { issuer: string; privateJwk: JsonWebKey };
  }
}

let stack: LocalStack | undefined;
let fakeOpenAi: FakeOpenAi | undefined;

export async function setup(project: TestProject): Promise<void> {
  fakeOpenAi = await startFakeOpenAi();
  // The stack runs in this process: its agent executor reads the base URL from here.
  process.env.OPENAI_COMPATIBLE_BASE_URL = fakeOpenAi.baseUrl;
  // Shared with the browser tests (test/support/shared-stack.ts); it allows private networks, so the agent-type
  // tests reach their MCP servers, APIs and A2A partners on loopback through the executors' network guard, and
  // gives workspace SECRETS_WORKSPACE the credential the api agent test names by secret_ref.
  stack = await acquireStack();
  project.provide('crumbs', {
    ...stack.endpoints,
    token: stack.token,
    scopedToken: SCOPED_TOKEN,
    scopedWorkspace: SCOPED_WORKSPACE,
  });
  project.provide('fakeOpenAi', fakeOpenAi.baseUrl);
  const issuer = await sharedIssuer();
  project.provide('oidc', { issuer: issuer.issuer, privateJwk: issuer.privateJwk });
}

export async function teardown(): Promise<void> {
  if (stack) await releaseStack();
  await fakeOpenAi?.stop();
}
