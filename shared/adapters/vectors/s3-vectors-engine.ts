/**
 * The vector engine on AWS: Amazon S3 Vectors. The stage has one vector bucket and one index per embedding model
 * (the CDK app names the index after the model, `vectorIndexName`, so a new model writes a new index and vectors of two
 * models are never compared); every vector carries filterable metadata — `workspace`, `schema_name` and, for
 * records that belong to a person, `scope` (the `actor:` tag's value) — and every query filters on the workspace (and
 * the schema and scope when asked) inside QueryVectors. S3 Vectors evaluates the filter together with the search
 * (pre-filtering on indexes in ENHANCED mode, the default for vector buckets created from 30 September 2026), so a
 * workspace of 10 vectors among 100k still gets its top k.
 *
 * - Keys are `<workspace>/<breadcrumb id>`: unique in the index, and a workspace can never name another's vector.
 * - topK is at most 100 (the QueryVectors limit); results may come in pages (`nextToken`), which are read to the end.
 * - S3 Vectors has no TTL: expiry and deletion follow the table's stream (the indexer removes a vector when its
 *   breadcrumb is deleted or expires; workspace deletion deletes breadcrumbs one by one, each reaching the indexer).
 * - Distances are cosine distances (the index's metric): score = 1 − distance.
 */
import { createHash } from 'node:crypto';
import {
  DeleteVectorsCommand,
  PutVectorsCommand,
  QueryVectorsCommand,
  S3VectorsClient,
} from '@aws-sdk/client-s3vectors';
import { z } from 'zod';
import type { VectorEngine, VectorEngineQuery, VectorEntry } from '#shared/ports/embeddings.ts';

/** A JSON document, as the SDK types a metadata filter. */
type DocumentType = null | boolean | number | string | DocumentType[] | { [key: string]: DocumentType };

/** The QueryVectors topK ceiling. */
export const S3_VECTORS_MAX_K = 100;

export interface S3VectorsEngineOptions {
  bucketName: string;
  /** The index of each embedding model, by the model's name as the embedder gives it. */
  indexFor: (model: string) => string;
  client?: S3VectorsClient;
}

const QueryAnswerSchema = z.object({
  vectors: z.array(z.object({ key: z.string(), distance: z.number().optional() }).passthrough()).optional(),
  nextToken: z.string().optional(),
});

let defaultClient: S3VectorsClient | undefined;

export class S3VectorsEngine implements VectorEngine {
  readonly name = 's3vectors';
  readonly maxK = S3_VECTORS_MAX_K;
  private readonly client: S3VectorsClient;

  constructor(private readonly options: S3VectorsEngineOptions) {
    if (options.client) this.client = options.client;
    else {
      defaultClient ??= new S3VectorsClient({});
      this.client = defaultClient;
    }
  }

  async upsert(model: string, entry: VectorEntry): Promise<void> {
    await this.client.send(
      new PutVectorsCommand({
        vectorBucketName: this.options.bucketName,
        indexName: this.options.indexFor(model),
        vectors: [
          {
            key: vectorKey(entry.workspace, entry.id),
            data: { float32: entry.vector },
            metadata: {
              workspace: entry.workspace,
              schema_name: entry.schema_name,
              ...(entry.scope !== undefined ? { scope: entry.scope } : {}),
            },
          },
        ],
      }),
    );
  }

  async remove(model: string, workspace: string, id: string): Promise<void> {
    await this.client.send(
      new DeleteVectorsCommand({
        vectorBucketName: this.options.bucketName,
        indexName: this.options.indexFor(model),
        keys: [vectorKey(workspace, id)],
      }),
    );
  }

  async query(model: string, query: VectorEngineQuery): Promise<Array<{ id: string; score: number }>> {
    const k = Math.max(1, Math.min(this.maxK, Math.floor(query.k)));
    const filter = vectorFilter(query);
    const prefix = `${query.workspace}/`;
    const hits: Array<{ id: string; score: number }> = [];
    let nextToken: string | undefined;
    do {
      const answer = QueryAnswerSchema.parse(
        await this.client.send(
          new QueryVectorsCommand({
            vectorBucketName: this.options.bucketName,
            indexName: this.options.indexFor(model),
            topK: k,
            queryVector: { float32: query.vector },
            filter,
            returnDistance: true,
            ...(nextToken !== undefined ? { nextToken } : {}),
          }),
        ),
      );
      for (const v of answer.vectors ?? []) {
        // The filter already holds the workspace; the key's prefix is checked too, so a mis-filed vector of another
        // workspace can never be answered.
        if (!v.key.startsWith(prefix)) continue;
        hits.push({ id: v.key.slice(prefix.length), score: 1 - (v.distance ?? 1) });
      }
      nextToken = answer.nextToken;
    } while (nextToken !== undefined && hits.length < k);
    return hits.sort((a, b) => b.score - a.score || a.id.localeCompare(b.id)).slice(0, k);
  }
}

export function vectorKey(workspace: string, id: string): string {
  return `${workspace}/${id}`;
}

/** The QueryVectors metadata filter of a query: the workspace always, the schema and scope when asked. */
export function vectorFilter(query: VectorEngineQuery): DocumentType {
  const clauses: { [key: string]: DocumentType }[] = [{ workspace: { $eq: query.workspace } }];
  if (query.schemaName !== undefined) clauses.push({ schema_name: { $eq: query.schemaName } });
  if (query.scope !== undefined) clauses.push({ scope: { $eq: query.scope } });
  return clauses.length === 1 && clauses[0] !== undefined ? clauses[0] : { $and: clauses };
}

/**
 * The index name of an embedding model: lowercase letters, digits and hyphens (S3 Vectors index names are 3–63 of
 * those, starting and ending with a letter or digit), a prefix of the model's name and a hash of all of it, so two
 * models never share an index.
 */
export function vectorIndexName(prefix: string, model: string): string {
  const slug = model
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');
  const head = `${prefix}-${slug}`.slice(0, 50).replace(/-+$/, '');
  return `${head}-${createHash('sha256').update(model).digest('hex').slice(0, 8)}`;
}
