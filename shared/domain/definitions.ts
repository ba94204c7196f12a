/**
 * Definition breadcrumbs: the `context` of `agent.def.v1`, `tool.def.v1`, `workflow.def.v1`, `context.config.v1`,
 * and RCRT's agent shape `agent.definition.v1` (seed 002), which is normalized to the agent shape.
 * `shared/topology.ts` (`DEFINITION_SCHEMAS`) says which executor kind runs each schema.
 *
 * Decisions (the seeds leave these open):
 * - Unknown keys are tolerated and stripped, so annotated RCRT definitions keep loading.
 * - The identity field (`agent_id`, `name`, `workflow_id`, `consumer_id`) is required: it is the definition's
 *   principal (`agent:<agent_id>` …), the `created_by` of everything it writes and what its rule excludes.
 * - `tools` absent on an agent means "any tool of the workspace" (the seeds' agents name tools freely); a list
 *   restricts the agent to those names. A tool without trigger selectors is triggered by `tool.request.v1`
 *   breadcrumbs whose `context.tool` is its name, as in the seeds' tools-runner.
 * - `parseDefinition` checks structure only: the executors and the DLQ handler parse definitions on every message
 *   and need no JSONata parser (81 KB). Expressions and schemas are checked where a definition is accepted or
 *   reported on (`validateDefinition`, `definition-validation.ts`); the workflow kind compiles each when it runs.
 */

import type { ExecutorKind } from '../topology.ts';
import { DEFINITION_SCHEMAS, type DefinitionSchema } from '../topology.ts';
import {
  DeliverableConfigSchema,
  ModesSchema,
  OrchestrationConfigSchema,
  PlanConfigSchema,
} from './agent-modes.ts';
import {
  AuthenticationSchema,
  checkHeaders,
  FunctionTransportSchema,
  HeadersSchema,
  LlmSettingsSchema,
  McpTransportSchema,
  YamlFieldSchema,
} from './agent-types.ts';
import { AGENT_TYPES, TransportSchema } from './agents/types.ts';
import { SchemaNameSchema, TagSchema, toFieldIssues } from './breadcrumb.ts';
import { AgentBudgetSchema } from './budget.ts';
import {
  HopLimitSchema,
  JsonSchemaObject,
  NameSchema,
  SelectorsSchema,
  SubscriptionsSchema,
} from './definition-fields.ts';
import { ValidationError } from './errors.ts';
import { LlmToolConfigSchema } from './llm-tool.ts';
import {
  extractRequestSelector,
  MEMORY_DEF_SCHEMA,
  type MemoryDefinition,
  MemoryDefinitionSchema,
  MemoryUseSchema,
} from './memory.ts';
import {
  AGENT_CONTEXT_SCHEMA,
  AGENT_DEF_SCHEMA,
  AGENT_REQUEST_SCHEMA,
  CONTEXT_CONFIG_SCHEMA,
  LEGACY_AGENT_DEF_SCHEMA,
  replyToTag,
  TOOL_DEF_SCHEMA,
  TOOL_REQUEST_SCHEMA,
  TOOL_RESPONSE_SCHEMA,
  WORKFLOW_DEF_SCHEMA,
} from './protocol.ts';
import {
  ContextMatchSchema,
  inferRole,
  type Selector,
  type SelectorInput,
  SelectorSchema,
  TRIGGER_SCHEMAS,
} from './selector.ts';
import { ApprovalTimeoutSchema } from './tool-approval.ts';
import { PinnedNameSchema } from './version-pin.ts';
import {
  defaultWorkflowTriggers,
  type ExpressionCheck,
  type JsonSchemaCheck,
  type WorkflowDefinition,
  WorkflowDefinitionSchema,
  waitForSteps,
  workflowDefinitionSchema,
} from './workflow-definition.ts';
import * as z from './zod.ts';

export { DEFAULT_HOP_LIMIT } from './definition-fields.ts';
export const DEFAULT_MAX_TOOL_ROUNDS = 8;

// ---------------------------------------------------------------------------------------------------------------
// agent.def.v1

/**
 * `type` and the fields after `hop_limit` are seed 004's agent types (`agent-types.ts` has their shapes,
 * `agent-spec.ts` combines them per type). `subscriptions` may be left out: every agent is triggered by the
 * `agent.request.v1` breadcrumbs naming it (`agentRequestTrigger`).
 */
