/**
 * The tool kind (`tool.def.v1`): a `tool.request.v1 { tool, input, requestId, requestedBy }` in, one
 * `tool.response.v1 { request_id, tool, status, output | error, duration_ms, requestedBy }` tagged
 * `request:<requestId>` out, as in the seeds.
 *
 * The input is validated (`#shared/domain/lang/json-schema.ts`, through the data checks: past a few milliseconds
 * in a worker thread, never on the event loop other requests share) against the definition's `input_schema` and the
 * built-in's own schema, the built-in named by `implementation` runs under `timeout_ms`, and its output is
 * validated against `output_schema`. Validation failures, unknown tools, timeouts and tool errors are answered
 * with `status: "error"` and a message naming the field; only retriable failures (throttling, the Lambda running
 * out of time) go back to SQS. Compiled schemas are cached per definition version.
 *
 * The tools it can run are the catalog its handler passes in (`functions/executor-tool/handler.ts`).
 */

import { dataChecks } from '#shared/adapters/checks/checks.ts';
import { inToolSpan } from '#shared/core/model-calls/genai-spans.ts';
import { BudgetExceededError, RequestBudgetSchema, requestLimits, tighter } from '#shared/domain/budget.ts';
import type { ToolDefinition } from '#shared/domain/definitions.ts';
import { isCrumbsError, isRetriable, NonRetriableError, RetriableError } from '#shared/domain/errors.ts';
import { formatIssues } from '#shared/domain/lang/json-schema.ts';
import { llmToolConfig, llmToolLimits } from '#shared/domain/llm-tool.ts';
import type { DataChecks } from '#shared/ports/checks.ts';
import type { SecretSource } from '#shared/ports/secrets.ts';
import type { ToolCatalog } from '#shared/tools/catalog.ts';
import type { ToolContext } from '#shared/tools/tool.ts';
import { ERROR_ANSWERS, readToolRequest, toolResponse } from '../executor/answers.ts';
import type { ExecutorKindImplementation, KindDependencies } from '../executor/contract.ts';
import { effectKey } from '../executor/outputs.ts';

/** When the definition sets no `timeout_ms`. */
export const DEFAULT_TOOL_TIMEOUT_MS = 30_000;

/** What a tool is given (`ToolContext`), and which tool runs on what input, for how long. */
export interface RunToolOptions extends ToolContext {
  /** The tools this executor can run. */
  tools: ToolCatalog;
  /** Where the input is checked against the tool's own schema; default this process's (`dataChecks()`). */
  checks?: DataChecks;
  /** Name of the built-in (`implementation`). */
  implementation: string;
  input: unknown;
  timeoutMs: number;
}

/**
 * Runs a built-in tool in-process: checks its own input schema, applies the timeout (the tool gets the abort
 * signal; a tool that ignores it is not waited for). Throws NonRetriableError for the caller to answer with, or
 * RetriableError when the executor itself is out of time.
 */
