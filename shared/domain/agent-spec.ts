/**
 * An agent definition → the configuration its type runs with (`AgentSpec`), or a ValidationError whose issues
 * name the path of each problem (`transport`, `yaml.tools[0]`, `yaml: not valid YAML: line 3, column 2: …`).
 *
 * The `yaml` field is parsed here, not in `definitions.ts`: the YAML parser (46 KB) is injected by the modules
 * that need it (the rule manager through `definition-validation.ts`, the agent executors), so the functions that
 * only parse agent definitions to answer for them (the DLQ handler, other executors) do not carry it. For the same
 * reason JSONata transforms are syntax-checked only when a check is given (`definition-validation.ts`).
 *
 * Where a field may be written in two places (seed 004 puts transforms and tools in `yaml`; issue 11 also allows
 * them beside the transport or at the top level), both are read and writing both is an error, so there is one
 * answer to "which one runs".
 */

import {
  type DeliverableConfig,
  DeliverableConfigSchema,
  type OrchestrationConfig,
  OrchestrationConfigSchema,
  orchestrationStepIssues,
  type PlanConfig,
  PlanConfigSchema,
} from './agent-modes.ts';
import type {
  AgentTypeName,
  ApiTransport,
  ExternalTransport,
  FunctionTransport,
  McpTransport,
} from './agent-types.ts';
import { type AgentMode, type AgentYaml, AgentYamlSchema, type Transform } from './agent-types.ts';
import { toFieldIssues } from './breadcrumb.ts';
import type { AgentDefinition, ExpressionCheck } from './definitions.ts';
import { type FieldIssue, ValidationError } from './errors.ts';
import { DEFAULT_MODEL_ID } from './llm-model.ts';
import { AGENT_MODES } from './protocol.ts';
import type { YamlParser } from './yaml.ts';

/** Default token budget of a context agent's system prompt plus assembled context. */
export const DEFAULT_CONTEXT_BUDGET_TOKENS = 16_000;

interface SpecBase {
  readonly type: AgentTypeName;
  /** The parsed `yaml` (agent card, tools, transforms, and plan, deliverable, orchestration). */
  readonly config: AgentYaml;
  /** The modes requests may ask for (`agent-modes.ts`); all three unless the card or `modes` says otherwise. */
  readonly modes: readonly AgentMode[];
  readonly plan: PlanConfig;
  /** With `type` always set (the agent id unless the config names one). */
  readonly deliverable: DeliverableConfig & { type: string };
  /** Set when the definition configures it; every agent may orchestrate (with the defaults) all the same. */
  readonly orchestration: OrchestrationConfig;
  /** The model (`provider/model` or a bare id for the default provider) and its settings, when set. */
  readonly llm: { model?: string; temperature?: number; maxTokens?: number };
}

export type AgentSpec =
  | (SpecBase & { type: 'context'; markdown?: string; budgetTokens: number })
  | (SpecBase & { type: 'tool'; mcp?: McpTransport; tools: readonly string[]; extractArguments: boolean })
  | (SpecBase & {
      type: 'api';
      api: ApiTransport;
      requestTransform?: Transform;
      responseTransform?: Transform;
    })
  | (SpecBase & { type: 'external'; external: ExternalTransport })
  | (SpecBase & { type: 'function'; code: string; limits: FunctionTransport });

export interface SpecChecks {
  /** Checks the plan's and deliverable's JSON Schemas; the issue message, or undefined when usable. */
  readonly jsonSchema?: (schema: Record<string, unknown>) => string | undefined;
  /** Parses `yaml` when it is text; without it, YAML text is not read and its keys are not available. */
  readonly parseYaml?: YamlParser;
  /** Checks JSONata transforms (their syntax); the issue message, or undefined when the expression is fine. */
  readonly expression?: ExpressionCheck;
}

const DEFAULT_FUNCTION_LIMITS: FunctionTransport = { timeout_ms: 5_000, memory_mb: 32 };

/** The `yaml` of a definition, parsed and checked; issues are prefixed `yaml`. */
export function agentYaml(def: AgentDefinition, parseYaml?: YamlParser): AgentYaml {
  let raw: unknown = def.yaml ?? {};
  if (typeof raw === 'string') raw = parseYaml ? parseYaml(raw, 'yaml') : {};
  if (raw === null || raw === undefined) raw = {};
  if (typeof raw !== 'object' || Array.isArray(raw)) {
    throw new ValidationError([
      { path: 'yaml', message: 'expected a YAML mapping (key: value lines) at the top' },
    ]);
  }
  const result = AgentYamlSchema.safeParse(raw);
  if (!result.success) throw new ValidationError(toFieldIssues(result.error, 'yaml'));
  return result.data;
}

