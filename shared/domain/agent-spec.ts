/**
 * An agent definition → the configuration its type runs with (`AgentSpec`), or a ValidationError whose issues
 * name the path of each problem (`transport`, `yaml.tools[0]`, `yaml: not valid YAML: line 3, column 2: …`).
 * The part every type shares (modes, plan, deliverable, orchestration, the model) is built here; the type's own
 * part by its module (`agents/`, listed in `agents/types.ts`).
 *
 * The `yaml` field is parsed here, not in `definitions.ts`: the YAML parser (46 KB) is injected by the modules
 * that need it (the rule manager through `definition-validation.ts`, the agent executors), so the functions that
 * only parse agent definitions to answer for them (the DLQ handler, other executors) do not carry it. For the same
 * reason JSONata transforms are syntax-checked only when a check is given (`definition-validation.ts`).
 *
 * Where a field may be written in two places (seed 004 puts transforms and tools in `yaml`; they may also be
 * written beside the transport or at the top level), both are read and writing both is an error, so there is one
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
import { type AgentMode, type AgentYaml, AgentYamlSchema } from './agent-types.ts';
import { one } from './agents/one.ts';
import { type AgentTypeSpec, agentTypeSchema } from './agents/types.ts';
import { toFieldIssues } from './breadcrumb.ts';
import type { AgentDefinition, ExpressionCheck } from './definitions.ts';
import { type FieldIssue, ValidationError } from './errors.ts';
import { DEFAULT_MODEL_ID } from './llm-model.ts';
import { AGENT_MODES } from './protocol.ts';
import type { YamlParser } from './yaml.ts';

export { DEFAULT_CONTEXT_BUDGET_TOKENS } from './agents/context.ts';

interface SpecBase {
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

/** What every type's configuration has, and the type's own fields (`agents/<type>.ts`), by `type`. */
export type AgentSpec = SpecBase & AgentTypeSpec;

export interface SpecChecks {
  /** Checks the plan's and deliverable's JSON Schemas; the issue message, or undefined when usable. */
  readonly jsonSchema?: (schema: Record<string, unknown>) => string | undefined;
  /** Parses `yaml` when it is text; without it, YAML text is not read and its keys are not available. */
  readonly parseYaml?: YamlParser;
  /** Checks JSONata transforms (their syntax); the issue message, or undefined when the expression is fine. */
  readonly expression?: ExpressionCheck;
}

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
  const type = agentTypeSchema(def.type);
  const expected = type.transport?.kind;
  if (transport !== undefined && transport.kind !== expected) {
    issues.push({
      path: 'transport.kind',
      message:
        expected === undefined
          ? `a ${def.type} agent takes no transport (got "${transport.kind}")`
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
  const own = type.spec({
    def,
    config,
    transport:
      transport !== undefined && transport.kind === expected
        ? (transport as Record<string, unknown>)[transport.kind]
        : undefined,
    noTransport: transport === undefined,
    issues,
    ...(checks.expression !== undefined ? { expression: checks.expression } : {}),
  });
  // The type's module built its own part for `def.type`: together they are that member of the union.
  const spec = own === undefined ? undefined : ({ ...base, type: def.type, ...own } as unknown as AgentSpec);
  if (issues.length > 0 || spec === undefined) throw new ValidationError(issues);
  return spec;
}

/**
 * The model string this agent's type calls (`provider/model`, or a bare id for the stack's default provider), or
 * undefined when the type calls no model. The one answer to "which model runs": the executors call this model and
 * the rule manager reports it as the definition status's `llm`.
 * Each type says (its `model`): a context agent always calls one (its `model` / `llm`, else the default
 * provider's default model), a tool agent only with `extract_arguments`, the others never.
 */
export function agentModel(spec: AgentSpec): string | undefined {
  return agentTypeSchema(spec.type).model?.(spec, spec.llm);
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

/**
 * The output cap a model call is given: the definition's `llm.max_tokens` and a budget's cap, whichever is lower
 * (either may be absent).
 */
export function outputTokenCap(maxTokens: number | undefined, budgetCap?: number): number | undefined {
  if (maxTokens === undefined) return budgetCap;
  return budgetCap === undefined ? maxTokens : Math.min(maxTokens, budgetCap);
}
