/**
 * The browser tests' own local stack, as `crumbs dev` runs it, on free ports.
 */
import type { TestProject } from 'vitest/node';
import { type LocalStack, startLocalStack } from '#local/stack.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    e2e: { api: string; token: string; dashboard: string };
  }
}

let stack: LocalStack | undefined;

export async function setup(project: TestProject): Promise<void> {
  stack = await startLocalStack({
    apiPort: 0,
    dynamodbPort: 0,
    sqsPort: 0,
    eventbridgePort: 0,
    token: 'e2e-token',
  });
  project.provide('e2e', { api: stack.endpoints.api, token: stack.token, dashboard: stack.dashboard });
}

export async function teardown(): Promise<void> {
  await stack?.stop();
}
