/**
 * Embeddings as a setting (`CRUMBS_EMBEDDINGS`, CDK `crumbs:embeddings`): how the text reads, which embedder each
 * value builds, that `none` makes no embedding call (the indexer embeds no schema, search is refused naming the
 * setting), and the OpenAI-compatible embedder against a real HTTP server on loopback, its key read as the LLM
 * providers' keys are (the environment locally, Secrets Manager on AWS).
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { embedderFromEnv } from '#functions/wiring/embedder-from-env.ts';
import { LocalEmbedder } from '#shared/adapters/embeddings/local-embedder.ts';
import { EMBEDDINGS_OFF_MESSAGE, OffEmbedder } from '#shared/adapters/embeddings/off-embedder.ts';
import { OpenAiCompatibleEmbedder } from '#shared/adapters/embeddings/openai-compatible-embedder.ts';
import { TitanEmbedder } from '#shared/adapters/embeddings/titan-embedder.ts';
import { EnvApiKeys, SecretsManagerApiKeys } from '#shared/adapters/llm/api-keys.ts';
import { embeddingPolicyFromEnv } from '#shared/core/stream/vector-search.ts';
import {
  DEFAULT_BEDROCK_EMBEDDING_MODEL,
  parseEmbeddingsSetting,
} from '#shared/domain/embeddings-setting.ts';
import { BadRequestError, NonRetriableError, RetriableError } from '#shared/domain/errors.ts';
import { ENV } from '#shared/topology.ts';

describe('the embeddings setting', () => {
  it('reads none, local, bedrock (Titan v2 by default) and openai-compatible with its base URL', () => {
    expect(parseEmbeddingsSetting(undefined, undefined)).toEqual({
      kind: 'bedrock',
      model: DEFAULT_BEDROCK_EMBEDDING_MODEL,
    });
    expect(parseEmbeddingsSetting('', undefined, { kind: 'local' })).toEqual({ kind: 'local' });
    expect(parseEmbeddingsSetting(' none ', undefined)).toEqual({ kind: 'none' });
    expect(parseEmbeddingsSetting('bedrock', undefined)).toEqual({
      kind: 'bedrock',
      model: DEFAULT_BEDROCK_EMBEDDING_MODEL,
    });
    expect(
      parseEmbeddingsSetting('openai-compatible/nomic-embed-text', 'http://127.0.0.1:11434/v1/'),
    ).toEqual({
      kind: 'openai-compatible',
      model: 'nomic-embed-text',
      baseUrl: 'http://127.0.0.1:11434/v1',
    });
  });

  it('refuses what it cannot run, saying what to write', () => {
    expect(() => parseEmbeddingsSetting('titan', undefined)).toThrow(/none, bedrock\/<model id> or openai/);
    expect(() => parseEmbeddingsSetting('bedrock/', undefined)).toThrow(/names no model/);
    expect(() => parseEmbeddingsSetting('openai-compatible/m', undefined)).toThrow(/base URL/);
    expect(() => parseEmbeddingsSetting('openai-compatible/m', 'ftp://x')).toThrow(/base URL/);
    // The Titan embedder speaks Titan v2's request shape only: another Bedrock model would dead-letter every write.
    expect(() => parseEmbeddingsSetting('bedrock/cohere.embed-english-v3', undefined)).toThrow(
      /Titan Text Embeddings v2.*openai-compatible/,
    );
  });
});

describe('embedderFromEnv', () => {
  it('builds the embedder the setting names (local when unset, as under crumbs dev)', () => {
    expect(embedderFromEnv({})).toBeInstanceOf(LocalEmbedder);
    expect(embedderFromEnv({ [ENV.embeddings]: 'none' })).toBeInstanceOf(OffEmbedder);
    const titan = embedderFromEnv({ [ENV.embeddings]: 'bedrock/amazon.titan-embed-text-v2:0' });
    expect(titan).toBeInstanceOf(TitanEmbedder);
    expect(titan.model).toBe('bedrock/amazon.titan-embed-text-v2:0@512');
    const compatible = embedderFromEnv({
      [ENV.embeddings]: 'openai-compatible/nomic-embed-text',
      [ENV.embeddingsBaseUrl]: 'http://127.0.0.1:1/v1',
    });
    expect(compatible).toBeInstanceOf(OpenAiCompatibleEmbedder);
    expect(compatible.model).toBe('openai-compatible/nomic-embed-text');
  });
});

describe('embeddings off', () => {
  it('embeds no schema, so the indexer makes no embedding call', () => {
    const policy = embeddingPolicyFromEnv({ [ENV.embeddings]: 'none', [ENV.embedSchemas]: '*' });
    for (const schema of ['user.message.v1', 'note.v1', 'invoice.v1'])
      expect(policy.embeds(schema)).toBe(false);
    expect(embeddingPolicyFromEnv({}).embeds('user.message.v1')).toBe(true);
  });

  it('answers vector search with a 400 naming the setting, never a model call', async () => {
    const error = await new OffEmbedder().embed().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BadRequestError);
    expect((error as Error).message).toBe(EMBEDDINGS_OFF_MESSAGE);
    expect(EMBEDDINGS_OFF_MESSAGE).toMatch(/crumbs:embeddings=none/);
  });
});

describe('OpenAiCompatibleEmbedder against an HTTP server on loopback', () => {
  const seen: { url: string; authorization: string | undefined; body: { model: string; input: string[] } }[] =
    [];
  let status = 200;
  let server: Server;
  let baseUrl = '';

  const read = async (req: IncomingMessage): Promise<string> => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString('utf8');
  };

  beforeAll(async () => {
    server = createServer((req, res) => {
      void read(req).then((text) => {
        const body = JSON.parse(text) as { model: string; input: string[] };
        seen.push({ url: req.url ?? '', authorization: req.headers.authorization, body });
        if (status !== 200) {
          res.writeHead(status, { 'content-type': 'application/json' }).end('{"error":"no"}');
          return;
        }
        // Answered out of order, and not normalized: the embedder sorts by index and normalizes.
        const data = body.input.map((t, index) => ({ index, embedding: [t.length, 0, 0, 0] })).reverse();
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ data }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
  beforeEach(() => {
    seen.length = 0;
    status = 200;
  });

  it('posts the batch to <base URL>/embeddings with the key from the environment, in order and unit length', async () => {
    const embedder = embedderFromEnv({
      [ENV.embeddings]: 'openai-compatible/nomic-embed-text',
      [ENV.embeddingsBaseUrl]: baseUrl,
      [ENV.embeddingsApiKey]: 'sk-local',
    });
    const vectors = await embedder.embed(['a', 'bbb']);
    expect(vectors).toEqual([
      [1, 0, 0, 0],
      [1, 0, 0, 0],
    ]);
    expect(seen).toEqual([
      {
        url: '/v1/embeddings',
        authorization: 'Bearer sk-local',
        body: { model: 'nomic-embed-text', input: ['a', 'bbb'] },
      },
    ]);
    expect(embedder.dimensions).toBe(4);
  });

  it('sends no key when none is configured', async () => {
    await new OpenAiCompatibleEmbedder({ baseUrl, model: 'm', keys: new EnvApiKeys({}) }).embed(['x']);
    expect(seen[0]?.authorization).toBeUndefined();
  });

  it('reads the key from the secret <prefix>embeddings on AWS', async () => {
    const sm = mockClient(SecretsManagerClient);
    try {
      sm.on(GetSecretValueCommand, { SecretId: 'crumbs/llm/embeddings' }).resolves({
        SecretString: '{"apiKey":"sk-from-secrets-manager"}',
      });
      const keys = new SecretsManagerApiKeys('crumbs/llm/', new SecretsManagerClient({}));
      await new OpenAiCompatibleEmbedder({ baseUrl, model: 'm', keys }).embed(['x']);
      expect(seen[0]?.authorization).toBe('Bearer sk-from-secrets-manager');
    } finally {
      sm.restore();
    }
  });

  it('retries a throttled or failing endpoint and not a refusal', async () => {
    const embedder = new OpenAiCompatibleEmbedder({ baseUrl, model: 'm' });
    status = 429;
    await expect(embedder.embed(['x'])).rejects.toBeInstanceOf(RetriableError);
    status = 503;
    await expect(embedder.embed(['x'])).rejects.toBeInstanceOf(RetriableError);
    status = 401;
    await expect(embedder.embed(['x'])).rejects.toBeInstanceOf(NonRetriableError);
  });
});
