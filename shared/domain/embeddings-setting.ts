/**
 * Which model computes embeddings, as the operator sets it (`CRUMBS_EMBEDDINGS`; the CDK context value
 * `crumbs:embeddings` on AWS): `none` (nothing is embedded: no embedding call, no indexer rule, vector search and
 * vector context sources say embeddings are off), `local` (the deterministic hashed embedder, what `crumbs dev`
 * uses), `bedrock/amazon.titan-embed-text-v2:0` (Titan Text Embeddings v2, the one Bedrock model whose request shape the
 * Titan embedder speaks; any other model is refused when the setting is read, not when the first write dead-letters), or `openai-compatible/<model>`, an `/embeddings`
 * endpoint of the OpenAI API's shape at a base URL the operator names. The text `bedrock` alone means the default
 * Bedrock model, as it did before the setting had a model.
 */
export const DEFAULT_BEDROCK_EMBEDDING_MODEL = 'amazon.titan-embed-text-v2:0';

export type EmbeddingsSetting =
  | { readonly kind: 'none' }
  | { readonly kind: 'local' }
  | { readonly kind: 'bedrock'; readonly model: string }
  | { readonly kind: 'openai-compatible'; readonly model: string; readonly baseUrl: string };

const MODEL = /^[A-Za-z0-9][A-Za-z0-9._:/@-]{0,199}$/;
/** The Bedrock models the Titan embedder speaks to: Titan Text Embeddings v2, any version of it. */
const TITAN_V2 = /^amazon\.titan-embed-text-v2(?::\d+)?$/;

/**
 * The setting from its text (absent: `absentMeans`) and, for `openai-compatible`, the endpoint's base URL. Throws
 * an Error saying what to write.
 */
export function parseEmbeddingsSetting(
  text: string | undefined,
  baseUrl: string | undefined,
  absentMeans: EmbeddingsSetting = { kind: 'bedrock', model: DEFAULT_BEDROCK_EMBEDDING_MODEL },
): EmbeddingsSetting {
  const value = text?.trim() ?? '';
  if (value === '') return absentMeans;
  if (value === 'none' || value === 'local') return { kind: value };
  if (value === 'bedrock') return { kind: 'bedrock', model: DEFAULT_BEDROCK_EMBEDDING_MODEL };
  const slash = value.indexOf('/');
  const provider = slash < 0 ? value : value.slice(0, slash);
  const model = slash < 0 ? '' : value.slice(slash + 1);
  if ((provider === 'bedrock' || provider === 'openai-compatible') && !MODEL.test(model)) {
    throw new Error(`"${value}" names no model: write ${provider}/<model id>`);
  }
  if (provider === 'bedrock') {
    if (!TITAN_V2.test(model)) {
      throw new Error(
        `"${value}": on Bedrock crumbs embeds with Titan Text Embeddings v2 (its request shape: inputText, dimensions, normalize), so write bedrock/${DEFAULT_BEDROCK_EMBEDDING_MODEL}; for another model, serve it at an endpoint of the OpenAI API's shape and write openai-compatible/<model>`,
      );
    }
    return { kind: 'bedrock', model };
  }
  if (provider === 'openai-compatible') {
    if (baseUrl === undefined || !/^https?:\/\/[^\s]+$/.test(baseUrl.trim())) {
      throw new Error(
        `"${value}" needs the endpoint's base URL (http:// or https://, e.g. https://embeddings.example.com/v1)`,
      );
    }
    return { kind: 'openai-compatible', model, baseUrl: baseUrl.trim().replace(/\/+$/, '') };
  }
  throw new Error(
    `"${value}" is not an embeddings setting: write none, bedrock/<model id> or openai-compatible/<model>`,
  );
}

/** The setting as `CRUMBS_EMBEDDINGS` carries it (the base URL rides in its own variable). */
export function embeddingsSettingText(setting: EmbeddingsSetting): string {
  return setting.kind === 'none' || setting.kind === 'local'
    ? setting.kind
    : `${setting.kind}/${setting.model}`;
}

/** Titan v2's dimensions as crumbs asks for them (the Titan embedder's default). */
export const BEDROCK_EMBEDDING_DIMENSIONS = 512;
/**
 * The dimensions an OpenAI-compatible endpoint is assumed to answer with when the stage's vector index is created
 * (the index's dimension is fixed at creation): 1536, the size of OpenAI's text-embedding-3-small and ada-002.
 */
export const OPENAI_COMPATIBLE_EMBEDDING_DIMENSIONS = 1536;

/**
 * The embedding space a setting writes into — the model name the embedder stamps on its vectors and their
 * dimensions — which names the stage's vector index; none when embeddings are off or local.
 */
export function embeddingSpace(
  setting: EmbeddingsSetting,
): { model: string; dimensions: number } | undefined {
  switch (setting.kind) {
    case 'none':
    case 'local':
      return undefined;
    case 'bedrock':
      return {
        model: `bedrock/${setting.model}@${BEDROCK_EMBEDDING_DIMENSIONS}`,
        dimensions: BEDROCK_EMBEDDING_DIMENSIONS,
      };
    case 'openai-compatible':
      return {
        model: `openai-compatible/${setting.model}`,
        dimensions: OPENAI_COMPATIBLE_EMBEDDING_DIMENSIONS,
      };
  }
}