/** The configuration `def.type` runs with; throws ValidationError naming every missing or conflicting field. */
export function agentSpec(def: AgentDefinition, checks: SpecChecks = {}): AgentSpec {
  const config = agentYaml(def, checks.parseYaml);
  const issues: FieldIssue[] = [];
  const llm = llmSettings(def);
  const transport = def.transport;
  const expected = def.type === 'tool' ? 'mcp' : def.type;
  if (transport !== undefined && transport.kind !== expected) {
    issues.push({
      path: 'transport.kind',
      message:
        def.type === 'context'
          ? `a context agent takes no transport (got "${transport.kind}")`
          : `a ${def.type} agent needs transport.kind "${expected}", not "${transport.kind}"`,
    });
  }

  const modes = one(issues, ['modes', def.modes], ['yaml.agent_card.modes', config.agent_card?.modes]) ?? [
    ...AGENT_MODES,
  ];
  const plan = one(issues, ['plan', def.plan], ['yaml.plan', config.plan]) ?? PlanConfigSchema.parse({});
  const deliverable =
    one(issues, ['deliverable', def.deliverable], ['yaml.deliverable', config.deliverable]) ??
    DeliverableConfigSchema.parse({});
  const orchestration =
    one(issues, ['orchestration', def.orchestration], ['yaml.orchestration', config.orchestration]) ??
    OrchestrationConfigSchema.parse({});
  const at = (field: string, set: unknown) => (set !== undefined ? field : `yaml.${field}`);
  for (const [i, issue] of orchestrationStepIssues(
    orchestration.steps ?? [],
    def.agent_id,
    orchestration.availableAgents,
  ).entries()) {
    if (i < 20)
      issues.push({
        path: [at('orchestration', def.orchestration), 'steps', ...issue.path].join('.'),
        message: issue.message,
      });
  }
  if (orchestration.availableAgents?.includes(def.agent_id)) {
    issues.push({
      path: `${at('orchestration', def.orchestration)}.availableAgents`,
      message: 'an agent cannot call itself as a sub-agent',
    });
  }
  if (checks.jsonSchema) {
    for (const [path, schema] of [
      [`${at('plan', def.plan)}.schema`, plan.schema],
      [`${at('deliverable', def.deliverable)}.schema`, deliverable.schema],
    ] as const) {
      const message = schema === undefined ? undefined : checks.jsonSchema(schema);
      if (message !== undefined) issues.push({ path, message });
    }
  }
  const base = {
    config,
    llm,
    modes,
    plan,
    deliverable: { ...deliverable, type: deliverable.type ?? def.agent_id },
    orchestration,
  };
  let spec: AgentSpec | undefined;
  switch (def.type) {
    case 'context':
      spec = {
        ...base,
        type: 'context',
        ...(def.context !== undefined ? { markdown: def.context } : {}),
        budgetTokens: config.context_budget_tokens ?? DEFAULT_CONTEXT_BUDGET_TOKENS,
      };
      break;
    case 'tool': {
      const tools = one(issues, ['yaml.tools', config.tools], ['tools', def.tools]);
      if (tools === undefined || tools.length === 0) {
        issues.push({
          path: 'yaml.tools',
          message: 'a tool agent lists the MCP tools it calls (yaml tools: [...])',
        });
      }
      spec = {
        ...base,
        type: 'tool',
        ...(transport?.kind === 'mcp' ? { mcp: transport.mcp } : {}),
        tools: tools ?? [],
        extractArguments: config.extract_arguments === true,
      };
      break;
    }
    case 'api': {
      if (transport?.kind !== 'api') {
        if (transport === undefined) {
          issues.push({
            path: 'transport',
            message: 'an api agent needs transport: { kind: "api", api: { endpoint, method } }',
          });
        }
        break;
      }
      const requestTransform = one(
        issues,
        ['transport.api.request_transform', transport.api.request_transform],
        ['yaml.request_transform', config.request_transform],
      );
      const responseTransform = one(
        issues,
        ['transport.api.response_transform', transport.api.response_transform],
        ['yaml.response_transform', config.response_transform],
      );
      spec = {
        ...base,
        type: 'api',
        api: transport.api,
        ...(requestTransform !== undefined ? { requestTransform } : {}),
        ...(responseTransform !== undefined ? { responseTransform } : {}),
      };
      if (checks.expression) {
        const at = (field: string) =>
          transport.api[field as 'request_transform'] !== undefined
            ? `transport.api.${field}`
            : `yaml.${field}`;
        checkTransform(requestTransform, at('request_transform'), checks.expression, issues);
        checkTransform(responseTransform, at('response_transform'), checks.expression, issues);
      }
      break;
    }
    case 'external':
      if (transport?.kind === 'external') spec = { ...base, type: 'external', external: transport.external };
      else if (transport === undefined) {
        issues.push({
          path: 'transport',
          message:
            'an external agent needs transport: { kind: "external", external: { endpoint, protocol: "a2a" } }',
        });
      }
      break;
    case 'function':
      if (def.function_code === undefined || def.function_code.trim() === '') {
        issues.push({
          path: 'function_code',
          message: 'a function agent needs function_code: "async function handler(input, ctx) { … }"',
        });
      } else {
        spec = {
          ...base,
          type: 'function',
          code: def.function_code,
          limits: transport?.kind === 'function' ? transport.function : DEFAULT_FUNCTION_LIMITS,
        };
      }
      break;
  }
  if (issues.length > 0 || spec === undefined) throw new ValidationError(issues);
  return spec;
}