export const AgentDefinitionSchema = z.object({
  agent_id: NameSchema,
  /** How the agent works (seed 004); an agent that names no type is a `context` (LLM) agent. */
  type: z._default(z.enum(AGENT_TYPES, { error: `expected one of ${AGENT_TYPES.join(', ')}` }), 'context'),
  description: z.optional(z.string()),
  system_prompt: z.optional(z.string({ error: 'expected a string' })),
  model: z.optional(z.string({ error: 'expected a model id string' }).check(z.minLength(1))),
  temperature: z.optional(z.number({ error: 'expected a number' }).check(z.minimum(0), z.maximum(2))),
  subscriptions: z._default(SubscriptionsSchema, { selectors: [] }),
  /** Tool names the agent may request; absent: every tool of the workspace. */
  tools: z.optional(z.array(NameSchema, { error: 'expected an array of tool names' })),
  max_tool_rounds: z._default(
    z
      .number({ error: 'expected a whole number' })
      .check(z.int('expected a whole number'), z.minimum(0, 'at least 0'), z.maximum(100, 'at most 100')),
    DEFAULT_MAX_TOOL_ROUNDS,
  ),
  /** Per request (a turn with all its tool rounds): tokens and cost its model calls may use (`budget.ts`). */
  budget: z.optional(AgentBudgetSchema),
  /**
   * The `guardrail.def.v1` policies of the agent's turns, by `guardrail_id`, `name@version` pinning one version
   * (`shared/rooms/guardrails/`). Pinned or not, they are part of this agent version.
   */
  guardrails: z.optional(
    z.array(PinnedNameSchema, { error: 'expected an array of guardrail ids' }).check(z.maxLength(20)),
  ),
  response_schema: z.optional(JsonSchemaObject),
  /**
   * Tools whose calls a person approves before they run (`tool-approval.ts`), and how long such an approval may
   * wait before it counts as rejected ("expired"); a tool may also ask for approval itself (`tool.def.v1`).
   */
  approval: z.optional(
    z.strictObject(
      {
        tools: z.array(NameSchema, { error: 'expected an array of tool names' }),
        timeout_seconds: z.optional(ApprovalTimeoutSchema),
      },
      { error: 'expected { tools: [tool names], timeout_seconds? }' },
    ),
  ),
  hop_limit: HopLimitSchema,
  /** Markdown instructions (seed 004's `context` column), put into a context agent's system prompt. */
  context: z.optional(z.string({ error: 'expected markdown text' })),
  /** YAML text (or an object) with the agent card, tools, transforms (seed 004's `yaml` column). */
  yaml: z.optional(YamlFieldSchema),
  transport: z.optional(TransportSchema),
  /** A function agent's `async function handler(input, ctx) { … }`. */
  function_code: z.optional(
    z
      .string({ error: 'expected JavaScript source text' })
      .check(z.maxLength(100_000, 'at most 100000 characters')),
  ),
  llm: z.optional(LlmSettingsSchema),
  /** Modes, plan and deliverable (`agent-modes.ts`); each given here or inside `yaml` (seed 004), not both. */
  modes: z.optional(ModesSchema),
  plan: z.optional(PlanConfigSchema),
  deliverable: z.optional(DeliverableConfigSchema),
  orchestration: z.optional(OrchestrationConfigSchema),
  /**
   * Served as an A2A agent (`shared/core/a2a/`): `false` opts out; `{ public_card: true }` also publishes its card
   * without a token. Absent: served, card behind the token.
   */
  a2a: z.optional(
    z.union([z.literal(false), z.strictObject({ public_card: z.optional(z.boolean()) })], {
      error: 'expected false or { public_card: true|false }',
    }),
  ),
  /** Recall of the memory room (`shared/rooms/memory/recall.ts`): which memories, how many records, how similar. */
  memory: z.optional(MemoryUseSchema),
});
export type AgentDefinition = z.output<typeof AgentDefinitionSchema>;

/**
 * Seed 002's `agent.definition.v1`: `agent_name`, `triggers: [{ selector }]`, `llm_config`. Its
 * `triggers[].selector` are triggers even when their schema would infer `context` (seed 002's selector has tags
 * only): they are given `role: "trigger"` unless they say otherwise.
 */
