import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SdkA2aClient } from '#shared/adapters/a2a/a2a-client.ts';
import { guardedFetch } from '#shared/adapters/network/guarded-fetch.ts';
import { NonRetriableError, RetriableError } from '#shared/domain/errors.ts';
import { startA2aServer, type TestA2aServer } from '../../support/a2a-server.ts';
import { startHttpServer } from '../../support/http-server.ts';

const signal = new AbortController().signal;

describe('SdkA2aClient against a real A2A v1.0 server (@a2a-js/sdk)', () => {
  let partner: TestA2aServer;
  const client = new SdkA2aClient({ fetch: guardedFetch({ allowPrivate: true }) });
  const endpoint = () => ({ cardUrl: `${partner.baseUrl}/.well-known/agent-card.json` });
  beforeAll(async () => {
    partner = await startA2aServer();
  });
  afterAll(() => partner.close());

  it('reads the agent card', async () => {
    expect(await client.card(endpoint(), signal)).toEqual({
      name: 'Adder',
      description: 'Adds two numbers',
      version: '1.0.0',
      skills: [{ id: 'add', name: 'add', description: 'Adds a and b' }],
    });
  });

  it('streams a message and follows the task to completed, naming the task as soon as it exists', async () => {
    const told: string[] = [];
    const reply = await client.send(
      endpoint(),
      { messageId: 'm-1', parts: [{ kind: 'data', data: { a: 2, b: 40 } }] },
      signal,
      async (id) => {
        told.push(id);
      },
    );
    expect(told).toEqual([reply.taskId]);
    expect(reply).toMatchObject({
      state: 'completed',
      taskId: expect.any(String),
      parts: [{ kind: 'text', text: 'the sum is 42' }],
      artifacts: [{ name: 'result', parts: [{ kind: 'data', data: { sum: 42 } }] }],
    });
    expect(partner.requests).toContain('SendStreamingMessage');
    // The task can be read again by id.
    const again = await client.getTask(endpoint(), reply.taskId ?? '', signal);
    expect(again).toMatchObject({ state: 'completed', artifacts: [{ parts: [{ data: { sum: 42 } }] }] });
  });

  it('sends a blocking message/send to a partner that does not stream', async () => {
    const plain = await startA2aServer({ streaming: false });
    try {
      const reply = await client.send(
        { cardUrl: `${plain.baseUrl}/.well-known/agent-card.json` },
        { messageId: 'm-3', parts: [{ kind: 'text', text: 'what is 1+2?' }] },
        signal,
      );
      expect(reply).toMatchObject({ state: 'completed', artifacts: [{ parts: [{ data: { sum: 3 } }] }] });
      expect(plain.requests).toContain('SendMessage');
    } finally {
      await plain.close();
    }
  });

  it('reports a task that failed as a failed reply, not an exception', async () => {
    const reply = await client.send(
      endpoint(),
      { messageId: 'm-2', parts: [{ kind: 'data', data: { fail: 'nope' } }] },
      signal,
    );
    expect(reply).toMatchObject({ state: 'failed', parts: [{ kind: 'text', text: 'cannot add: nope' }] });
  });

  it('reports an unknown task as not retriable', async () => {
    await expect(client.getTask(endpoint(), 'no-such-task', signal)).rejects.toThrow(NonRetriableError);
  });

  it.each([
    [408, RetriableError],
    [409, RetriableError],
    [429, RetriableError],
    [503, RetriableError],
    [400, NonRetriableError],
  ])('classifies a request answered %i by isRetriableStatus', async (status, expected) => {
    // The card is read normally; the JSON-RPC request is answered with `status`.
    const answering: typeof fetch = async (input, init) =>
      init?.method === 'POST'
        ? new Response(`{"error":"answered ${status}"}`, { status })
        : guardedFetch({ allowPrivate: true })(input, init);
    const refused = new SdkA2aClient({ fetch: answering });
    const error = await refused.getTask(endpoint(), 'task-1', signal).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(expected);
    expect(String(error)).toMatch(new RegExp(`HTTP ${status}`));
  });

  it('reports a partner that is down as retriable', async () => {
    const down = await startA2aServer();
    const url = `${down.baseUrl}/.well-known/agent-card.json`;
    await down.close();
    const fresh = new SdkA2aClient({ fetch: guardedFetch({ allowPrivate: true }) });
    await expect(fresh.card({ cardUrl: url }, signal)).rejects.toThrow(RetriableError);
  });

  it('refuses a loopback partner unless the stack allows private networks', async () => {
    const guarded = new SdkA2aClient({ fetch: guardedFetch({ allowPrivate: false }) });
    await expect(guarded.card(endpoint(), signal)).rejects.toThrow(/private, loopback/);
  });

  it("stops reading a partner's answer at the operator's ceiling", async () => {
    const flood = await startHttpServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(`{"name":"${'x'.repeat(256 * 1024)}"}`);
    });
    try {
      const capped = new SdkA2aClient({ fetch: guardedFetch({ allowPrivate: true, ceiling: 64 * 1024 }) });
      const error = await capped
        .card({ cardUrl: `${flood.url}/.well-known/agent-card.json` }, signal)
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(NonRetriableError);
      expect(String(error)).toMatch(/CRUMBS_MAX_RESPONSE_BYTES, the operator's ceiling \(65536( bytes)?\)/);
    } finally {
      await flood.close();
    }
  });
});
