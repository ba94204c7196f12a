/**
 * Fuzzes the A2A endpoint of the local stack (fast-check): JSON-RPC messages with A2A 1.0's methods, their 0.3
 * names and made-up ones, any params and ids, batches and broken JSON. Nothing a client sends produces a 5xx; a 200
 * carries a JSON-RPC response (a stream: each of its events). Sends that would start real work ask to return at
 * once, so the run stays short. Reproducible: a fixed seed (CRUMBS_FUZZ_SEED overrides it, CRUMBS_FUZZ_RUNS the
 * count), printed with a failure.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CrumbsClient } from '#cli/api-client.ts';
import { eventually, localStack, uniqueWorkspace } from '../support/local.ts';

const SEED = Number(process.env.CRUMBS_FUZZ_SEED ?? 20_261_126);
const RUNS = Number(process.env.CRUMBS_FUZZ_RUNS ?? 300);
const ws = uniqueWorkspace('a2a-fuzz');

const METHODS = [
  'SendMessage',
  'SendStreamingMessage',
  'GetTask',
  'CancelTask',
  'ListTasks',
  'SubscribeToTask',
  'CreateTaskPushNotificationConfig',
  'GetExtendedAgentCard',
  'message/send',
  'tasks/get',
];
const json = fc.jsonValue({ maxDepth: 3 });
const part = fc.oneof(
  fc.record({ text: fc.string({ maxLength: 40 }) }),
  fc.record({ data: json }),
  fc.record({ url: fc.string({ maxLength: 40 }) }),
  json,
);
const sendParams = fc.record(
  {
    message: fc.oneof(
      fc.record(
        {
          messageId: fc.string({ maxLength: 20 }),
          role: fc.constantFrom('ROLE_USER', 'ROLE_AGENT', 1, 'x'),
          parts: fc.array(part, { maxLength: 3 }),
          contextId: fc.string({ maxLength: 20 }),
          taskId: fc.string({ maxLength: 20 }),
        },
        { requiredKeys: [] },
      ),
      json,
    ),
    configuration: fc.constant({ returnImmediately: true }),
  },
  { requiredKeys: [] },
);
const message = fc.record(
  {
    jsonrpc: fc.oneof({ arbitrary: fc.constant('2.0'), weight: 8 }, json),
    id: fc.oneof({ arbitrary: fc.nat(), weight: 6 }, json),
    method: fc.oneof({ arbitrary: fc.constantFrom(...METHODS), weight: 6 }, fc.string({ maxLength: 30 })),
    params: fc.oneof(sendParams, fc.record({ id: fc.string({ maxLength: 30 }) }), json),
  },
  { requiredKeys: [] },
);
/** Well-formed streams (1.0's and 0.3's names), so streams are fuzzed past the SDK's checks: they run to the end. */
const text = fc.string({ minLength: 1, maxLength: 40 }).filter((t) => t.trim() !== '');
const stream = fc.oneof(
  fc.record({
    jsonrpc: fc.constant('2.0'),
    id: fc.nat(),
    method: fc.constant('SendStreamingMessage'),
    params: fc.record({
      message: fc.record({
        messageId: fc.uuid(),
        role: fc.constant('ROLE_USER'),
        parts: fc.array(fc.oneof(fc.record({ text }), fc.record({ data: json })), {
          minLength: 1,
          maxLength: 2,
        }),
      }),
    }),
  }),
  fc.record({
    jsonrpc: fc.constant('2.0'),
    id: fc.nat(),
    method: fc.constant('message/stream'),
    params: fc.record({
      message: fc.record({
        kind: fc.constant('message'),
        messageId: fc.uuid(),
        role: fc.constant('user'),
        parts: fc.array(fc.record({ kind: fc.constant('text'), text }), { minLength: 1, maxLength: 2 }),
      }),
    }),
  }),
);
const body = fc.oneof(
  { arbitrary: message.map((m) => JSON.stringify(m)), weight: 6 },
  { arbitrary: stream.map((m) => JSON.stringify(m)), weight: 1 },
  fc.array(message, { maxLength: 3 }).map((m) => JSON.stringify(m)),
  fc.string({ maxLength: 200 }),
);

describe('A2A endpoint fuzz', () => {
  it('answers anything a client sends without a 5xx', async () => {
    const c = new CrumbsClient({ endpoint: localStack().api, token: localStack().token, workspace: ws });
    const written = await c.put('agent-target', {
      schema_name: 'agent.def.v1',
      title: 'target',
      tags: [],
      context: { agent_id: 'target', model: 'offline/echo' },
    });
    await eventually(async () => {
      const d = (await c.definitions()).items.find((x) => x.id === 'agent-target');
      return d && d.version === written.version && d.state === 'active' ? d : undefined;
    }, 30_000);
    const url = `${localStack().api}/a2a/workspaces/${ws}/agents/target`;
    const seen = new Map<number, number>();
    let streams = 0;
    await fc.assert(
      fc.asyncProperty(body, async (b) => {
        const res = await fetch(url, {
          method: 'POST',
          headers: { authorization: `Bearer ${localStack().token}`, 'content-type': 'application/json' },
          body: b,
        });
        const text = await res.text();
        seen.set(res.status, (seen.get(res.status) ?? 0) + 1);
        expect(res.status, `${b.slice(0, 200)} → ${text.slice(0, 300)}`).toBeLessThan(500);
        if (res.status !== 200) return;
        // A stream is server-sent events, each a JSON-RPC response (an error as `event: error`).
        const isStream = res.headers.get('content-type')?.startsWith('text/event-stream') === true;
        if (isStream) streams++;
        const payloads = isStream
          ? text
              .split('\n')
              .filter((l) => l.startsWith('data: '))
              .map((l) => l.slice(6))
          : [text];
        expect(payloads.length).toBeGreaterThan(0);
        for (const p of payloads) expect(JSON.parse(p)).toMatchObject({ jsonrpc: '2.0' });
      }),
      { seed: SEED, numRuns: RUNS },
    );
    console.log(
      `a2a fuzz: ${RUNS} requests, seed ${SEED}, statuses ${JSON.stringify(Object.fromEntries(seen))}, ${streams} streams`,
    );
  }, 300_000);
});