export const LegacyAgentDefinitionSchema = z.pipe(
  z.object({
    agent_name: NameSchema,
    agent_entity_id: z.optional(z.string()),
    description: z.optional(z.string()),
    triggers: z.array(z.object({ selector: SelectorSchema }, { error: 'expected { selector: {...} }' }), {
      error: 'expected an array of { selector }',
    }),
    llm_config: z._default(
      z.object({
        model: z.optional(z.string().check(z.minLength(1))),
        system_prompt: z.optional(z.string()),
        temperature: z.optional(z.number().check(z.minimum(0), z.maximum(2))),
        response_schema: z.optional(JsonSchemaObject),
      }),
      {},
    ),
    tools: z.optional(z.array(NameSchema)),
    max_tool_rounds: z._default(
      z.number().check(z.int(), z.minimum(0), z.maximum(100)),
      DEFAULT_MAX_TOOL_ROUNDS,
    ),
    hop_limit: HopLimitSchema,
  }),
  z.transform(
    (legacy): AgentDefinition => ({
      agent_id: legacy.agent_name,
      type: 'context',
      ...(legacy.description !== undefined ? { description: legacy.description } : {}),
      ...(legacy.llm_config.system_prompt !== undefined
        ? { system_prompt: legacy.llm_config.system_prompt }
        : {}),
      ...(legacy.llm_config.model !== undefined ? { model: legacy.llm_config.model } : {}),
      ...(legacy.llm_config.temperature !== undefined ? { temperature: legacy.llm_config.temperature } : {}),
      ...(legacy.llm_config.response_schema !== undefined
        ? { response_schema: legacy.llm_config.response_schema }
        : {}),
      subscriptions: {
        selectors: legacy.triggers.map(({ selector }) => ({ ...selector, role: selector.role ?? 'trigger' })),
      },
      ...(legacy.tools !== undefined ? { tools: legacy.tools } : {}),
      max_tool_rounds: legacy.max_tool_rounds,
      hop_limit: legacy.hop_limit,
    }),
  ),
);

// ---------------------------------------------------------------------------------------------------------------
// tool.def.v1

/** Where an `implementation: "mcp"` tool lives: the MCP server, and the tool's name there (default: `name`). */
export const McpToolSchema = z.extend(McpTransportSchema, {
  tool: z.optional(z.string().check(z.minLength(1), z.maxLength(128))),
});
export type McpToolConfig = z.output<typeof McpToolSchema>;

/**
 * An `implementation: "function"` tool's code and limits: `async function handler(input, ctx) { … }`, run in the
 * sandbox function agents run in (QuickJS in WebAssembly), within `timeout_ms` and `memory_mb` (a function agent's
 * `transport.function` limits: 10–60,000 ms, 1–256 MB).
 */
export const FunctionToolSchema = z.extend(FunctionTransportSchema, {
  code: z
    .string({ error: 'expected JavaScript source text: "async function handler(input, ctx) { … }"' })
    .check(
      z.minLength(1, 'expected JavaScript source text: "async function handler(input, ctx) { … }"'),
      z.maxLength(100_000, 'at most 100000 characters'),
    ),
});
export type FunctionToolConfig = z.output<typeof FunctionToolSchema>;