export async function runBuiltinTool(options: RunToolOptions): Promise<unknown> {
  const tool = options.tools.get(options.implementation);
  if (!tool)
    throw new NonRetriableError(`no built-in tool named "${options.implementation}" in this executor`);
  const issues = await (options.checks ?? dataChecks()).validate(
    options.workspace,
    {
      cacheKey: `builtin:${tool.name}`,
      schema: tool.inputSchema,
      what: `the ${tool.name} tool's input schema`,
      value: options.input,
      root: 'input',
    },
    options.signal,
  );
  if (issues.length > 0) {
    throw new NonRetriableError(`invalid input for ${tool.name}: ${formatIssues(issues)}`);
  }
  const timeout = AbortSignal.timeout(options.timeoutMs);
  const signal = AbortSignal.any([options.signal, timeout]);
  let onAbort: (() => void) | undefined;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(signal.reason);
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    return await Promise.race([
      tool.run(options.input, {
        workspace: options.workspace,
        store: options.store,
        signal,
        config: options.config,
        principal: options.principal,
        causation: options.causation,
        log: options.log,
        context: options.context,
        ...(options.definition !== undefined ? { definition: options.definition } : {}),
        ...(options.secrets !== undefined ? { secrets: options.secrets } : {}),
        ...(options.checks !== undefined ? { checks: options.checks } : {}),
        ...(options.effectKey !== undefined ? { effectKey: options.effectKey } : {}),
      }),
      aborted,
    ]);
  } catch (error) {
    if (options.signal.aborted) {
      throw new RetriableError(`the executor ran out of time while ${tool.name} was running`, {
        cause: error,
      });
    }
    if (timeout.aborted)
      throw new NonRetriableError(`${tool.name} timed out after ${options.timeoutMs} ms`, { cause: error });
    if (isCrumbsError(error)) throw error;
    throw new NonRetriableError(
      `${tool.name} failed: ${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    );
  } finally {
    if (onAbort) signal.removeEventListener('abort', onAbort);
    aborted.catch(() => undefined);
  }
}

export interface ToolKindDeps extends Pick<KindDependencies, 'store' | 'log' | 'clock'> {
  tools: ToolCatalog;
  /** Where the tools read the credentials a definition names by `secret_ref` (the `http` tool's headers). */
  secrets?: SecretSource;
  /**
   * Where requests and answers are checked against the definition's schemas: off the event loop past a slice, in
   * the workspace's share (`shared/ports/checks.ts`). Default this process's (`dataChecks()`).
   */
  checks?: DataChecks;
}

export function createToolKind(deps: ToolKindDeps): ExecutorKindImplementation<ToolDefinition> {
  const { clock } = deps;
  const checks = {
    validate: (...args: Parameters<DataChecks['validate']>) =>
      (deps.checks ?? dataChecks()).validate(...args),
  };
  return {
    async execute(execution) {
      const { definition, definitionRef: ref } = execution;
      const started = clock.now().getTime();
      const request = readToolRequest(execution.trigger);
      const answer = (result: Parameters<typeof toolResponse>[2]) => ({
        outputs: [toolResponse(definition, request, result, Math.max(0, clock.now().getTime() - started))],
      });
      const cacheKey = `${ref.workspace}/${ref.id}@${ref.version}`;
      try {
        if (definition.input_schema) {
          const issues = await checks.validate(
            ref.workspace,
            {
              cacheKey: `${cacheKey}:input`,
              schema: definition.input_schema,
              what: `${definition.name}'s input_schema`,
              value: request.input,
              root: 'input',
            },
            execution.signal,
          );
          if (issues.length > 0) {
            return answer({ status: 'error', error: `invalid input: ${formatIssues(issues)}` });
          }
        }
        // The execution's GenAI span; its call id is the request's (one per tool call of a model, deterministic).
        const output = await inToolSpan(
          { name: definition.name, callId: request.requestId, description: definition.description },
          () =>
            runBuiltinTool({
              tools: deps.tools,
              implementation: definition.implementation,
              input: request.input,
              timeoutMs: definition.timeout_ms ?? DEFAULT_TOOL_TIMEOUT_MS,
              signal: execution.signal,
              workspace: ref.workspace,
              store: deps.store,
              config: definition.config,
              principal: execution.principal,
              causation: execution.causation,
              log: deps.log,
              context: execution.context,
              definition,
              ...(deps.checks !== undefined ? { checks: deps.checks } : {}),
              ...(deps.secrets !== undefined ? { secrets: deps.secrets } : {}),
              effectKey: (callIndex) =>
                effectKey(ref.id, execution.trigger.id, execution.trigger.version, callIndex),
            }),
        );
        if (definition.output_schema) {
          const issues = await checks.validate(
            ref.workspace,
            {
              cacheKey: `${cacheKey}:output`,
              schema: definition.output_schema,
              what: `${definition.name}'s output_schema`,
              value: output,
              root: 'output',
            },
            execution.signal,
          );
          if (issues.length > 0) {
            return answer({ status: 'error', error: `invalid output: ${formatIssues(issues)}` });
          }
        }
        return answer({ status: 'success', output: output ?? null });
      } catch (error) {
        // Retriable: SQS delivers the request again. Not ours (a bug): the pipeline answers with errorOutput.
        if (isRetriable(error, execution.signal) || !isCrumbsError(error)) throw error;
        // A model call its budget could not pay for: the answer says which budget (a run pauses on it).
        if (error instanceof BudgetExceededError) {
          return answer({ status: 'error', error: error.message, budget_stop: error.stop });
        }
        return answer({ status: 'error', error: error.message });
      }
    },

    answersOnce: true,
    // The `llm` tool's call answers to its `config.budget`, tightened by a share its request carries (`budget`).
    modelBudget: ({ definition, trigger }) => {
      const carried = RequestBudgetSchema.safeParse(asRecord(trigger.context).budget);
      const own = definition.implementation === 'llm' ? llmToolLimits(llmToolConfig(definition.config)) : {};
      return carried.success ? tighter(own, requestLimits(carried.data)) : own;
    },
    errorOutput: ERROR_ANSWERS.tool,
  };
}

function asRecord(value: unknown): Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {};
}
