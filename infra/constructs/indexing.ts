/**
 * The indexer keeps embeddings in step with breadcrumbs, from change events: its own static rule on the first crumbs
 * bus (changes of embedded schemas) feeds its queue, so an embedding model that fails (no Bedrock access,
 * throttling) retries and dead-letters here and never holds up the publisher. A part of the stateless stack: its
 * resources are created in the stack's scope (see `topology-functions.ts` for why).
 */
import type { Alarm } from 'aws-cdk-lib/aws-cloudwatch';
import { type IEventBus, Rule } from 'aws-cdk-lib/aws-events';
import { SqsQueue } from 'aws-cdk-lib/aws-events-targets';
import type { Construct } from 'constructs';
import { DEFAULT_EMBEDDED_SCHEMAS } from '#shared/core/stream/vector-search.ts';
import { indexerPattern, topology } from '#shared/topology.ts';
import type { CrumbsFunction } from './crumbs-function.ts';
import { sqsTrigger, type TopologyFunctions } from './topology-functions.ts';
import { WorkQueue } from './work-queue.ts';

export interface IndexingProps {
  readonly stage: string;
  readonly functions: TopologyFunctions;
  /** The first crumbs bus: the indexer's rule is on it. */
  readonly bus: IEventBus;
  /** Whether the stage computes embeddings (`crumbs:embeddings` is not `none`): without, no rule feeds the indexer. */
  readonly embeds: boolean;
}

export class Indexing {
  public readonly queue: WorkQueue;
  /** The indexer's static rule: changes of embedded schemas → indexer queue (none when embeddings are off). */
  public readonly rule: Rule | undefined;
  public readonly function: CrumbsFunction;
  public readonly alarms: readonly Alarm[];

  constructor(scope: Construct, props: IndexingProps) {
    const declaration = topology.functions.indexer;
    this.queue = new WorkQueue(scope, 'IndexerQueue', {
      declaration: sqsTrigger(declaration).queue,
      stage: props.stage,
    });
    this.alarms = [this.queue.deadLetterAlarm];
    // Embeddings off: no rule, so no change is sent to an indexer that would have nothing to compute.
    this.rule = !props.embeds
      ? undefined
      : new Rule(scope, 'IndexerRule', {
          eventBus: props.bus,
          ruleName: topology.bus.indexerRuleName,
          description: 'Changes of schemas with embeddings, to the crumbs indexer',
          eventPattern: indexerPattern(DEFAULT_EMBEDDED_SCHEMAS),
          targets: [new SqsQueue(this.queue.queue, { deadLetterQueue: this.queue.deadLetterQueue })],
        });
    this.function = props.functions.consuming(declaration, this.queue.queue);
  }
}