export const ToolDefinitionSchema = z.pipe(
  z
    .object({
      name: NameSchema,
      description: z.optional(z.string()),
      input_schema: z.optional(JsonSchemaObject),
      output_schema: z.optional(JsonSchemaObject),
      /**
       * A built-in tool name, "mcp" (a tool of the MCP server in `mcp`) or "function" (the code in `function`);
       * defaults to `name`.
       */
      implementation: z.optional(NameSchema),
      /** With `implementation: "mcp"`: the server and the tool's name on it (`crumbs mcp import` writes these). */
      mcp: z.optional(McpToolSchema),
      /** With `implementation: "function"`: the code the sandbox runs and its limits. */
      function: z.optional(FunctionToolSchema),
      timeout_ms: z.optional(
        z
          .number({ error: 'expected a whole number of milliseconds' })
          .check(
            z.int('expected a whole number of milliseconds'),
            z.minimum(1, 'at least 1 ms'),
            z.maximum(900_000, 'at most 900000 ms (the Lambda maximum)'),
          ),
      ),
      config: z._default(z.record(z.string(), z.unknown(), { error: 'expected an object' }), {}),
      /** What MCP clients are told about the tool (crumbs' MCP server passes them on as hints). */
      annotations: z.optional(
        z.strictObject({
          read_only: z.optional(z.boolean()),
          destructive: z.optional(z.boolean()),
          idempotent: z.optional(z.boolean()),
          open_world: z.optional(z.boolean()),
        }),
      ),
      /** `"required"`: an agent's call of this tool waits for a person's approval (`tool-approval.ts`). */
      approval: z.optional(z.enum(['required', 'none'], { error: 'expected "required" or "none"' })),
      /** How long an approval of a call may wait before it counts as rejected ("expired"). */
      approval_timeout_seconds: z.optional(ApprovalTimeoutSchema),
      subscriptions: z.optional(SubscriptionsSchema),
      hop_limit: HopLimitSchema,
    })
    .check(
      z.superRefine((tool, ctx) => {
        if (tool.implementation === 'mcp' && tool.mcp === undefined) {
          ctx.addIssue({ code: 'custom', path: ['mcp'], message: 'an mcp tool needs mcp: { url, tool? }' });
        }
        if (tool.mcp !== undefined && tool.implementation !== 'mcp') {
          ctx.addIssue({
            code: 'custom',
            path: ['implementation'],
            message: 'a tool with mcp must say implementation: "mcp"',
          });
        }
        if (tool.implementation === 'function' && tool.function === undefined) {
          ctx.addIssue({
            code: 'custom',
            path: ['function'],
            message: 'a function tool needs function: { code, timeout_ms?, memory_mb? }',
          });
        }
        if (tool.function !== undefined && tool.implementation !== 'function') {
          ctx.addIssue({
            code: 'custom',
            path: ['implementation'],
            message: 'a tool with function must say implementation: "function"',
          });
        }
        checkHeaders(tool.mcp?.headers, ctx, ['mcp', 'headers']);
        if ((tool.implementation ?? tool.name) === 'http') checkHttpCredentials(tool.config, ctx);
        if ((tool.implementation ?? tool.name) === 'llm') checkLlmToolConfig(tool.config, ctx);
      }),
    ),
  z.transform(({ implementation, ...tool }) => ({ ...tool, implementation: implementation ?? tool.name })),
);
export type ToolDefinition = z.output<typeof ToolDefinitionSchema>;

/**
 * What an `http` tool definition sends with every call besides the request's own headers: `config.headers`
 * (literal values, or `{ secret_ref }` for credentials) and `config.authentication` (bearer / header / basic from a
 * secret_ref), as an api agent's transport declares them. Resolved by the tool at call time from the definition's
 * own workspace; the values are never written into the request, the answer or a log.
 */
export const HttpCredentialsSchema = z.object({
  headers: z.optional(HeadersSchema),
  authentication: z.optional(AuthenticationSchema),
});
export type HttpCredentials = z.output<typeof HttpCredentialsSchema>;

/** The `headers` and `authentication` of an http tool's config; `{}` when they are malformed (refused on write). */
export function httpCredentialsOf(config: Record<string, unknown>): HttpCredentials {
  const parsed = HttpCredentialsSchema.safeParse({
    headers: config.headers,
    authentication: config.authentication,
  });
  return parsed.success ? parsed.data : {};
}

/** An `llm` tool's `model`, `allowed_models` and `budget` (`llm-tool.ts`). */
function checkLlmToolConfig(config: Record<string, unknown>, ctx: z.core.$RefinementCtx): void {
  const parsed = LlmToolConfigSchema.safeParse(config);
  if (parsed.success) return;
  for (const issue of parsed.error.issues) {
    ctx.addIssue({ code: 'custom', path: ['config', ...issue.path], message: issue.message });
  }
}

