import {
  BedrockRuntimeClient,
  InvokeModelCommand,
  ThrottlingException,
} from '@aws-sdk/client-bedrock-runtime';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { embedText, LocalEmbedder } from '#shared/adapters/embeddings/local-embedder.ts';
import { TITAN_V2_MODEL_ID, TitanEmbedder } from '#shared/adapters/embeddings/titan-embedder.ts';
import { embeddingPolicyFromEnv, embeddingText } from '#shared/core/stream/vector-search.ts';
import { RetriableError } from '#shared/domain/errors.ts';
import { cosine } from '#shared/ports/embeddings.ts';

describe('LocalEmbedder', () => {
  it('is deterministic, 256-dimensional and unit length', async () => {
    const [a, b] = await new LocalEmbedder().embed(['the API key is in vault', 'the API key is in vault']);
    expect(a).toEqual(b);
    expect(a).toHaveLength(256);
    expect(Math.hypot(...(a ?? []))).toBeCloseTo(1, 6);
  });

  it('puts texts that share words closer than texts that do not', () => {
    const q = embedText('where is the billing API key?');
    expect(cosine(q, embedText('my API key for billing is in vault'))).toBeGreaterThan(
      cosine(q, embedText('the weather in Lisbon is sunny')),
    );
  });
});

const bedrock = mockClient(BedrockRuntimeClient);
beforeEach(() => bedrock.reset());

describe('TitanEmbedder', () => {
  it('calls InvokeModel with Titan v2, the dimensions and normalization', async () => {
    bedrock.on(InvokeModelCommand).resolves({
      body: new TextEncoder().encode(
        JSON.stringify({ embedding: Array.from({ length: 256 }, () => 0.0625), inputTextTokenCount: 3 }),
      ) as never,
    });
    const embedder = new TitanEmbedder(256, new BedrockRuntimeClient({}));
    const [v] = await embedder.embed(['hello']);
    expect(v).toHaveLength(256);
    expect(embedder.model).toBe(`bedrock/${TITAN_V2_MODEL_ID}@256`);
    const input = bedrock.commandCalls(InvokeModelCommand)[0]?.args[0].input;
    expect(input?.modelId).toBe(TITAN_V2_MODEL_ID);
    expect(JSON.parse(String(input?.body))).toEqual({ inputText: 'hello', dimensions: 256, normalize: true });
  });

  it('retries throttling through SQS (RetriableError)', async () => {
    bedrock.on(InvokeModelCommand).rejects(new ThrottlingException({ message: 'slow', $metadata: {} }));
    await expect(new TitanEmbedder(256, new BedrockRuntimeClient({})).embed(['x'])).rejects.toBeInstanceOf(
      RetriableError,
    );
  });
});

describe('embedding policy and text', () => {
  it('embeds opted-in schemas only, never definitions', () => {
    const defaults = embeddingPolicyFromEnv({});
    expect(defaults.embeds('user.message.v1')).toBe(true);
    expect(defaults.embeds('agent.def.v1')).toBe(false);
    const all = embeddingPolicyFromEnv({ CRUMBS_EMBED_SCHEMAS: '*' });
    expect(all.embeds('invoice.v1')).toBe(true);
    expect(all.embeds('context.config.v1')).toBe(false);
  });

  it('uses the title and message-like fields', () => {
    expect(embeddingText({ title: 'Q', context: { message: 'hi', other: 'x' } })).toBe('Q\nhi');
    expect(embeddingText({ context: { nested: { a: 'deep text' } } })).toBe('deep text');
  });
});
