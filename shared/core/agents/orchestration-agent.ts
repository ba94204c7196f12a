/**
 * Orchestration, a capability of every agent (seed 004): a request with `orchestrate: true` (or
 * `orchestrationAction: "execute"`) makes the agent plan calls of sub-agents (`orchestration-plan.ts`) and run that
 * plan as a RUN OF THE WORKFLOW ENGINE (`orchestration-run.ts`) — one `workflow.run.v1`, every step an event hop,
 * human checkpoints, pause, resume and retry-from-a-step through the run API and `crumbs runs` like any run. The
 * other `orchestrationAction`s act on a run as its controls do (`orchestration-actions.ts`).
 *
 * The plan is kept in the run (`run.definition`) and driven by the agent itself (`run.driver = "agent:<id>"`), so no
 * definition is written and no rule has to be compiled before the run can go (a workflow written on the fly would
 * race its own rule). Its requests are tagged `reply-to:agent:<id>`, which every agent's rule matches
 * (`agentRunTrigger`), so the answers come back to the agent. The request's `depth` is the run's; sub-agent
 * requests go one deeper and carry the run's `max_depth` (the smaller of the agent's `maxDepth` and the request's
 * own), so nested orchestrations are bounded by the outermost: a step that would go deeper fails the run.
 */
import type { AgentMode } from '#shared/domain/agent-types.ts';
import type { AgentDefinition } from '#shared/domain/definitions.ts';
import { incoming, replyToTag } from '#shared/domain/protocol.ts';
import type { ExecutionInput, ExecutionResult } from '../executor/contract.ts';
import type { RunEvent } from '../orchestration/events.ts';
import { runIdFor } from '../orchestration/ids.ts';
import { readAddressedMessage } from '../orchestration/messages.ts';
import type { AgentRun, AgentType } from './contract.ts';
import { act } from './orchestration-actions.ts';
import { planDefinition, plannedSteps } from './orchestration-plan.ts';
import { agentDriver, drive, type OrchestrationDeps, type RunInput } from './orchestration-run.ts';

/** Whether the trigger is addressed to one of this agent's runs (an answer, a response, a control). */
export function isRunMessage(def: AgentDefinition, trigger: { tags: readonly string[] }): boolean {
  return trigger.tags.includes(replyToTag(agentDriver(def.agent_id)));
}

/** The request an answer to one of the agent's runs answers (a continuation: no hop is added). */
export function ownRunRequest(
  def: AgentDefinition,
  trigger: ExecutionInput<unknown>['trigger'],
): { id: string } | undefined {
  if (!isRunMessage(def, trigger)) return undefined;
  const message = readAddressedMessage(incoming(trigger));
  return 'ignored' in message || message.event.type !== 'answer'
    ? undefined
    : { id: message.event.request_id };
}

/** Plans the run (`orchestration-plan.ts`) and starts it. */
async function execute(
  run: AgentRun,
  type: AgentType,
  mode: AgentMode,
  deps: OrchestrationDeps,
): Promise<ExecutionResult> {
  const task = run.task;
  const user = task.message ?? (task.input !== undefined ? JSON.stringify(task.input) : '(an empty request)');
  const cfg = run.spec.orchestration;
  const maxDepth = Math.min(cfg.maxDepth, task.maxDepth ?? Number.POSITIVE_INFINITY);
  const { steps, messages } = await plannedSteps(run, deps, user);
  const definition = planDefinition(run.definition, steps, cfg.checkpoints, mode, maxDepth);
  const input: RunInput = {
    message: user,
    ...(task.input !== undefined ? { input: task.input } : {}),
    mode,
    ...(task.conversationId !== undefined ? { conversation_id: task.conversationId } : {}),
    messages,
  };
  const trigger = run.execution.trigger;
  const event: RunEvent = {
    type: 'start',
    run_id: runIdFor(trigger.id),
    request_id: task.requestId,
    definition_id: run.execution.definitionRef.id,
    workflow_version: run.execution.definitionRef.version,
    input,
    // A run deeper than its max_depth fails at once, naming the limit.
    depth: task.depth,
    reply_tags: [...task.correlationTags],
    trigger: { id: trigger.id, schema_name: trigger.schema_name, context: trigger.context },
    driver: agentDriver(run.definition.agent_id),
    definition,
  };
  return drive(run, type, deps, event.run_id, event, definition);
}

/** An event addressed to one of the agent's runs (an answer, a human response, a control from the API). */
export async function onRunMessage(
  run: AgentRun,
  type: AgentType,
  deps: OrchestrationDeps,
): Promise<ExecutionResult> {
  const message = readAddressedMessage(incoming(run.execution.trigger));
  if ('ignored' in message) {
    deps.log.info(`agent ${run.definition.agent_id}: ${message.ignored}`);
    return { outputs: [] };
  }
  return drive(run, type, deps, message.run_id, message.event);
}

/** `orchestrate: true` / `orchestrationAction` on a request. */
export async function orchestrate(
  run: AgentRun,
  type: AgentType,
  mode: AgentMode,
  deps: OrchestrationDeps,
): Promise<ExecutionResult> {
  const action = run.task.orchestration?.action ?? 'execute';
  return action === 'execute' ? execute(run, type, mode, deps) : act(run, type, deps, action);
}