function checkHttpCredentials(config: Record<string, unknown>, ctx: z.core.$RefinementCtx): void {
  const parsed = HttpCredentialsSchema.safeParse({
    headers: config.headers,
    authentication: config.authentication,
  });
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      ctx.addIssue({ code: 'custom', path: ['config', ...issue.path], message: issue.message });
    }
    return;
  }
  const { headers, authentication } = parsed.data;
  checkHeaders(headers, ctx, ['config', 'headers']);
  if (authentication !== undefined && authentication.secret_ref === undefined) {
    ctx.addIssue({
      code: 'custom',
      path: ['config', 'authentication', 'secret_ref'],
      message: `name the secret that holds the ${authentication.type} credential`,
    });
  }
  // A credential goes only where the definition's author said: with "*" a request (which a model may write)
  // could send it to any host on the internet.
  const sendsSecrets =
    authentication !== undefined || Object.values(headers ?? {}).some((v) => typeof v !== 'string');
  const hosts = config.allowed_hosts;
  if (sendsSecrets && Array.isArray(hosts) && hosts.includes('*')) {
    ctx.addIssue({
      code: 'custom',
      path: ['config', 'allowed_hosts'],
      message:
        'a tool that sends credentials from secret_ref must list the hosts they may go to (not "*"), so a ' +
        'request cannot send them elsewhere',
    });
  }
}

// ---------------------------------------------------------------------------------------------------------------
// workflow.def.v1: its own module (workflow-definition.ts), the engine's step language being large.

export {
  type ExpressionCheck,
  type JsonSchemaCheck,
  type WorkflowDefinition,
  WorkflowDefinitionSchema,
  workflowDefinitionSchema,
};

// ---------------------------------------------------------------------------------------------------------------
// context.config.v1

export const CONTEXT_SOURCE_METHODS = ['vector', 'recent', 'latest', 'tagged'] as const;

const SourceTagsSchema = z
  .array(TagSchema)
  .check(z.minLength(1, 'list at least one tag, or leave the field out'));

export const ContextSourceSchema = z.object({
  schema_name: z.optional(SchemaNameSchema),
  method: z.enum(CONTEXT_SOURCE_METHODS, { error: `expected one of ${CONTEXT_SOURCE_METHODS.join(', ')}` }),
  limit: z.optional(z.number().check(z.int(), z.minimum(1), z.maximum(1000))),
  nn: z.optional(z.number().check(z.int(), z.minimum(1), z.maximum(1000))),
  any_tags: z.optional(SourceTagsSchema),
  all_tags: z.optional(SourceTagsSchema),
  context_match: z.optional(z.array(ContextMatchSchema)),
  key: z.optional(
    z.string().check(z.regex(/^[A-Za-z_][A-Za-z0-9_]{0,63}$/, 'expected an identifier like "chat_history"')),
  ),
});
export type ContextSource = z.output<typeof ContextSourceSchema>;

/**
 * Update triggers are compiled into the builder's rule as they are, but the executor runs only on selectors whose
 * role is `trigger` (explicit, or inferred from a trigger schema): an update trigger on any other schema would be
 * routed and then skipped, so the builder could never run on it. Refused with the way out.
 */
const UpdateTriggersSchema = SelectorsSchema.check(
  z.minLength(1, 'at least one update trigger'),
  z.superRefine((selectors, ctx) => {
    for (const [i, selector] of selectors.entries()) {
      if (inferRole(selector) === 'trigger') continue;
      const what =
        selector.role === 'context'
          ? 'says role "context"'
          : selector.schema_name === undefined
            ? 'names no schema_name'
            : `names "${selector.schema_name}", which is not a trigger schema (${TRIGGER_SCHEMAS.join(', ')})`;
      ctx.addIssue({
        code: 'custom',
        path: [i],
        message: `this update trigger ${what}, so the builder would never run on it; give it role: "trigger"`,
      });
    }
  }),
);

export const ContextConfigSchema = z.object({
  consumer_id: NameSchema,
  update_triggers: UpdateTriggersSchema,
  sources: z._default(z.array(ContextSourceSchema, { error: 'expected an array of sources' }), []),
  output: z.object({
    schema_name: z.literal(AGENT_CONTEXT_SCHEMA, {
      error: `a context builder writes "${AGENT_CONTEXT_SCHEMA}"`,
    }),
    tags: z._default(z.array(TagSchema), []),
  }),
  formatting: z.optional(z.object({ max_tokens: z.optional(z.number().check(z.int(), z.minimum(1))) })),
  hop_limit: HopLimitSchema,
});
export type ContextConfig = z.output<typeof ContextConfigSchema>;

// ---------------------------------------------------------------------------------------------------------------
// Parsing and helpers

export type Definition =
  | AgentDefinition
  | ToolDefinition
  | WorkflowDefinition
  | ContextConfig
  | MemoryDefinition;

