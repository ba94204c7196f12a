import { afterAll, describe, expect, it } from 'vitest';
import { LlmRouter } from '#shared/adapters/llm/llm-router.ts';
import { QuickJsSandbox } from '#shared/adapters/sandbox/quickjs-sandbox.ts';
import { createAgentKind } from '#shared/core/agents/agent-kind.ts';
import { createContextAgent } from '#shared/core/agents/context/context-agent.ts';
import { createFunctionAgent } from '#shared/core/agents/function-agent.ts';
import { parseYaml } from '#shared/domain/yaml.ts';
import { Harness, implementationsFor } from '../../../support/executor-harness.ts';

const sandbox = new QuickJsSandbox();
afterAll(() => sandbox.close());

function setup() {
  const h = new Harness();
  const llm = new LlmRouter({ env: {}, defaultProvider: 'offline' });
  const deps = h.deps({
    implementations: {
      ...implementationsFor(h.store),
      agent: createAgentKind({
        types: {
          context: createContextAgent({ store: h.store, llm }),
          function: createFunctionAgent({ sandbox, store: h.store, tools: () => undefined }),
        },
        store: h.store,
        clock: h.clock,
        llm,
        parseYaml,
      }),
    },
  });
  return { h, deps };
}

const CORRELATION = ['run:run-1', 'step:double', 'reply-to:workflow:flow'];

const request = (agent: string, context: Record<string, unknown>, tags = CORRELATION) => ({
  schema_name: 'agent.request.v1',
  tags,
  context: { agent, ...context },
});

describe('the agent kind, by type, through the pipeline', () => {
  it('answers an agent.request.v1 once, with request_id and the correlation tags, under duplicate delivery', async () => {
    const { h, deps } = setup();
    const def = await h.put({
      schema_name: 'agent.def.v1',
      context: {
        agent_id: 'doubler',
        type: 'function',
        function_code: 'async function handler(i) { return { n: i.n * 2 }; }',
      },
    });
    const trigger = await h.put(request('doubler', { input: { n: 21 }, request_id: 'r-1' }), 'workflow:flow');
    await h.process(def, trigger, deps);
    await h.process(def, trigger, deps);
    const answers = await h.list('agent.response.v1', 'request:r-1');
    expect(answers).toHaveLength(1);
    expect(answers[0]?.context).toMatchObject({
      agent_id: 'doubler',
      request_id: 'r-1',
      status: 'success',
      output: { n: 42 },
    });
    expect(answers[0]?.tags).toEqual(
      expect.arrayContaining([...CORRELATION, 'request:r-1', 'agent:response']),
    );
  });

  it('answers a request it cannot use with one error response, tagged like a success', async () => {
    const { h, deps } = setup();
    const def = await h.put({
      schema_name: 'agent.def.v1',
      context: { agent_id: 'fn', type: 'function', function_code: 'async function handler() { return 1; }' },
    });
    const trigger = await h.put(request('fn', { mode: 'dance', request_id: 'r-2' }), 'workflow:flow');
    await h.process(def, trigger, deps);
    const [answer] = await h.list('agent.response.v1', 'request:r-2');
    expect(answer?.context).toMatchObject({
      status: 'error',
      error: expect.stringMatching(/mode/),
      request_id: 'r-2',
    });
    expect(answer?.tags).toEqual(expect.arrayContaining(CORRELATION));
  });

  it('says which types a function runs when a definition of another type reaches it', async () => {
    const { h, deps } = setup();
    const def = await h.put({
      schema_name: 'agent.def.v1',
      context: {
        agent_id: 'x',
        type: 'external',
        transport: { kind: 'external', external: { endpoint: 'https://p.example' } },
      },
    });
    const trigger = await h.put(request('x', { message: 'hi' }, []));
    await h.process(def, trigger, deps);
    const [answer] = await h.list('agent.response.v1', `request:${trigger.id}`);
    expect(answer?.context.error).toMatch(/does not run external agents \(it runs context, function\)/);
  });

  it('keeps the correlation tags through tool rounds for the answer, never on the tool requests', async () => {
    const { h, deps } = setup();
    await h.toolDef('calculator');
    const agentDef = await h.put({
      schema_name: 'agent.def.v1',
      context: { agent_id: 'helper', model: 'offline/crumbs', tools: ['calculator'] },
    });
    const trigger = await h.put(
      request('helper', { message: 'what is 6*7?', request_id: 'r-3' }),
      'workflow:flow',
    );
    await h.process(agentDef, trigger, deps);
    const [toolRequest] = await h.list('tool.request.v1');
    expect(toolRequest?.tags.filter((t) => /^(run|step|reply-to):/.test(t))).toEqual([]);
    const toolDef = (await h.list('tool.def.v1'))[0];
    if (!toolRequest || !toolDef) throw new Error('no tool request');
    await h.process(toolDef, toolRequest, deps);
    const [toolResponse] = await h.list('tool.response.v1');
    if (!toolResponse) throw new Error('no tool response');
    await h.process(agentDef, toolResponse, deps);
    const [answer] = await h.list('agent.response.v1', 'request:r-3');
    expect(answer?.context).toMatchObject({
      request_id: 'r-3',
      status: 'success',
      text: expect.stringContaining('42'),
    });
    expect(answer?.tags).toEqual(expect.arrayContaining(CORRELATION));
  });

  it('puts the context markdown into the system prompt of a context agent', async () => {
    const { h, deps } = setup();
    const def = await h.put({
      schema_name: 'agent.def.v1',
      context: {
        agent_id: 'golf',
        type: 'context',
        context: '# Golf Rules Expert',
        yaml: 'agent_card:\n  modes: [converse]\n',
      },
    });
    const trigger = await h.put(request('golf', { message: 'hello' }, []));
    await h.process(def, trigger, deps);
    const [conversation] = await h.list('agent.conversation.v1');
    expect(String(conversation?.context.system)).toContain('# Golf Rules Expert');
  });
});
