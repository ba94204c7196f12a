/**
 * A Bedrock guardrail as one more check: `ApplyGuardrail` with the policy's guardrail id and version, on the text
 * as INPUT or OUTPUT. Bedrock answers `action: GUARDRAIL_INTERVENED | NONE` with assessments; the finding names
 * the policies that intervened (topic, content, word, sensitive information, contextual grounding), never the text.
 */
import { ApplyGuardrailCommand, type BedrockRuntimeClient } from '@aws-sdk/client-bedrock-runtime';
import type { BedrockGuardrail } from './guard.ts';

export function bedrockGuardrail(client: Pick<BedrockRuntimeClient, 'send'>): BedrockGuardrail {
  return {
    async apply({ guardrailId, version, source, text, signal }) {
      const out = await client.send(
        new ApplyGuardrailCommand({
          guardrailIdentifier: guardrailId,
          guardrailVersion: version,
          source,
          content: [{ text: { text } }],
        }),
        signal ? { abortSignal: signal } : {},
      );
      const types = new Set<string>();
      for (const a of out.assessments ?? []) {
        if (a.topicPolicy) types.add('topic');
        if (a.contentPolicy) types.add('content');
        if (a.wordPolicy) types.add('word');
        if (a.sensitiveInformationPolicy) types.add('sensitive-information');
        if (a.contextualGroundingPolicy) types.add('contextual-grounding');
      }
      return { intervened: out.action === 'GUARDRAIL_INTERVENED', types: [...types].sort() };
    },
  };
}
