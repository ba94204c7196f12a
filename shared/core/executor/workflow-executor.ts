/**
 * The workflow kind (`workflow.def.v1`): steps run in order within one invocation, each calling a tool
 * in-process. Step `input` strings starting with "=" are JSONata over `{ trigger, context, steps }` (`steps.<id>`
 * is an earlier step's output); `when` skips a step when falsy. The answer is one breadcrumb of the definition's
 * `output.schema_name` (normally `workflow.result.v1`) with every step's output; a failing step ends the run and
 * is answered with `workflow.error.v1` naming the step.
 *
 * A step's tool is looked up among the workspace's `tool.def.v1` definitions first, so its `config` (the `http`
 * tool's `allowed_hosts`), `timeout_ms` and `input_schema` apply inside workflows too; a name no definition uses
 * runs the built-in of that name with an empty config.
 */
import {
  type ToolDefinition,
  ToolDefinitionSchema,
  type WorkflowDefinition,
} from '#shared/domain/definitions.ts';
import { isRetriable, NonRetriableError } from '#shared/domain/errors.ts';
import { compileJsonSchema, formatIssues } from '#shared/domain/json-schema.ts';
import type { ToolCatalog } from '#shared/tools/catalog.ts';
import { evaluateJsonata } from '#shared/tools/jsonata.ts';
import { ERROR_ANSWERS } from './answers.ts';
import type { ExecutorKindImplementation, KindDependencies, OutputBreadcrumb } from './contract.ts';
import { DEFAULT_TOOL_TIMEOUT_MS, runBuiltinTool } from './tool-executor.ts';

export const WORKFLOW_RESULT_SCHEMA = 'workflow.result.v1';
const TOOL_DEFINITIONS_SCANNED = 100;

/** Replaces every string starting with "=" (at any depth) by its JSONata value over `scope`. */
export async function resolveExpressions(value: unknown, scope: Record<string, unknown>): Promise<unknown> {
  if (typeof value === 'string')
    return value.startsWith('=') ? evaluateJsonata(value.slice(1), scope) : value;
  if (Array.isArray(value)) return Promise.all(value.map((v) => resolveExpressions(v, scope)));
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [key, v] of Object.entries(value)) out[key] = await resolveExpressions(v, scope);
    return out;
  }
  return value;
}

export interface WorkflowExecutorDeps extends Pick<KindDependencies, 'store' | 'log'> {
  /** The tools steps can run. */
  tools: ToolCatalog;
}

export function createWorkflowExecutor(
  deps: WorkflowExecutorDeps,
): ExecutorKindImplementation<WorkflowDefinition> {
  /** The workspace's tool definitions by name (newest wins), read once per execution and only when needed. */
  async function toolDefinitions(workspace: string): Promise<Map<string, ToolDefinition>> {
    const page = await deps.store.list({
      workspace,
      schema_name: 'tool.def.v1',
      limit: TOOL_DEFINITIONS_SCANNED,
    });
    const byName = new Map<string, ToolDefinition>();
    for (const record of page.items) {
      const parsed = ToolDefinitionSchema.safeParse(record.context);
      if (parsed.success && !byName.has(parsed.data.name)) byName.set(parsed.data.name, parsed.data);
    }
    return byName;
  }

  return {
    async execute(execution) {
      const { definition, definitionRef: ref } = execution;
      const steps: Record<string, unknown> = {};
      const scope = { trigger: execution.trigger.context, context: execution.context, steps };
      let tools: Map<string, ToolDefinition> | undefined;
      let last: unknown = null;
      for (const step of definition.steps) {
        try {
          if (step.when !== undefined) {
            const condition = await evaluateJsonata(
              step.when.startsWith('=') ? step.when.slice(1) : step.when,
              scope,
            );
            if (!condition) {
              steps[step.id] = { skipped: true };
              continue;
            }
          }
          const input = await resolveExpressions(step.input, scope);
          tools ??= await toolDefinitions(ref.workspace);
          const tool = tools.get(step.tool);
          if (tool?.input_schema) {
            const issues = compileJsonSchema(
              `workflow-tool:${ref.workspace}/${tool.name}:${JSON.stringify(tool.input_schema)}`,
              tool.input_schema,
              `${tool.name}'s input_schema`,
            ).validate(input, 'input');
            if (issues.length > 0) throw new NonRetriableError(`invalid input: ${formatIssues(issues)}`);
          }
          last = await runBuiltinTool({
            tools: deps.tools,
            implementation: tool?.implementation ?? step.tool,
            input,
            timeoutMs: tool?.timeout_ms ?? DEFAULT_TOOL_TIMEOUT_MS,
            signal: execution.signal,
            workspace: ref.workspace,
            store: deps.store,
            config: tool?.config ?? {},
            principal: execution.principal,
            causation: execution.causation,
            log: deps.log,
            context: execution.context,
          });
          steps[step.id] = last;
        } catch (error) {
          if (isRetriable(error, execution.signal)) throw error;
          const reason = error instanceof Error ? error.message : String(error);
          throw new NonRetriableError(`step "${step.id}" (${step.tool}) failed: ${reason}`, { cause: error });
        }
      }
      const output: OutputBreadcrumb = {
        schema_name: definition.output.schema_name,
        title: `${definition.workflow_id}: success`,
        tags: [...definition.output.tags, `workflow:${definition.workflow_id}`],
        context: {
          workflow_id: definition.workflow_id,
          status: 'success',
          trigger_id: execution.trigger.id,
          result: last,
          steps,
        },
      };
      return { outputs: [output] };
    },

    errorOutput: ERROR_ANSWERS.workflow,
  };
}