export interface DefinitionByKind {
  agent: AgentDefinition;
  tool: ToolDefinition;
  workflow: WorkflowDefinition;
  'context-builder': ContextConfig;
  memory: MemoryDefinition;
}

export type ParsedDefinition = {
  [K in ExecutorKind]: { kind: K; definition: DefinitionByKind[K] };
}[ExecutorKind];

/** Optional checks beyond structure, supplied by modules that carry what they need (see the header). */
export interface DefinitionChecks {
  /** Workflow expressions (step `input`, `when`, `message`, prompts, map items, `output`). */
  readonly expression?: ExpressionCheck;
  /** Workflow `input_schema` and human steps' `input_schema`. */
  readonly jsonSchema?: JsonSchemaCheck;
}

/** The schema of each definition schema name, with the given checks built in. */
export function definitionSchemas(checks: DefinitionChecks = {}) {
  return {
    [AGENT_DEF_SCHEMA]: AgentDefinitionSchema,
    [LEGACY_AGENT_DEF_SCHEMA]: LegacyAgentDefinitionSchema,
    [TOOL_DEF_SCHEMA]: ToolDefinitionSchema,
    [WORKFLOW_DEF_SCHEMA]:
      checks.expression === undefined && checks.jsonSchema === undefined
        ? WorkflowDefinitionSchema
        : workflowDefinitionSchema(checks),
    [CONTEXT_CONFIG_SCHEMA]: ContextConfigSchema,
    [MEMORY_DEF_SCHEMA]: MemoryDefinitionSchema,
  } as const satisfies Record<DefinitionSchema, z.ZodMiniType>;
}
export type DefinitionSchemas = ReturnType<typeof definitionSchemas>;

const STRUCTURAL_SCHEMAS = definitionSchemas();

export function isDefinitionSchema(schemaName: string): schemaName is DefinitionSchema {
  return Object.hasOwn(DEFINITION_SCHEMAS, schemaName);
}

function parseWith<S extends z.ZodMiniType>(schema: S, context: unknown): z.output<S> {
  const result = schema.safeParse(context);
  if (!result.success) throw new ValidationError(toFieldIssues(result.error));
  return result.data;
}

/**
 * Parses a definition breadcrumb's `context` by its schema name. Throws ValidationError whose issue paths are
 * relative to the context, e.g. `subscriptions.selectors[1].context_match[0].op`. Checks structure only unless
 * `schemas` (from `definitionSchemas`) carry more; `validateDefinition` in `definition-validation.ts` does that.
 */
export function parseDefinition(
  schemaName: string,
  context: unknown,
  schemas: DefinitionSchemas = STRUCTURAL_SCHEMAS,
): ParsedDefinition {
  if (!isDefinitionSchema(schemaName)) {
    throw new ValidationError([
      {
        path: 'schema_name',
        message: `"${schemaName}" is not a definition schema; expected one of ${Object.keys(DEFINITION_SCHEMAS).join(', ')}`,
      },
    ]);
  }
  switch (schemaName) {
    case AGENT_DEF_SCHEMA:
      return { kind: 'agent', definition: parseWith(schemas[AGENT_DEF_SCHEMA], context) };
    case LEGACY_AGENT_DEF_SCHEMA:
      return { kind: 'agent', definition: parseWith(schemas[LEGACY_AGENT_DEF_SCHEMA], context) };
    case TOOL_DEF_SCHEMA:
      return { kind: 'tool', definition: parseWith(schemas[TOOL_DEF_SCHEMA], context) };
    case WORKFLOW_DEF_SCHEMA:
      return { kind: 'workflow', definition: parseWith(schemas[WORKFLOW_DEF_SCHEMA], context) };
    case CONTEXT_CONFIG_SCHEMA:
      return { kind: 'context-builder', definition: parseWith(schemas[CONTEXT_CONFIG_SCHEMA], context) };
    case MEMORY_DEF_SCHEMA:
      return { kind: 'memory', definition: parseWith(schemas[MEMORY_DEF_SCHEMA], context) };
  }
}

/** agent_id / name / workflow_id / consumer_id. */
export function definitionName(def: Definition): string {
  if ('agent_id' in def) return def.agent_id;
  if ('workflow_id' in def) return def.workflow_id;
  if ('consumer_id' in def) return def.consumer_id;
  if ('memory_id' in def) return def.memory_id;
  return def.name;
}

