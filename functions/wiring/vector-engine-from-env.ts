/**
 * The vector engine `CRUMBS_VECTOR_ENGINE` names: `s3vectors` (the CDK app sets it with the stage's bucket and index
 * prefix) or `local` (the default: usearch in this process, persisted in `CRUMBS_VECTOR_DIR` when set — what
 * `crumbs dev` uses). The local engine is imported only when chosen, so a Lambda bundle never loads its native module
 * (the CDK bundling leaves `usearch` out).
 */
import { S3VectorsEngine, vectorIndexName } from '#shared/adapters/vectors/s3-vectors-engine.ts';
import type { VectorEngine, VectorEngineQuery, VectorEntry } from '#shared/ports/embeddings.ts';
import { ENV } from '#shared/topology.ts';

export function vectorEngineFromEnv(env: NodeJS.ProcessEnv = process.env): VectorEngine {
  const kind = env[ENV.vectorEngine]?.trim() || 'local';
  if (kind === 's3vectors') {
    const bucketName = env[ENV.vectorBucket];
    const prefix = env[ENV.vectorIndexPrefix];
    if (!bucketName || !prefix) {
      throw new Error(`${ENV.vectorEngine}=s3vectors needs ${ENV.vectorBucket} and ${ENV.vectorIndexPrefix}`);
    }
    return new S3VectorsEngine({ bucketName, indexFor: (model) => vectorIndexName(prefix, model) });
  }
  if (kind !== 'local') throw new Error(`${ENV.vectorEngine} is "${kind}": write s3vectors or local`);
  return new LazyLocalEngine(env[ENV.vectorDir]?.trim() || undefined);
}

/** The usearch engine, loaded on first use. */
class LazyLocalEngine implements VectorEngine {
  readonly name = 'usearch';
  readonly maxK = 100;
  private engine: Promise<VectorEngine> | undefined;

  constructor(private readonly dir: string | undefined) {}

  private load(): Promise<VectorEngine> {
    // A module name the bundler cannot follow: only the local stack loads the native engine.
    const path = '#shared/adapters/vectors/usearch-engine.ts';
    this.engine ??= import(path).then((m: typeof import('#shared/adapters/vectors/usearch-engine.ts')) =>
      m.sharedUsearchEngine(this.dir),
    );
    return this.engine;
  }

  async upsert(model: string, entry: VectorEntry): Promise<void> {
    return (await this.load()).upsert(model, entry);
  }

  async remove(model: string, workspace: string, id: string): Promise<void> {
    return (await this.load()).remove(model, workspace, id);
  }

  async query(model: string, query: VectorEngineQuery): Promise<Array<{ id: string; score: number }>> {
    return (await this.load()).query(model, query);
  }
}
