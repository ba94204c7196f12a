/**
 * A Bedrock guardrail as one more check, against a mocked Bedrock Runtime client answering in the shape AWS
 * documents for ApplyGuardrail (`action`, `assessments`): the request names the policy's guardrail and version and
 * the text's source; an intervention blocks with the crumbs policy's message, naming the Bedrock policies that
 * intervened, never the text; a failing call applies `on_error`.
 */
import { ApplyGuardrailCommand, BedrockRuntimeClient } from '@aws-sdk/client-bedrock-runtime';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, describe, expect, it } from 'vitest';
import { bedrockGuardrail } from '#shared/rooms/guardrails/bedrock-guardrail.ts';
import { GuardrailDefinitionSchema } from '#shared/rooms/guardrails/definition.ts';
import { Guard } from '#shared/rooms/guardrails/guard.ts';
import { compilePolicy } from '#shared/rooms/guardrails/scan.ts';
import { Placeholders } from '#shared/rooms/guardrails/vault.ts';

const bedrock = mockClient(BedrockRuntimeClient);
afterEach(() => bedrock.reset());

function guard(onError: 'block' | 'warn' = 'block') {
  const policy = compilePolicy(
    'aws',
    2,
    GuardrailDefinitionSchema.parse({
      guardrail_id: 'aws',
      bedrock: { guardrail_id: 'gr1abc', version: '3' },
      on_error: onError,
    }),
  );
  return new Guard([policy], new Placeholders(), {
    bedrock: bedrockGuardrail(new BedrockRuntimeClient({ region: 'eu-west-1' })),
  });
}

describe('a Bedrock guardrail through ApplyGuardrail', () => {
  it('sends the text as INPUT or OUTPUT with the guardrail id and version, and blocks when it intervenes', async () => {
    bedrock.on(ApplyGuardrailCommand).resolves({
      action: 'GUARDRAIL_INTERVENED',
      outputs: [{ text: 'Sorry, I cannot help with that.' }],
      assessments: [{ topicPolicy: { topics: [{ name: 'Finance', type: 'DENY', action: 'BLOCKED' }] } }],
      usage: undefined,
    });
    const result = await guard().check('model_output', [{ part: 'assistant', text: 'buy these stocks' }]);
    expect(bedrock.commandCalls(ApplyGuardrailCommand)[0]?.args[0].input).toEqual({
      guardrailIdentifier: 'gr1abc',
      guardrailVersion: '3',
      source: 'OUTPUT',
      content: [{ text: { text: 'buy these stocks' } }],
    });
    expect(result.blocked?.policy).toBe('aws');
    expect(result.findings).toEqual([
      expect.objectContaining({ check: 'bedrock', type: 'topic', action: 'block' }),
    ]);

    bedrock
      .on(ApplyGuardrailCommand)
      .resolves({ action: 'NONE', outputs: [], assessments: [], usage: undefined });
    const passed = await guard().check('input', [{ part: 'user', text: 'hello' }]);
    expect(passed.blocked).toBeUndefined();
    expect(bedrock.commandCalls(ApplyGuardrailCommand).at(-1)?.args[0].input.source).toBe('INPUT');
  });

  it('applies on_error when the call fails', async () => {
    bedrock
      .on(ApplyGuardrailCommand)
      .rejects(Object.assign(new Error('throttled'), { name: 'ThrottlingException' }));
    const blocked = await guard('block').check('input', [{ part: 'user', text: 'hello' }]);
    expect(blocked.blocked?.policy).toBe('aws');
    expect(blocked.findings[0]).toMatchObject({ check: 'error', type: 'bedrock: ThrottlingException' });
    const warned = await guard('warn').check('input', [{ part: 'user', text: 'hello' }]);
    expect(warned.blocked).toBeUndefined();
    expect(warned.findings[0]).toMatchObject({ check: 'error', action: 'warn' });
  });
});
