/**
 * The guardrails room, registered once: it implements the check points' port (`#shared/ports/guardrails.ts`) over
 * the workspace's `guardrail.def.v1` records, the thread vault and the classifier and Bedrock clients.
 */
import type { BreadcrumbStore } from '#shared/ports/breadcrumb-store.ts';
import type { Guardrails, InvocationGuard } from '#shared/ports/guardrails.ts';
import type { Log } from '#shared/ports/log.ts';
import { type BedrockGuardrail, Guard } from './guard.ts';
import { llmClassifier } from './llm-classifier.ts';
import { policiesFor } from './policies.ts';
import { TurnGuard } from './turn-guard.ts';
import type { Vault } from './vault.ts';

export interface GuardrailsRoomDeps {
  readonly store: Pick<BreadcrumbStore, 'list' | 'getVersion'>;
  readonly vault: Vault;
  readonly bedrock?: BedrockGuardrail;
  readonly log?: Log;
}

export function createGuardrails(deps: GuardrailsRoomDeps): Guardrails {
  return {
    async forAgent({ workspace, thread, agent, llm, signal, handoff }): Promise<InvocationGuard | undefined> {
      const { policies, unusable } = await policiesFor(deps.store, workspace, agent);
      if (unusable.length > 0) {
        deps.log?.warn('an agent names guardrails that cannot be used', {
          agentId: agent.agent_id,
          unusable,
        });
      }
      if (policies.length === 0 && unusable.length === 0) return undefined;
      const placeholders = await deps.vault.open(workspace, thread);
      const guard = new Guard(policies, placeholders, {
        classifier: llmClassifier(llm),
        ...(deps.bedrock ? { bedrock: deps.bedrock } : {}),
        ...(signal ? { signal } : {}),
      });
      return new TurnGuard(guard, agent, {
        workspace,
        thread,
        vault: deps.vault,
        unusable: unusable.map((u) => u.name),
        handoff: handoff === true,
      });
    },
  };
}