/** The `created_by` of everything the definition writes: `agent:<id>`, `tool:<name>`, … */
export function definitionPrincipal<K extends ExecutorKind>(kind: K, def: DefinitionByKind[K]): string {
  return `${kind}:${definitionName(def)}`;
}

/** A selector with where it sits in the definition, for error paths (`subscriptions.selectors[2]`). */
export interface SelectorEntry {
  readonly path: string;
  readonly selector: Selector;
}

/** The trigger the seeds' tools-runner used for every tool: a tool.request.v1 naming it. */
export function defaultToolTrigger(name: string): Selector {
  return parseWith(SelectorSchema, {
    schema_name: TOOL_REQUEST_SCHEMA,
    context_match: [{ path: '$.tool', op: 'eq', value: name }],
  } satisfies SelectorInput);
}

/**
 * An agent is always triggered by the answers to its own tool requests: DESIGN.md has a `tool.response.v1`
 * re-trigger the agent that asked. Seed 003 writes that selector without a role (which would make it context),
 * so it is made a trigger here rather than asking every definition to say so.
 */
export function agentContinuationTrigger(agentId: string): Selector {
  return parseWith(SelectorSchema, {
    schema_name: TOOL_RESPONSE_SCHEMA,
    role: 'trigger',
    context_match: [{ path: '$.requestedBy', op: 'eq', value: agentId }],
  } satisfies SelectorInput);
}

/**
 * Seed 002's `agent.definition.v1` context in the agent shape (`agent_name` becomes `agent_id`), for readers that
 * take an agent's fields from its stored context (the MCP catalog, A2A cards); `{}` when it does not parse (its
 * definition is then not active anyway).
 */
export function legacyAgentContext(context: unknown): Record<string, unknown> {
  const parsed = LegacyAgentDefinitionSchema.safeParse(context);
  return parsed.success ? { ...parsed.data } : {};
}

/** Every agent is triggered by the `agent.request.v1` breadcrumbs naming it, whatever its subscriptions say. */
export function agentRequestTrigger(agentId: string): Selector {
  return parseWith(SelectorSchema, {
    schema_name: AGENT_REQUEST_SCHEMA,
    role: 'trigger',
    context_match: [{ path: '$.agent', op: 'eq', value: agentId }],
  } satisfies SelectorInput);
}

/**
 * Every agent is triggered by what is addressed to its orchestration runs: the answers to their requests, human
 * responses and controls, all tagged `reply-to:agent:<id>` (`shared/core/agents/orchestration-agent.ts`).
 */
export function agentRunTrigger(agentId: string): Selector {
  return parseWith(SelectorSchema, {
    any_tags: [replyToTag(`agent:${agentId}`)],
    role: 'trigger',
  } satisfies SelectorInput);
}

function isRequestSelector(selector: Selector, agentId: string): boolean {
  const [match, ...rest] = selector.context_match ?? [];
  return (
    selector.schema_name === AGENT_REQUEST_SCHEMA &&
    rest.length === 0 &&
    match?.path.replace(/^\$\./, '') === 'agent' &&
    match.op === 'eq' &&
    match.value === agentId
  );
}

function isContinuationSelector(selector: Selector, agentId: string): boolean {
  const [match, ...rest] = selector.context_match ?? [];
  return (
    selector.schema_name === TOOL_RESPONSE_SCHEMA &&
    rest.length === 0 &&
    match?.path.replace(/^\$\./, '') === 'requestedBy' &&
    match.op === 'eq' &&
    match.value === agentId
  );
}

function subscriptionEntries(selectors: readonly Selector[] | undefined): SelectorEntry[] {
  return (selectors ?? []).map((selector, i) => ({ path: `subscriptions.selectors[${i}]`, selector }));
}

function narrow<K extends ExecutorKind>(kind: K, def: DefinitionByKind[K]): ParsedDefinition {
  // The generic pair (kind, def) is one of the union's members by construction.
  return { kind, definition: def } as ParsedDefinition;
}

