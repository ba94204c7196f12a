/**
 * A2A tasks that wait on people, carry plans and deliverables, stream and cancel, end to end on the shared local
 * stack with the official SDK's client (JSON-RPC binding):
 * - an agent whose tool call needs approval: the task is input-required (saying which tool, which arguments),
 *   a follow-up "approve" on the task runs the tool, and the task completes;
 * - an orchestrated request (a data part `{mode, orchestrate}`) waits at its human checkpoint as input-required;
 *   a follow-up data part `{decision: "approve"}` answers the run's step, and the task completes with the
 *   deliverable as an artifact; a plan-mode request's plan is an artifact with its JSON as a data part;
 * - CancelTask cancels an orchestrated task's run (canceled), then refuses, as it refuses a plain request;
 * - `sendMessageStream` receives the task, its artifacts and the final state, in order; another workspace's token
 *   does not find the task.
 */
import { ClientFactory, DefaultAgentCardResolver, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import { describe, expect, it } from 'vitest';
import { CrumbsClient } from '#cli/api-client.ts';
import { eventually, localStack, uniqueWorkspace } from '../support/local.ts';
import { SCOPED_TOKEN, SCOPED_WORKSPACE } from '../support/shared-stack.ts';

const ws = uniqueWorkspace('a2a-tasks');

function crumbsClient(workspace: string): CrumbsClient {
  return new CrumbsClient({ endpoint: localStack().api, token: localStack().token, workspace });
}

async function applyAndWait(
  c: CrumbsClient,
  id: string,
  schema_name: string,
  context: Record<string, unknown>,
) {
  const written = await c.put(id, { schema_name, title: id, tags: [], context });
  await eventually(async () => {
    const d = (await c.definitions()).items.find((x) => x.id === id);
    return d && d.version === written.version && d.state === 'active' ? d : undefined;
  }, 30_000);
}

async function a2aClient(workspace: string, agent: string, token = localStack().token) {
  const fetchImpl: typeof fetch = (input, init) => {
    const headers = new Headers(init?.headers);
    headers.set('authorization', `Bearer ${token}`);
    return fetch(input, { ...init, headers });
  };
  const factory = new ClientFactory({
    transports: [new JsonRpcTransportFactory({ fetchImpl })],
    cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
  });
  return factory.createFromUrl(
    `${localStack().api}/a2a/workspaces/${workspace}/agents/${agent}/.well-known/agent-card.json`,
    '',
  );
}

type Content = { $case: 'text'; value: string } | { $case: 'data'; value: unknown };
function message(parts: Content[], taskId = '') {
  return {
    tenant: '',
    message: {
      messageId: `m-${Math.random().toString(36).slice(2)}`,
      contextId: '',
      taskId,
      role: 1,
      parts: parts.map((content) => ({ content, metadata: undefined, filename: '', mediaType: '' })),
      metadata: undefined,
      extensions: [],
      referenceTaskIds: [],
    },
    configuration: undefined,
    metadata: undefined,
  };
}
const text = (value: string): Content => ({ $case: 'text', value });
const data = (value: unknown): Content => ({ $case: 'data', value });

interface TaskLike {
  id: string;
  status?: { state: number; message?: { parts: { content?: Content }[] } };
  artifacts: { name: string; parts: { content?: Content; mediaType: string }[] }[];
}
const statusText = (t: TaskLike) => {
  const c = t.status?.message?.parts[0]?.content;
  return c?.$case === 'text' ? c.value : '';
};

let ready: Promise<void> | undefined;
function setUp(): Promise<void> {
  ready ??= (async () => {
    const c = crumbsClient(ws);
    await applyAndWait(c, 'tool-guarded', 'tool.def.v1', {
      name: 'guarded',
      implementation: 'echo',
      input_schema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
      approval: 'required',
    });
    await applyAndWait(c, 'agent-asker', 'agent.def.v1', {
      agent_id: 'asker',
      system_prompt: 'Work.',
      model: 'openai-compatible/calls-guarded',
      tools: ['guarded'],
    });
    await applyAndWait(c, 'agent-research', 'agent.def.v1', { agent_id: 'research' });
    await applyAndWait(c, 'agent-numbers', 'agent.def.v1', { agent_id: 'numbers' });
    await applyAndWait(c, 'agent-lead', 'agent.def.v1', {
      agent_id: 'lead',
      orchestration: {
        availableAgents: ['research', 'numbers'],
        defaultMode: 'parallel',
        checkpoints: [{ id: 'approve', prompt: 'Publish the brief?' }],
      },
      deliverable: { format: 'markdown', type: 'brief' },
    });
    await applyAndWait(c, 'agent-planner', 'agent.def.v1', {
      agent_id: 'planner',
      plan: {
        format: 'json',
        schema: { type: 'object', required: ['steps'], properties: { steps: { type: 'array' } } },
      },
    });
  })();
  return ready;
}

describe('A2A tasks', () => {
  it('is input-required while a tool call waits for approval, and completes once the caller approves', async () => {
    await setUp();
    const client = await a2aClient(ws, 'asker');
    const waiting = (await client.sendMessage(message([text('say hello')]))) as TaskLike;
    expect(waiting.status?.state, statusText(waiting)).toBe(6);
    expect(statusText(waiting)).toMatch(/asker wants to call the tool guarded with \{"text":"hello"\}/);
    // Neither approve nor reject: refused, naming what is expected.
    await expect(client.sendMessage(message([text('hmm')], waiting.id))).rejects.toThrow(
      /neither "approve" nor "reject"/,
    );
    const done = (await client.sendMessage(message([text('approve')], waiting.id))) as TaskLike;
    expect(done.status?.state, statusText(done)).toBe(3);
    expect(done.artifacts[0]?.name).toBe('answer');
    const approvals = await crumbsClient(ws).approvals({ status: 'all' });
    expect(approvals.items.find((a) => a.thread === waiting.id)).toMatchObject({
      status: 'approved',
      decided_by: 'user:local',
    });
  });

  it('waits at an orchestration checkpoint as input-required, and a follow-up approve finishes it with the deliverable', async () => {
    await setUp();
    const client = await a2aClient(ws, 'lead');
    const waiting = (await client.sendMessage(
      message([text('the brief'), data({ mode: 'build', orchestrate: true })]),
    )) as TaskLike;
    expect(waiting.status?.state, statusText(waiting)).toBe(6);
    expect(statusText(waiting)).toContain(`Run run-${waiting.id} waits at step approve: Publish the brief?`);
    await expect(
      client.sendMessage(message([data({ decision: 'approve', arguments: { x: 1 } })], waiting.id)),
    ).rejects.toThrow(/a run step takes "input", not "arguments"/);
    const done = (await client.sendMessage(
      message([data({ decision: 'approve', reason: 'ship it' })], waiting.id),
    )) as TaskLike;
    expect(done.status?.state, statusText(done)).toBe(3);
    expect(done.artifacts.map((a) => a.name)).toEqual([
      'answer',
      expect.stringMatching(/^agent\.deliverable\.v1: brief: /),
    ]);
    expect(done.artifacts[1]?.parts[0]).toMatchObject({
      mediaType: 'text/markdown',
      content: { $case: 'text' },
    });
    const run = await crumbsClient(ws).getRun(`run-${waiting.id}`);
    expect(run.steps?.approve).toMatchObject({ decision: 'approve', by: 'user:local' });
  });

  it("carries a plan-mode answer's plan as an artifact, its JSON as a data part", async () => {
    await setUp();
    const client = await a2aClient(ws, 'planner');
    const done = (await client.sendMessage(
      message([text('plan the launch'), data({ mode: 'plan' })]),
    )) as TaskLike;
    expect(done.status?.state, statusText(done)).toBe(3);
    const plan = done.artifacts.find((a) => a.name.startsWith('agent.plan.v1: '));
    expect(plan?.parts.map((p) => p.content?.$case)).toEqual(['text', 'data']);
    expect(plan?.parts[1]?.content).toMatchObject({ $case: 'data', value: { steps: expect.any(Array) } });
    // A mode the protocol does not have is refused before anything is written.
    await expect(client.sendMessage(message([text('x'), data({ mode: 'paint' })]))).rejects.toThrow(
      /data\.mode: expected one of converse, plan, build/,
    );
  });

  it('cancels an orchestrated task through its run, then refuses to cancel it again', async () => {
    await setUp();
    const client = await a2aClient(ws, 'lead');
    const waiting = (await client.sendMessage(
      message([text('another brief'), data({ mode: 'build', orchestrate: true })]),
    )) as TaskLike;
    expect(waiting.status?.state, statusText(waiting)).toBe(6);
    const cancelled = await client.cancelTask({ tenant: '', id: waiting.id, metadata: undefined });
    expect(cancelled.status?.state).toBe(5);
    expect((await crumbsClient(ws).getRun(`run-${waiting.id}`)).status).toBe('cancelled');
    await expect(client.cancelTask({ tenant: '', id: waiting.id, metadata: undefined })).rejects.toThrow(
      /has ended \(canceled\)/,
    );
  });

  it('streams the task, its artifacts and the final state in order; another workspace does not find it', async () => {
    await setUp();
    const client = await a2aClient(ws, 'planner');
    const seen: string[] = [];
    let id = '';
    for await (const event of client.sendMessageStream(
      message([text('plan a party'), data({ mode: 'plan' })]),
    )) {
      const p = event.payload;
      if (p?.$case === 'task') {
        id = p.value.id;
        seen.push(`task:${p.value.status?.state}`);
      } else if (p?.$case === 'artifactUpdate') seen.push(`artifact:${p.value.artifact?.name.split(':')[0]}`);
      else if (p?.$case === 'statusUpdate') seen.push(`status:${p.value.status?.state}`);
    }
    expect(seen).toEqual(['task:2', 'artifact:answer', 'artifact:agent.plan.v1', 'status:3']);
    // Subscribing to an ended task is refused; its state is read with GetTask.
    await expect(async () => {
      for await (const _ of client.resubscribeTask({ tenant: '', id })) break;
    }).rejects.toThrow(/has ended \(completed\)/);
    // Another workspace's agent of the same name does not find the task, nor can its token reach this workspace.
    const scoped = new CrumbsClient({
      endpoint: localStack().api,
      token: SCOPED_TOKEN,
      workspace: SCOPED_WORKSPACE,
    });
    await applyAndWait(scoped, 'agent-planner', 'agent.def.v1', {
      agent_id: 'planner',
      model: 'offline/echo',
    });
    const stranger = await a2aClient(SCOPED_WORKSPACE, 'planner', SCOPED_TOKEN);
    await expect(stranger.getTask({ tenant: '', id, historyLength: 0 })).rejects.toThrow(/no task/);
    const res = await fetch(`${localStack().api}/a2a/workspaces/${ws}/agents/planner`, {
      method: 'POST',
      headers: { authorization: `Bearer ${SCOPED_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id } }),
    });
    expect(res.status).toBe(403);
  });
});
