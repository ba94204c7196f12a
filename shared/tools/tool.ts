/**
 * The built-in tool interface. A tool is a named function with a JSON Schema for its input; the tool executor
 * validates the request against the definition's `input_schema` and the tool's own `inputSchema`, then calls `run`
 * with what the tool may touch: its own workspace, its definition's `config`, an abort signal, and the causation
 * for anything it writes.
 */
import type { Causation } from '#shared/domain/change-event.ts';
import type { ToolDefinition } from '#shared/domain/definitions.ts';
import type { BreadcrumbStore } from '#shared/ports/breadcrumb-store.ts';
import type { DataChecks } from '#shared/ports/checks.ts';
import type { Log } from '#shared/ports/log.ts';
import type { SecretSource } from '#shared/ports/secrets.ts';

export type JsonSchema = Record<string, unknown>;

export interface ToolContext {
  /** The workspace of the tool definition: the only one a tool reads or writes. */
  workspace: string;
  store: BreadcrumbStore;
  /** Aborted at the definition's `timeout_ms` or when the Lambda is about to time out. */
  signal: AbortSignal;
  /** The tool definition's `config` (e.g. `allowed_hosts` for `http`). */
  config: Record<string, unknown>;
  /** created_by of anything the tool writes, e.g. `tool:echo`. */
  principal: string;
  /** Causation for anything the tool writes (caused by the request). */
  causation: Causation;
  log: Log;
  /** The executor's assembled context (`trigger` plus one key per context selector), as in the seeds. */
  context: Record<string, unknown>;
  /** The `tool.def.v1` being run, when a tool needs more of it than `config` (the `mcp` tool: its server). */
  definition?: ToolDefinition;
  /**
   * The credentials a definition names by `secret_ref` (the `http` tool's `config.headers` and `authentication`),
   * read as secrets of `workspace` only; absent in executors that resolve none.
   */
  secrets?: SecretSource;
  /** Where expressions and schemas from data run (`shared/ports/checks.ts`); default this process's. */
  checks?: DataChecks;
  /**
   * The `Idempotency-Key` of the tool's outgoing call `callIndex` (`shared/domain/idempotency-key.ts`): the same on
   * every attempt of this request, so a server that honours it applies the call's effect once.
   */
  effectKey?: (callIndex: number) => string;
}

export interface Tool<I = unknown, O = unknown> {
  readonly name: string;
  readonly description: string;
  readonly inputSchema: JsonSchema;
  run(input: I, ctx: ToolContext): Promise<O>;
}
