/**
 * One local stack for every test project that needs one (integration and the browser tests): their global setups
 * run in the same process, and two stacks side by side — two DynamoDB Locals, two sets of pollers — would only
 * slow each other down on a 2-core machine. Counted, so the last project to finish stops it.
 */
import { type LocalStack, startLocalStack } from '#local/stack.ts';

export const TEST_TOKEN = 'integration-test-token';

const shared = globalThis as typeof globalThis & {
  __crumbsTestStack?: { users: number; stack: Promise<LocalStack> };
};

export function acquireStack(): Promise<LocalStack> {
  shared.__crumbsTestStack ??= {
    users: 0,
    stack: startLocalStack({
      apiPort: 0,
      dynamodbPort: 0,
      sqsPort: 0,
      eventbridgePort: 0,
      token: TEST_TOKEN,
    }),
  };
  shared.__crumbsTestStack.users++;
  return shared.__crumbsTestStack.stack;
}

export async function releaseStack(): Promise<void> {
  const entry = shared.__crumbsTestStack;
  if (!entry) return;
  entry.users--;
  if (entry.users > 0) return;
  shared.__crumbsTestStack = undefined;
  await (await entry.stack).stop();
}
