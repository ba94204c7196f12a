/**
 * The chat flow of seed 003 through the real pipeline and DynamoDB Local, one hop at a time (routing is covered
 * by routing.test.ts): user message → context builder → agent.context.v1 → agent (offline model) →
 * tool.request.v1 calculator → tool executor → tool.response.v1 → agent continues → agent.response.v1 "391".
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_AGENT_ID, seedDemo } from '#local/demo.ts';
import type { LocalStack } from '#local/stack.ts';
import type { DynamoBreadcrumbStore } from '#shared/adapters/dynamodb/breadcrumb-store.ts';
import { DynamoClaims } from '#shared/adapters/dynamodb/claims.ts';
import { DynamoEmbeddingIndex } from '#shared/adapters/embeddings/dynamodb-embedding-index.ts';
import { LocalEmbedder } from '#shared/adapters/embeddings/local-embedder.ts';
import { LlmRouter } from '#shared/adapters/llm/llm-router.ts';
import { UsearchVectorEngine } from '#shared/adapters/vectors/usearch-engine.ts';
import { createContextAgentKind } from '#shared/core/agents/context/turn.ts';
import { createSearchHandler } from '#shared/core/api/search.ts';
import { createContextBuilderKind } from '#shared/core/context-builder/context-builder-kind.ts';
import type { ExecutorKindImplementation } from '#shared/core/executor/contract.ts';
import { type PipelineDeps, processExecutorMessage } from '#shared/core/executor/pipeline.ts';
import { indexEmbedding, searchSimilar, type VectorSearchDeps } from '#shared/core/stream/vector-search.ts';
import { createToolKind } from '#shared/core/tools/tool-kind.ts';
import { type Breadcrumb, CreateBreadcrumbSchema } from '#shared/domain/breadcrumb.ts';
import { systemClock } from '#shared/ports/breadcrumb-store.ts';
import { silentLog } from '#shared/ports/log.ts';
import { builtinTools } from '#shared/tools/builtins.ts';
import { toolCatalog } from '#shared/tools/catalog.ts';
import { topology } from '#shared/topology.ts';
import { messageFor } from '../support/executor-message.ts';
import { localStore, startStackWithoutExecutors, uniqueWorkspace } from '../support/local.ts';

let store: DynamoBreadcrumbStore;
let documentClient: DynamoDBDocumentClient;
let vector: VectorSearchDeps;
let stack: LocalStack;

// A stack of its own whose executors do not run: this test plays each hop itself, and real executors would race
// it for the same triggers. (The same flow through the API and CLI, with the executors running, is in
// chat.test.ts.)
beforeAll(async () => {
  ({ stack, documentClient } = await startStackWithoutExecutors());
  store = localStore(documentClient);
  vector = {
    store,
    index: new DynamoEmbeddingIndex(topology.table.name, documentClient),
    engine: new UsearchVectorEngine(),
    embedder: new LocalEmbedder(),
  };
}, 90_000);

afterAll(async () => {
  await stack?.stop();
});

function deps(): PipelineDeps {
  return {
    store,
    claims: new DynamoClaims(topology.table.name, { client: documentClient }),
    leaseMs: 60_000,
    vectorSearch: { search: (q) => searchSimilar(vector, q) },
    implementations: {
      agent: createContextAgentKind({
        store,
        llm: new LlmRouter({ env: {} }),
      }) as ExecutorKindImplementation<unknown>,
      'context-builder': createContextBuilderKind() as ExecutorKindImplementation<unknown>,
      tool: createToolKind({
        store,
        log: silentLog,
        clock: systemClock,
        tools: toolCatalog(builtinTools),
      }),
    },
  };
}

async function run(definition: Breadcrumb, trigger: Breadcrumb): Promise<Breadcrumb[]> {
  const outcome = await processExecutorMessage(messageFor(definition, trigger), deps());
  if (outcome.status !== 'responded') throw new Error(`expected a response, got ${JSON.stringify(outcome)}`);
  return Promise.all(outcome.outputIds.map((id) => store.get(trigger.workspace, id)));
}

async function sendMessage(ws: string, message: string, session = 's1'): Promise<Breadcrumb> {
  const { breadcrumb } = await store.create(
    ws,
    CreateBreadcrumbSchema.parse({
      schema_name: 'user.message.v1',
      tags: ['user:message', `session:${session}`],
      context: { message, session },
    }),
    { principal: 'user:tester' },
  );
  // What the publisher does for every write (see vector-search.ts).
  await indexEmbedding(vector, breadcrumb);
  return breadcrumb;
}

describe('agent flow (seed 003) on the local stack', () => {
  it('answers "what is 17*23?" with 391 after a calculator round trip', async () => {
    const ws = uniqueWorkspace('chat');
    await seedDemo(store, ws, {});
    const contextConfig = await store.get(ws, `demo-context-${DEMO_AGENT_ID}`);
    const agent = await store.get(ws, `demo-agent-${DEMO_AGENT_ID}`);
    const calculator = await store.get(ws, 'demo-tool-calculator');

    const message = await sendMessage(ws, 'what is 17*23?');

    const [context] = await run(contextConfig, message);
    expect(context?.schema_name).toBe('agent.context.v1');
    expect(context?.tags).toEqual(expect.arrayContaining([`consumer:${DEMO_AGENT_ID}`, 'session:s1']));
    expect(context?.context).toMatchObject({ consumer_id: DEMO_AGENT_ID, trigger_event_id: message.id });
    expect(context?.context.formatted_context).toContain('## chat_history');

    // The round's one request is the agent's only write: the turn waits in it, not in a conversation record.
    const written = await run(agent, context!);
    expect(written.map((b) => b.schema_name)).toEqual(['tool.request.v1']);
    const [request] = written;
    expect(request?.schema_name).toBe('tool.request.v1');
    expect(request?.context).toMatchObject({
      tool: 'calculator',
      input: { expression: '17*23' },
      requestedBy: DEMO_AGENT_ID,
      thread: message.id,
    });
    expect(request?.tags).toContain(`request:${String(request?.context.requestId)}`);
    expect(request?.context.conversation).toMatchObject({ status: 'waiting-for-tools', round: 1 });

    const [toolResponse] = await run(calculator, request!);
    expect(toolResponse?.context).toMatchObject({ status: 'success', output: { result: 391 } });

    const [answer, finished] = await run(agent, toolResponse!);
    expect(answer?.schema_name).toBe('agent.response.v1');
    expect(answer?.context.message).toContain('391');
    expect(answer?.context).toMatchObject({
      agent_id: DEMO_AGENT_ID,
      thread: message.id,
      response_to: message.id,
      tool_rounds: 1,
    });
    expect(answer?.tags).toEqual(expect.arrayContaining(['agent:response', `thread:${message.id}`]));
    // The conversation, written once: the turn's transcript, answered.
    expect(finished?.schema_name).toBe('agent.conversation.v1');
    expect(finished?.context.status).toBe('answered');
    expect(finished?.version).toBe(1);

    // A duplicate delivery of the tool response changes nothing.
    const again = await processExecutorMessage(messageFor(agent, toolResponse!), deps());
    expect(again.status).toBe('skipped');
  });

  it('updates one agent.context.v1 per session and finds earlier messages by meaning', async () => {
    const ws = uniqueWorkspace('ctx');
    await seedDemo(store, ws, {});
    const contextConfig = await store.get(ws, `demo-context-${DEMO_AGENT_ID}`);
    const first = await sendMessage(ws, 'my API key for the billing service is stored in vault');
    await sendMessage(ws, 'the weather in Lisbon is sunny');
    const [c1] = await run(contextConfig, first);
    const question = await sendMessage(ws, 'where is the billing API key?');
    const [c2] = await run(contextConfig, question);
    expect(c2?.id).toBe(c1?.id);
    expect(c2?.version).toBe(2);
    const related = c2?.context.sources as Record<string, unknown[]>;
    const nearest = related.related_messages?.[0] as { message?: string } | undefined;
    expect(nearest?.message).toContain('billing service');

    const search = createSearchHandler(vector);
    const res = await search(
      {
        method: 'GET',
        path: '',
        headers: {},
        query: { q: 'billing key', nn: '2', schema_name: 'user.message.v1' },
        body: undefined,
        caller: undefined,
      },
      { ws },
    );
    const body = JSON.parse(String(res.body)) as { items: { id: string; score: number }[] };
    expect(body.items).toHaveLength(2);
    expect([first.id, question.id]).toContain(body.items[0]?.id);
    expect(body.items[0]!.score).toBeGreaterThanOrEqual(body.items[1]!.score);
  });
});
