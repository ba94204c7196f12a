/**
 * Evaluating a definition, without I/O: what it compiles to (the EventBridge pattern of its trigger selectors, the
 * rule name, the executor runner whose queue the rule targets, and for agents the provider and model their type
 * calls, resolved against the stack's default provider), or why it cannot (`invalid`, an error per field: the
 * definition's own validation, the timeout ceiling, no trigger selector, an unknown provider); warnings for fields
 * crumbs does not know; and the `secret_ref`s it names, checked against its workspace later (`workspace-checks.ts`).
 */

import { createHash } from 'node:crypto';
import { definitionLimits } from '#shared/config.ts';
import { agentModel, agentModelPath } from '#shared/domain/agent-spec.ts';
import type { Breadcrumb } from '#shared/domain/breadcrumb.ts';
import { validateDefinition } from '#shared/domain/definition-validation.ts';
import { definitionPrincipal, triggerSelectorEntries } from '#shared/domain/definitions.ts';
import { type FieldIssue, ValidationError } from '#shared/domain/errors.ts';
import {
  type LlmProvider,
  type ModelAliases,
  type ResolvedModel,
  resolveModel,
} from '#shared/domain/llm-model.ts';
import { llmToolConfig } from '#shared/domain/llm-tool.ts';
import { LEGACY_AGENT_DEF_SCHEMA } from '#shared/domain/protocol.ts';
import { executorRunnerOf } from '#shared/domain/runners.ts';
import { type SecretRefUse, secretRefsOf } from '#shared/domain/secret-refs.ts';
import { timeoutCeilingIssues } from '#shared/domain/timeout-ceiling.ts';
import { definitionWarnings } from '#shared/domain/unknown-fields.ts';
import { compileTriggerPattern, patternHash } from '#shared/routing/compiler.ts';
import {
  DEFINITION_SCHEMAS,
  type ExecutorKind,
  type ExecutorRunner,
  TENANT_LIMITS,
} from '#shared/topology.ts';

export type DefinitionState = 'active' | 'invalid';

export interface DefinitionStatus {
  definition_id: string;
  definition_schema: string;
  definition_version: number;
  kind: ExecutorKind;
  /** The executor function whose queue the rule targets (`executorRunnerOf`); null when invalid. */
  runner: ExecutorRunner | null;
  state: DefinitionState;
  errors: FieldIssue[];
  /** Fields crumbs does not know and ignores (`definitionWarnings`): the definition runs without them. */
  warnings: FieldIssue[];
  rule_name: string | null;
  /** The bus of the pool that holds the rule; null when there is no rule. */
  event_bus: string | null;
  pattern: unknown;
  pattern_hash: string | null;
  /**
   * For agents whose type calls a model (context agents; tool agents with `extract_arguments`): the provider and
   * model their calls go to (`agentModel`). Null for agents that call none, other kinds and invalid definitions.
   */
  llm: ResolvedModel | null;
}

/** Deterministic, unique per (workspace, definition), within EventBridge's 64-character name limit. */
export function ruleName(prefix: string, workspace: string, definitionId: string): string {
  const hash = createHash('sha256').update(`${workspace}\u0000${definitionId}`).digest('hex').slice(0, 12);
  const safe = (s: string, n: number) => s.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, n);
  return `${prefix}${safe(workspace, 16)}-${safe(definitionId, 20)}-${hash}`;
}

/** What a definition compiles to, or why it cannot, and the secrets it names (checked with I/O later): no I/O. */
export function evaluateDefinition(
  record: Breadcrumb,
  prefix: string,
  defaultLlmProvider: LlmProvider,
  timeoutCeilingMs: number = TENANT_LIMITS.timeoutCeilingMs,
  modelAliases: ModelAliases = {},
): DefinitionStatus & { kindKnown: boolean; secretRefs: SecretRefUse[] } {
  const kind = DEFINITION_SCHEMAS[record.schema_name as keyof typeof DEFINITION_SCHEMAS];
  const base = {
    definition_id: record.id,
    definition_schema: record.schema_name,
    definition_version: record.version,
    kind,
    // Set when the rule has been placed (`placeRule`).
    event_bus: null,
    kindKnown: kind !== undefined,
    secretRefs: [] as SecretRefUse[],
    warnings: definitionWarnings(record.schema_name, record.context),
  };
  try {
    const parsed = validateDefinition(record.schema_name, record.context, definitionLimits());
    const overCeiling = timeoutCeilingIssues(parsed, timeoutCeilingMs);
    if (overCeiling.length > 0) throw new ValidationError(overCeiling);
    // The model the agent's type will call (none for api, external and function agents, nor for tool agents
    // that take their arguments as given), resolved as the LLM router will resolve it.
    const model = parsed.kind === 'agent' && parsed.spec ? agentModel(parsed.spec) : undefined;
    const llm =
      parsed.kind === 'agent' && model !== undefined
        ? resolveModel(
            model,
            defaultLlmProvider,
            record.schema_name === LEGACY_AGENT_DEF_SCHEMA
              ? 'llm_config.model'
              : agentModelPath(parsed.definition),
            modelAliases,
          )
        : null;
    // An `llm` tool's models, resolved now as its calls will be: a model the stack cannot run is refused on write.
    if (parsed.kind === 'tool' && parsed.definition.implementation === 'llm') {
      const config = llmToolConfig(parsed.definition.config);
      if (config.model !== undefined)
        resolveModel(config.model, defaultLlmProvider, 'config.model', modelAliases);
      for (const [i, m] of (config.allowed_models ?? []).entries()) {
        resolveModel(m, defaultLlmProvider, `config.allowed_models[${i}]`, modelAliases);
      }
    }
    const entries = triggerSelectorEntries(parsed.kind, parsed.definition);
    if (entries.length === 0) {
      throw new ValidationError([
        {
          path: 'subscriptions.selectors',
          message: 'no trigger selector: nothing would ever run this definition',
        },
      ]);
    }
    const pattern = compileTriggerPattern({
      workspace: record.workspace,
      principal: definitionPrincipal(parsed.kind, parsed.definition),
      selectors: entries.map((e) => e.selector),
      selectorPaths: entries.map((e) => e.path),
    });
    return {
      ...base,
      secretRefs: secretRefsOf(parsed),
      kind: parsed.kind,
      runner: executorRunnerOf(parsed),
      state: 'active',
      errors: [],
      rule_name: ruleName(prefix, record.workspace, record.id),
      pattern,
      pattern_hash: patternHash(pattern),
      llm,
    };
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    return {
      ...base,
      runner: null,
      state: 'invalid',
      errors: [...error.issues],
      rule_name: null,
      pattern: null,
      pattern_hash: null,
      llm: null,
    };
  }
}

/** Makes the status `invalid` with these issues (none: unchanged). */
export function markInvalid(status: DefinitionStatus, issues: readonly FieldIssue[]): void {
  if (issues.length === 0) return;
  status.state = 'invalid';
  status.errors = [...issues];
  status.runner = null;
  status.rule_name = null;
  status.pattern = null;
  status.pattern_hash = null;
  status.llm = null;
}
