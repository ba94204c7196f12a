/**
 * Embeddings from an endpoint of the OpenAI API's shape (`POST <base URL>/embeddings` with `{ model, input: [...] }`,
 * answering `{ data: [{ index, embedding }] }`): a self-hosted model server, or any provider that speaks it. The
 * operator names the endpoint (`CRUMBS_EMBEDDINGS=openai-compatible/<model>`, `CRUMBS_EMBEDDINGS_BASE_URL`), never
 * a definition, so it is not behind the network guard (as the LLM providers are not). Its key, when it needs one, is
 * read as the LLM providers' keys are: the secret `<secret prefix>embeddings` on AWS, `CRUMBS_EMBEDDINGS_API_KEY`
 * locally. Vectors are L2-normalized
 * here, so cosine scores compare the same way as Titan's. One request per batch of texts.
 */
import { type ApiKeySource, EMBEDDINGS_KEY_NAME } from '#shared/adapters/llm/api-keys.ts';
import { asCrumbsError, NonRetriableError, RetriableError } from '#shared/domain/errors.ts';
import * as z from '#shared/domain/zod.ts';
import type { Embedder } from '#shared/ports/embeddings.ts';

const ResponseSchema = z.object({
  data: z.array(z.object({ index: z.number(), embedding: z.array(z.number()) })),
});

export class OpenAiCompatibleEmbedder implements Embedder {
  readonly model: string;
  dimensions = 0;

  constructor(
    private readonly options: {
      readonly baseUrl: string;
      readonly model: string;
      /** Where its key is (`<secret prefix>embeddings` on AWS, `CRUMBS_EMBEDDINGS_API_KEY` locally); none: no key sent. */
      readonly keys?: ApiKeySource;
      readonly fetch?: typeof fetch;
    },
  ) {
    this.model = `openai-compatible/${options.model}`;
  }

  async embed(texts: readonly string[], signal?: AbortSignal): Promise<number[][]> {
    const fetchFn = this.options.fetch ?? globalThis.fetch;
    try {
      const apiKey = await this.options.keys?.apiKey(EMBEDDINGS_KEY_NAME);
      const res = await fetchFn(`${this.options.baseUrl}/embeddings`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}),
        },
        body: JSON.stringify({ model: this.options.model, input: texts.map((t) => t || ' ') }),
        ...(signal ? { signal } : {}),
      });
      if (!res.ok) {
        const text = (await res.text()).slice(0, 300);
        const message = `${this.model}: the embeddings endpoint answered ${res.status}: ${text}`;
        throw res.status === 429 || res.status >= 500
          ? new RetriableError(message)
          : new NonRetriableError(message);
      }
      const parsed = ResponseSchema.safeParse(await res.json());
      if (!parsed.success || parsed.data.data.length !== texts.length) {
        throw new NonRetriableError(
          `${this.model}: the embeddings endpoint answered without one embedding per text`,
        );
      }
      const vectors = [...parsed.data.data]
        .sort((a, b) => a.index - b.index)
        .map((d) => normalized(d.embedding));
      this.dimensions = vectors[0]?.length ?? 0;
      return vectors;
    } catch (error) {
      throw asCrumbsError(error, `${this.model}: ${(error as Error).message}`, { signal });
    }
  }
}

function normalized(v: number[]): number[] {
  const norm = Math.sqrt(v.reduce((s, x) => s + x * x, 0));
  return norm === 0 ? v : v.map((x) => x / norm);
}
