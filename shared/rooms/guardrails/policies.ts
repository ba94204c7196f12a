/**
 * Which policies hold for one agent: those its definition names (`guardrails: ["pii", "topics@3"]`, a pin reading
 * that version of the policy) and every policy of the same workspace whose `applies_to` selects it. Policies are
 * read from the agent's own workspace only, so another workspace's policy never applies. A policy the agent names
 * that is missing or no longer valid fails closed: the turn is blocked naming it, never run unguarded.
 */
import { NotFoundError } from '#shared/domain/errors.ts';
import { parsePin } from '#shared/domain/version-pin.ts';
import type { BreadcrumbStore } from '#shared/ports/breadcrumb-store.ts';
import { GUARDRAIL_DEF_SCHEMA, GuardrailDefinitionSchema, guardrailIssues } from './definition.ts';
import { type CompiledPolicy, compilePolicy } from './scan.ts';

const MAX_POLICIES_LISTED = 100;

export interface AgentPolicies {
  readonly policies: CompiledPolicy[];
  /** Policies the agent names that could not be read (missing, invalid): the turn is blocked. */
  readonly unusable: { name: string; reason: string }[];
}

export async function policiesFor(
  store: Pick<BreadcrumbStore, 'list' | 'getVersion'>,
  workspace: string,
  agent: { agent_id: string; guardrails?: readonly string[] | undefined },
): Promise<AgentPolicies> {
  const page = await store.list({ workspace, schema_name: GUARDRAIL_DEF_SCHEMA, limit: MAX_POLICIES_LISTED });
  const latest = new Map<string, { id: string; version: number; context: unknown }>();
  for (const item of page.items) {
    const name = (item.context as { guardrail_id?: unknown }).guardrail_id;
    if (typeof name === 'string' && !latest.has(name)) {
      latest.set(name, { id: item.id, version: item.version, context: item.context });
    }
  }
  const policies: CompiledPolicy[] = [];
  const unusable: { name: string; reason: string }[] = [];
  const taken = new Set<string>();
  for (const named of agent.guardrails ?? []) {
    const pin = parsePin(named);
    const record = pin === undefined ? undefined : latest.get(pin.name);
    if (pin === undefined || record === undefined) {
      unusable.push({ name: named, reason: 'no such guardrail.def.v1 in this workspace' });
      continue;
    }
    let context = record.context;
    let version = record.version;
    if (pin.version !== undefined && pin.version !== record.version) {
      try {
        const pinned = await store.getVersion(workspace, record.id, pin.version);
        context = pinned.context;
        version = pinned.version;
      } catch (error) {
        if (!(error instanceof NotFoundError)) throw error;
        unusable.push({ name: named, reason: `version ${pin.version} does not exist` });
        continue;
      }
    }
    if (guardrailIssues(context).length > 0) {
      unusable.push({ name: named, reason: 'the policy is invalid' });
      continue;
    }
    taken.add(pin.name);
    policies.push(compilePolicy(pin.name, version, GuardrailDefinitionSchema.parse(context)));
  }
  for (const [name, record] of latest) {
    if (taken.has(name) || guardrailIssues(record.context).length > 0) continue;
    const def = GuardrailDefinitionSchema.parse(record.context);
    if (def.applies_to?.agents.some((s) => selects(s, agent.agent_id))) {
      policies.push(compilePolicy(name, record.version, def));
    }
  }
  return { policies, unusable };
}

function selects(selector: string, agentId: string): boolean {
  if (selector === '*') return true;
  return selector.endsWith('*') ? agentId.startsWith(selector.slice(0, -1)) : agentId === selector;
}
