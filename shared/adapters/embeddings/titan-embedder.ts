/**
 * Amazon Titan Text Embeddings v2 on Bedrock (`InvokeModel`, `amazon.titan-embed-text-v2:0`), normalized vectors
 * of 256, 512 or 1024 dimensions. One request per text (the model takes one input per call), run in parallel.
 */
import { BedrockRuntimeClient, InvokeModelCommand } from '@aws-sdk/client-bedrock-runtime';
import { asCrumbsError, NonRetriableError } from '#shared/domain/errors.ts';
import type { Embedder } from '#shared/ports/embeddings.ts';

export const TITAN_V2_MODEL_ID = 'amazon.titan-embed-text-v2:0';
/** Titan v2 accepts up to 8,192 tokens; characters are cut well below that. */
const MAX_INPUT_CHARS = 20_000;

let defaultClient: BedrockRuntimeClient | undefined;

export class TitanEmbedder implements Embedder {
  readonly model: string;
  private readonly client: BedrockRuntimeClient;

  constructor(
    readonly dimensions: 256 | 512 | 1024 = 512,
    client?: BedrockRuntimeClient,
    private readonly modelId: string = TITAN_V2_MODEL_ID,
  ) {
    this.model = `bedrock/${modelId}@${dimensions}`;
    if (client) this.client = client;
    else {
      defaultClient ??= new BedrockRuntimeClient({});
      this.client = defaultClient;
    }
  }

  embed(texts: readonly string[], signal?: AbortSignal): Promise<number[][]> {
    return Promise.all(texts.map((t) => this.embedOne(t, signal)));
  }

  private async embedOne(text: string, signal: AbortSignal | undefined): Promise<number[]> {
    const body = JSON.stringify({
      inputText: text.slice(0, MAX_INPUT_CHARS) || ' ',
      dimensions: this.dimensions,
      normalize: true,
    });
    try {
      const out = await this.client.send(
        new InvokeModelCommand({
          modelId: this.modelId,
          contentType: 'application/json',
          accept: 'application/json',
          body,
        }),
        signal ? { abortSignal: signal } : {},
      );
      const parsed = JSON.parse(new TextDecoder().decode(out.body)) as { embedding?: unknown };
      if (!Array.isArray(parsed.embedding) || parsed.embedding.length !== this.dimensions) {
        throw new NonRetriableError(
          `${this.modelId} answered without a ${this.dimensions}-dimension embedding`,
        );
      }
      return parsed.embedding.map(Number);
    } catch (error) {
      throw asCrumbsError(error, `${this.modelId}: ${(error as Error).message}`, { signal });
    }
  }
}
