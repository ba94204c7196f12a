/**
 * Running untrusted JavaScript (a function agent's `function_code`) with limits and no ambient authority. The
 * adapter is `shared/adapters/sandbox/quickjs-sandbox.ts` (QuickJS compiled to WebAssembly).
 */

/** Host functions the code may call as `ctx.<name>(arg)`; each returns a promise inside the sandbox. */
export type SandboxBridge = Readonly<Record<string, (arg: unknown) => Promise<unknown>>>;

export interface SandboxLimits {
  /** Wall time for the whole run, bridged calls included; CPU loops are interrupted at this deadline. */
  readonly timeoutMs: number;
  readonly memoryMb: number;
  /** Ends the run at once (the worker is terminated): the Lambda is about to time out, or the workspace's slot was refused. */
  readonly signal?: AbortSignal;
}

export type SandboxResult =
  | { readonly ok: true; readonly value: unknown; readonly logs: readonly string[] }
  | {
      readonly ok: false;
      /** What ended the run, in words a definition author can act on. */
      readonly error: string;
      readonly reason: 'timeout' | 'memory' | 'error' | 'invalid-code' | 'output';
      readonly logs: readonly string[];
    };

export interface Sandbox {
  /** Evaluates `code`, which defines `async function handler(input, ctx)`, and awaits `handler(input, ctx)`. */
  run(code: string, input: unknown, bridge: SandboxBridge, limits: SandboxLimits): Promise<SandboxResult>;
}