/** The selectors compiled into the definition's rule, with their paths. */
export function triggerSelectorEntries<K extends ExecutorKind>(
  kind: K,
  def: DefinitionByKind[K],
): SelectorEntry[] {
  const parsed = narrow(kind, def);
  switch (parsed.kind) {
    case 'agent': {
      const agentId = parsed.definition.agent_id;
      const entries = subscriptionEntries(parsed.definition.subscriptions.selectors)
        .filter((e) => inferRole(e.selector) === 'trigger' || isContinuationSelector(e.selector, agentId))
        // Said explicitly, so everything that asks a selector its role (the executor's re-check) agrees.
        .map((e) =>
          e.selector.role === 'trigger' ? e : { ...e, selector: { ...e.selector, role: 'trigger' as const } },
        );
      return [
        ...entries,
        ...(entries.some((e) => isContinuationSelector(e.selector, agentId))
          ? []
          : [{ path: 'agent_id', selector: agentContinuationTrigger(agentId) }]),
        ...(entries.some((e) => isRequestSelector(e.selector, agentId))
          ? []
          : [{ path: 'agent_id', selector: agentRequestTrigger(agentId) }]),
        { path: 'agent_id', selector: agentRunTrigger(agentId) },
      ];
    }
    case 'workflow':
      return [
        ...subscriptionEntries(parsed.definition.subscriptions?.selectors).filter(
          (e) => inferRole(e.selector) === 'trigger',
        ),
        ...defaultWorkflowTriggers(parsed.definition.workflow_id).map((selector) => ({
          path: 'workflow_id',
          selector,
        })),
        // What its runs' wait_for steps wait for joins the rule: no rule per waiting run (README, "wait_for").
        ...waitForSteps(parsed.definition.steps).map(({ step, path }) => ({
          path: `${path
            .map((p) => (typeof p === 'number' ? `[${p}]` : `.${p}`))
            .join('')
            .slice(1)}.wait_for.selector`,
          selector: { ...step.wait_for.selector, role: 'trigger' as const },
        })),
      ];
    case 'tool': {
      const entries = subscriptionEntries(parsed.definition.subscriptions?.selectors).filter(
        (e) => inferRole(e.selector) === 'trigger',
      );
      return entries.length > 0
        ? entries
        : [{ path: 'subscriptions', selector: defaultToolTrigger(parsed.definition.name) }];
    }
    case 'context-builder':
      return parsed.definition.update_triggers.map((selector, i) => ({
        path: `update_triggers[${i}]`,
        selector,
      }));
    case 'memory':
      return [
        ...parsed.definition.sources.map((selector, i) => ({
          path: `sources[${i}]`,
          selector: { ...selector, role: 'trigger' as const },
        })),
        {
          path: 'memory_id',
          selector: parseWith(SelectorSchema, extractRequestSelector(parsed.definition.memory_id)),
        },
      ];
  }
}

export function triggerSelectors<K extends ExecutorKind>(kind: K, def: DefinitionByKind[K]): Selector[] {
  return triggerSelectorEntries(kind, def).map((e) => e.selector);
}

/** A context builder source as a context selector (`tagged` fetches like `recent`). */
export function sourceToSelector(source: ContextSource): Selector {
  const { method, limit, nn, ...routing } = source;
  return {
    ...routing,
    role: 'context',
    fetch: {
      method: method === 'tagged' ? 'recent' : method,
      ...(limit !== undefined ? { limit } : {}),
      ...(nn !== undefined ? { nn } : {}),
    },
  };
}

/** The selectors fetched when a trigger fires (a context builder's `sources`). */
export function contextSelectors<K extends ExecutorKind>(kind: K, def: DefinitionByKind[K]): Selector[] {
  const parsed = narrow(kind, def);
  switch (parsed.kind) {
    case 'agent':
      return parsed.definition.subscriptions.selectors.filter(
        (s) => inferRole(s) === 'context' && !isContinuationSelector(s, parsed.definition.agent_id),
      );
    case 'workflow':
      return (parsed.definition.subscriptions?.selectors ?? []).filter((s) => inferRole(s) === 'context');
    case 'tool':
      return (parsed.definition.subscriptions?.selectors ?? []).filter((s) => inferRole(s) === 'context');
    case 'context-builder':
      return parsed.definition.sources.map(sourceToSelector);
    case 'memory':
      // It reads the session's turns itself (`shared/rooms/memory/extraction.ts`).
      return [];
  }
}

/** Re-exported so callers of this module need not know where trigger schemas are listed. */
export { TRIGGER_SCHEMAS };
