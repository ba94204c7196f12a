/**
 * The A2A server on the local stack, through the official SDK client (JSON-RPC binding): `SendMessage` to a context
 * agent on the offline model, end to end (the request breadcrumb written, the agent executor answering, the task
 * read back completed), p50 / p99 over `--sends` messages, one at a time.
 *
 *   node bin/run-ts.js bench/a2a.bench.ts [--sends 30]
 */
import { parseArgs } from 'node:util';
import { ClientFactory, DefaultAgentCardResolver, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import { CrumbsClient } from '#cli/api-client.ts';
import { percentile } from './support/counting-proxy.ts';
import { startBenchStack } from './support/stack.ts';

const { values } = parseArgs({ options: { sends: { type: 'string', default: '30' } } });
const stack = await startBenchStack();
const ws = 'bench-a2a';
try {
  const api = new CrumbsClient({ endpoint: stack.endpoints.api, token: 'bench', workspace: ws });
  const written = await api.put('agent-helper', {
    schema_name: 'agent.def.v1',
    title: 'helper',
    tags: [],
    context: { agent_id: 'helper', system_prompt: 'Help.', model: 'offline/echo' },
  });
  for (;;) {
    const d = (await api.definitions()).items.find((x) => x.id === 'agent-helper');
    if (d?.version === written.version && d.state === 'active') break;
    await new Promise((r) => setTimeout(r, 20));
  }
  const fetchImpl: typeof fetch = (input, init) => {
    const headers = new Headers(init?.headers);
    headers.set('authorization', 'Bearer bench');
    return fetch(input, { ...init, headers });
  };
  const client = await new ClientFactory({
    transports: [new JsonRpcTransportFactory({ fetchImpl })],
    cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
  }).createFromUrl(
    `${stack.endpoints.api}/a2a/workspaces/${ws}/agents/helper/.well-known/agent-card.json`,
    '',
  );
  const send = async (i: number) => {
    const task = (await client.sendMessage({
      tenant: '',
      message: {
        messageId: `m-${i}`,
        contextId: '',
        taskId: '',
        role: 1,
        parts: [
          {
            content: { $case: 'text', value: `question ${i}` },
            metadata: undefined,
            filename: '',
            mediaType: 'text/plain',
          },
        ],
        metadata: undefined,
        extensions: [],
        referenceTaskIds: [],
      },
      configuration: undefined,
      metadata: undefined,
    })) as { status?: { state: number } };
    if (task.status?.state !== 3) throw new Error(`task ${i} ended in state ${task.status?.state}`);
  };
  await send(-1);
  const times: number[] = [];
  for (let i = 0; i < Number(values.sends); i++) {
    const started = performance.now();
    await send(i);
    times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  console.log(
    `A2A SendMessage to a context agent, completed task (n=${times.length}): p50 ${percentile(times, 0.5).toFixed(0)} ms, p99 ${percentile(times, 0.99).toFixed(0)} ms`,
  );
} finally {
  await stack.stop();
}
