/**
 * What an agent may write on its own: one rule for every path a model or an agent's code writes through (native
 * tool calls, `create_breadcrumbs` and `tools_to_invoke`, a function agent's `ctx.create`). A definition is data
 * anyone in the workspace can write and a model's output is data its prompt can steer, so these writes are
 * checked here, never trusted: never definitions, system records, run messages, answers, people's messages or
 * routing tags (`protocolRefusal` in `#shared/domain/protocol.ts`); requests only for what the agent was given,
 * and never pinned to a version (`versions.ts`: pins are a workflow author's);
 * anything else (notes, reports, the agent's own schemas) freely (shared/domain/CONVENTIONS.md, "Principals").
 *
 * Given: tools are the definition's `tools`, or every `tool.def.v1` of the workspace when it lists none (what a
 * model is offered too); agents are `orchestration.availableAgents` and the agents of `orchestration.steps`;
 * workflows are the workflows of `orchestration.steps`. What the definition does not name, it was not given.
 *
 * A refused write is never written: the model is told (a failed tool result, or the refusals sent back once with
 * its structured answer), a function's `ctx.create` throws, and each refusal is counted on the answer and logged.
 */

import type { OrchestrationConfig } from '#shared/domain/agent-modes.ts';
import type { AgentDefinition } from '#shared/domain/definitions.ts';
import {
  protocolRefusal,
  REQUESTS,
  type RequestKind,
  type RequestSchema,
  shown,
  TOOL_DEF_SCHEMA,
} from '#shared/domain/protocol.ts';
import { nestedSteps } from '#shared/domain/steps/kinds.ts';
import { pinnedName } from '#shared/domain/version-pin.ts';
import type { StepDefinition } from '#shared/domain/workflow-definition.ts';
import type { BreadcrumbStore } from '#shared/ports/breadcrumb-store.ts';
import { DEFINITION_VERSION_FIELD } from './versions.ts';

const MAX_TOOLS_LISTED = 100;

/** The tool definitions of a workspace by name (the first page: what a model is offered). */
export async function listToolDefinitions(
  workspace: string,
  store: Pick<BreadcrumbStore, 'list'>,
): Promise<Map<string, Record<string, unknown>>> {
  const page = await store.list({ workspace, schema_name: TOOL_DEF_SCHEMA, limit: MAX_TOOLS_LISTED });
  const defs = new Map<string, Record<string, unknown>>();
  for (const item of page.items) {
    const c = asObject(item.context);
    if (typeof c.name === 'string' && !defs.has(c.name)) defs.set(c.name, c);
  }
  return defs;
}

/** The tools an agent was given: its `tools`, else the workspace's tool definitions (see the header). */
export function givenToolNames(
  def: Pick<AgentDefinition, 'tools'>,
  toolDefs: ReadonlyMap<string, unknown>,
): string[] {
  return def.tools ? [...def.tools] : [...toolDefs.keys()];
}

/** The agents and workflows an agent's orchestration config names (see the header). */
export function orchestrationTargets(orchestration: OrchestrationConfig | undefined): {
  agents: string[];
  workflows: string[];
} {
  const agents = new Set(orchestration?.availableAgents ?? []);
  const workflows = new Set<string>();
  const visit = (step: StepDefinition) => {
    if (step.agent !== undefined) agents.add(pinnedName(step.agent));
    if (step.workflow !== undefined) workflows.add(step.workflow);
    for (const [nested] of nestedSteps(step)) visit(nested);
  };
  for (const step of orchestration?.steps ?? []) visit(step);
  return { agents: [...agents], workflows: [...workflows] };
}

/** What one agent was given, the tool list read from the workspace only when a tool request needs it. */
export class Grants {
  #tools: Promise<string[]> | undefined;

  constructor(
    private readonly def: Pick<AgentDefinition, 'agent_id' | 'tools'>,
    private readonly orchestration: OrchestrationConfig | undefined,
    private readonly workspace: string,
    private readonly store: Pick<BreadcrumbStore, 'list'>,
  ) {}

  tools(): Promise<string[]> {
    this.#tools ??= listToolDefinitions(this.workspace, this.store).then((defs) =>
      givenToolNames(this.def, defs),
    );
    return this.#tools;
  }

  async given(kind: RequestKind): Promise<string[]> {
    if (kind === 'tool') return this.tools();
    const targets = orchestrationTargets(this.orchestration);
    return kind === 'agent' ? targets.agents.filter((a) => a !== this.def.agent_id) : targets.workflows;
  }

  /** Why the agent may not write this, or undefined when it may (see the header). */
  async refusal(write: {
    readonly schema_name: string;
    readonly tags?: readonly string[] | undefined;
    readonly context: unknown;
  }): Promise<string | undefined> {
    const schema = write.schema_name;
    const never = protocolRefusal(schema, write.tags ?? []);
    if (never !== undefined) return never;
    const request = REQUESTS[schema as RequestSchema] as (typeof REQUESTS)[RequestSchema] | undefined;
    if (request === undefined) return undefined;
    const target = asObject(write.context)[request.field];
    if (asObject(write.context)[DEFINITION_VERSION_FIELD] !== undefined) {
      // A pin is the definition author's (a workflow step): an agent's own request runs the latest version, so a
      // version fixed by a later write cannot be run again from a model's output or an agent's code.
      return `an agent's request cannot name a ${DEFINITION_VERSION_FIELD} (it runs the latest version); nothing was requested`;
    }
    const given = await this.given(request.kind);
    if (typeof target === 'string' && given.includes(target)) return undefined;
    const name = typeof target === 'string' ? `"${shown(target)}"` : `(no ${request.field})`;
    return `the ${request.kind} ${name} is not available to this agent (its ${request.kind}s: ${listed(given)}); nothing was requested`;
  }
}

/** The grants of an agent, with the orchestration config its spec resolved (definition or `yaml`). */
export function grantsOf(
  def: Pick<AgentDefinition, 'agent_id' | 'tools'>,
  orchestration: OrchestrationConfig | undefined,
  workspace: string,
  store: Pick<BreadcrumbStore, 'list'>,
): Grants {
  return new Grants(def, orchestration, workspace, store);
}

/** One write that was refused, as the answer lists it. */
export interface Refusal {
  /** Where it came from: `create_breadcrumbs[1]`, `tools_to_invoke[0]`, `ctx.create`. */
  readonly at: string;
  readonly schema_name: string;
  readonly reason: string;
}

/** The names a refusal lists: the first 20, so a refusal stays small however many a workspace defines. */
function listed(names: readonly string[]): string {
  if (names.length === 0) return 'none';
  const first = names.slice(0, 20).join(', ');
  return names.length > 20 ? `${first}, … (${names.length - 20} more)` : first;
}

function asObject(value: unknown): Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {};
}
