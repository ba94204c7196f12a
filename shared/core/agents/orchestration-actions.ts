/**
 * `orchestrationAction` on a request: seed 004's vocabulary mapped onto the run's controls (`run_id` names the run):
 * `pause`, `resume` and `continue` (= resume), `rollback` (= retry `from_step`), `human-response` (`decision`,
 * `input`, `comment`, `step` when several wait). Only a person's request is acted on
 * (`../orchestration/authority.ts`): the agent relays it, writing the `workflow.control.v1` / `human.response.v1`
 * as the API would (the audit trail; its causation names the person's request) and applying it in the same
 * invocation (an agent is not triggered by what it wrote); the request is answered with the run's new status.
 */

import { dataChecks } from '#shared/adapters/checks/checks.ts';
import type { OrchestrationAction } from '#shared/domain/agent-modes.ts';
import { NonRetriableError } from '#shared/domain/errors.ts';
import {
  AGENT_RESPONSE_SCHEMA,
  RUN_SCHEMA,
  replyToTag,
  requestTag,
  runTag,
  stepTag,
  threadTag,
} from '#shared/domain/protocol.ts';
import { threadOf } from '../executor/answers.ts';
import type { ExecutionResult, OutputBreadcrumb } from '../executor/contract.ts';
import { deterministicId } from '../executor/outputs.ts';
import { isPerson } from '../orchestration/authority.ts';
import { controlAllowed, humanInputProblem } from '../orchestration/checks.ts';
import { createRunDriver, parseRun } from '../orchestration/driver.ts';
import type { RunEvent } from '../orchestration/events.ts';
import { SCHEMAS } from '../orchestration/messages.ts';
import type { AgentRun, AgentType } from './contract.ts';
import { agentDriver, drive, inlineDefinition, type OrchestrationDeps } from './orchestration-run.ts';

export async function act(
  run: AgentRun,
  type: AgentType,
  deps: OrchestrationDeps,
  action: Exclude<OrchestrationAction, 'execute'>,
): Promise<ExecutionResult> {
  const o = run.task.orchestration;
  const runId = o?.runId ?? '';
  const def = run.definition;
  const driver = createRunDriver({ store: deps.store, clock: deps.clock, log: deps.log });
  const stored = await driver.readRun(run.workspace, runId);
  if (stored === undefined || stored.schema_name !== RUN_SCHEMA) {
    throw new NonRetriableError(`run_id: no run ${runId} in workspace ${run.workspace}`);
  }
  const current = parseRun(stored);
  if (current.driver !== agentDriver(def.agent_id)) {
    throw new NonRetriableError(`run_id: run ${runId} is not an orchestration of agent ${def.agent_id}`);
  }
  const definition = inlineDefinition(current);
  // Only people act on a run (`../orchestration/authority.ts`): the agent relays its requester's own message, so a
  // request another agent, a tool or a plain put wrote is refused here with why, and by the engine all the same.
  const trigger = run.execution.trigger;
  if (!isPerson(trigger.created_by)) {
    throw new NonRetriableError(
      `only a person acts on a run through its agent: this request was written by ${trigger.created_by}`,
    );
  }
  // The event as the written control or response reads: by the driver, relaying the request (its causation).
  const by = agentDriver(def.agent_id);
  const relayOf = `${trigger.id}@${trigger.version}`;
  const controlId = deterministicId('orchctl', def.agent_id, run.task.requestId);
  const tags = [runTag(runId), replyToTag(agentDriver(def.agent_id)), requestTag(run.task.requestId)];
  let written: OutputBreadcrumb;
  let event: RunEvent;
  if (action === 'human-response') {
    const waiting = Object.entries(current.steps).filter(
      ([, s]) => s.kind === 'human' && s.status === 'waiting',
    );
    if (current.status !== 'waiting' || waiting.length === 0) {
      throw new NonRetriableError(`run ${runId} is ${current.status}, not waiting for a person`);
    }
    const chosen =
      o?.step !== undefined
        ? waiting.find(([key]) => key === o.step)
        : waiting.length === 1
          ? waiting[0]
          : undefined;
    if (chosen === undefined) {
      throw new NonRetriableError(
        `step: ${o?.step !== undefined ? `"${o.step}" is not waiting` : 'several steps wait'}; waiting: ${waiting.map(([k]) => k).join(', ')}`,
      );
    }
    const [step, state] = chosen;
    const decision = o?.decision ?? 'approve';
    const problem =
      decision === 'approve'
        ? await humanInputProblem(definition, step, run.task.input, (check) =>
            dataChecks().validate(run.workspace, check),
          )
        : undefined;
    if (problem !== undefined) throw new NonRetriableError(problem);
    const context = {
      request_id: state.attempt_id ?? '',
      decision,
      ...(decision === 'approve' && run.task.input !== undefined ? { input: run.task.input } : {}),
      ...(o?.comment !== undefined ? { comment: o.comment } : {}),
    };
    written = {
      id: controlId,
      schema_name: SCHEMAS.humanResponse,
      title: `${current.workflow} › ${step}: ${decision}`,
      tags: [...tags, stepTag(step)],
      context,
    };
    event = {
      type: 'human',
      id: controlId,
      request_id: context.request_id,
      decision,
      input: 'input' in context ? context.input : undefined,
      comment: context.comment,
      by,
      relay_of: relayOf,
    };
  } else {
    const control = action === 'rollback' ? 'retry' : action === 'continue' ? 'resume' : action;
    if (control === 'retry' && !definition.steps.some((s) => s.id === o?.fromStep)) {
      throw new NonRetriableError(
        `from_step: expected a top-level step of the run: ${definition.steps.map((s) => s.id).join(', ')}`,
      );
    }
    if (!controlAllowed(current.status, control)) {
      throw new NonRetriableError(`cannot ${action} run ${runId}: it is ${current.status}`);
    }
    const context = {
      run_id: runId,
      action: control,
      ...(control === 'retry' ? { from_step: o?.fromStep } : {}),
    };
    written = {
      id: controlId,
      schema_name: SCHEMAS.control,
      title: `${current.workflow}: ${control}`,
      tags,
      context,
    };
    event = {
      type: 'control',
      id: controlId,
      action: control,
      from_step: o?.fromStep,
      by,
      relay_of: relayOf,
    };
  }
  const result = await drive(run, type, deps, runId, event);
  const after = await driver.readRun(run.workspace, runId);
  const status = after === undefined ? current.status : parseRun(after).status;
  const answer: OutputBreadcrumb = {
    schema_name: AGENT_RESPONSE_SCHEMA,
    title: `${def.agent_id}: ${action} ${runId}: ${status}`,
    tags: [
      'agent:response',
      `agent:${def.agent_id}`,
      threadTag(threadOf(run.execution.trigger)),
      requestTag(run.task.requestId),
      ...run.task.correlationTags,
    ],
    context: {
      agent_id: def.agent_id,
      request_id: run.task.requestId,
      type: run.spec.type,
      status: 'success',
      action,
      run_id: runId,
      run_status: status,
      output: { action, run_id: runId, run_status: status },
      text: `${action}: run ${runId} is ${status}`,
      message: `${action}: run ${runId} is ${status}`,
    },
  };
  // The answer first (the pipeline's first output id, which an error answer would take), then the control.
  return { outputs: [answer, written, ...result.outputs] };
}
