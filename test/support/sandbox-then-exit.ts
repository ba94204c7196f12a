// Runs one function in the QuickJS sandbox and returns, leaving the sandbox's idle worker as the executor does:
// the process must then exit by itself (`test/unit/adapters/quickjs-sandbox.test.ts`).
import { QuickJsSandbox } from '#shared/adapters/sandbox/quickjs-sandbox.ts';

const result = await new QuickJsSandbox().run(
  'async function handler(input) { return input.n + 1; }',
  { n: 41 },
  {},
  { timeoutMs: 5000, memoryMb: 16 },
);
process.stdout.write(`${JSON.stringify(result)}\n`);
