/**
 * The browser tests run against the local stack the integration tests use (one stack per test run, see
 * test/support/shared-stack.ts), started as `crumbs dev` starts it, on free ports.
 */
import type { TestProject } from 'vitest/node';
import { acquireStack, releaseStack, sharedIssuer } from '../support/shared-stack.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    e2e: { api: string; token: string; dashboard: string; issuer: string };
  }
}

let acquired = false;

export async function setup(project: TestProject): Promise<void> {
  const stack = await acquireStack();
  acquired = true;
  project.provide('e2e', {
    api: stack.endpoints.api,
    token: stack.token,
    dashboard: stack.dashboard,
    issuer: (await sharedIssuer()).issuer,
  });
}

export async function teardown(): Promise<void> {
  if (acquired) await releaseStack();
}