/**
 * The model string this agent's type calls (`provider/model`, or a bare id for the stack's default provider), or
 * undefined when the type calls no model. The one answer to "which model runs": the executors call this model and
 * the rule manager reports it as the definition status's `llm`.
 *   context  always: its `model` / `llm`, else the default provider's default model;
 *   tool     only with `extract_arguments` (the model picks the tool and its arguments), the same way;
 *   api, external, function  never (their transforms, partners and code run without a model).
 */
export function agentModel(spec: AgentSpec): string | undefined {
  switch (spec.type) {
    case 'context':
      return spec.llm.model ?? DEFAULT_MODEL_ID;
    case 'tool':
      return spec.extractArguments ? (spec.llm.model ?? DEFAULT_MODEL_ID) : undefined;
    default:
      return undefined;
  }
}

/** Where an agent definition sets its model, for error paths (`model`, `llm.model` or `llm.provider`). */
export function agentModelPath(def: AgentDefinition): string {
  if (def.model !== undefined) return 'model';
  if (def.llm?.model !== undefined) return 'llm.model';
  if (def.llm?.provider !== undefined) return 'llm.provider';
  return 'model';
}

/**
 * `model` wins over `llm`; `llm: { provider, model }` is spelled `provider/model` as the LLM router reads it, and
 * `llm: { provider }` alone means that provider's default model (not the stack's default provider).
 */
function llmSettings(def: AgentDefinition): SpecBase['llm'] {
  const llm = def.llm;
  const fromLlm =
    llm?.model === undefined
      ? llm?.provider !== undefined
        ? `${llm.provider}/${DEFAULT_MODEL_ID}`
        : undefined
      : llm.provider !== undefined && !llm.model.startsWith(`${llm.provider}/`)
        ? `${llm.provider}/${llm.model}`
        : llm.model;
  const model = def.model ?? fromLlm;
  const temperature = def.temperature ?? llm?.temperature;
  return {
    ...(model !== undefined ? { model } : {}),
    ...(temperature !== undefined ? { temperature } : {}),
    ...(llm?.max_tokens !== undefined ? { maxTokens: llm.max_tokens } : {}),
  };
}

/** The one of two places that sets a field; both set is an issue at the second. */
function one<T>(
  issues: FieldIssue[],
  first: [string, T | undefined],
  second: [string, T | undefined],
): T | undefined {
  if (first[1] !== undefined && second[1] !== undefined) {
    issues.push({ path: second[0], message: `also set at ${first[0]}: keep one` });
  }
  return first[1] ?? second[1];
}

function checkTransform(
  transform: Transform | undefined,
  path: string,
  check: ExpressionCheck,
  issues: FieldIssue[],
): void {
  if (transform === undefined) return;
  if (typeof transform === 'string') {
    const message = check(transform);
    if (message !== undefined) issues.push({ path, message });
    return;
  }
  for (const [key, value] of Object.entries(transform)) {
    if (typeof value === 'string' || (value !== null && typeof value === 'object' && !Array.isArray(value))) {
      checkTransform(value as Transform, `${path}.${key}`, check, issues);
    }
  }
}
