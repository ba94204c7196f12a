/**
 * Definitions past one bus's rule quota, end to end on a local stack of its own (as `crumbs dev --buses 4
 * --rules-per-bus 10` runs it): 35 tool definitions in two workspaces all become active, spread over the pool, and a
 * request to each tool is answered exactly once; with the pool full a new definition is invalid, naming the quota;
 * deleting a definition removes its rule from the bus that held it; a definition with a rule on two buses is answered
 * once. Written through the HTTP API and the CLI.
 */

import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  DescribeRuleCommand,
  EventBridgeClient,
  ListRulesCommand,
  ListTargetsByRuleCommand,
  PutRuleCommand,
  PutTargetsCommand,
} from '@aws-sdk/client-eventbridge';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Breadcrumb, CrumbsClient } from '#cli/api-client.ts';
import { main } from '#cli/main.ts';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '#local/aws-env.ts';
import { type LocalStack, startLocalStack } from '#local/stack.ts';
import { EventBridgeRuleRegistry } from '#shared/adapters/eventbridge/rule-registry.ts';
import {
  type CustomResourceEvent,
  handleSweepEvent,
  sendCustomResourceResponse,
} from '#shared/core/rules/bus-sweeper.ts';
import { PLACEMENT_SCHEMA } from '#shared/domain/protocol.ts';
import { PLACEMENT_ID } from '#shared/routing/bus-placement.ts';
import { poolBusNames, topology } from '#shared/topology.ts';
import { eventually } from '../support/local.ts';

const BUSES = 4;
const RULES_PER_BUS = 10;
const POOL = poolBusNames(topology.bus.name, BUSES);
const TOKEN = 'bus-pool-token';

let stack: LocalStack;
let events: EventBridgeClient;

beforeAll(async () => {
  stack = await startLocalStack({
    apiPort: 0,
    dynamodbPort: 0,
    sqsPort: 0,
    eventbridgePort: 0,
    schedulerPort: 0,
    token: TOKEN,
    seedDemo: false,
    buses: BUSES,
    rulesPerBus: RULES_PER_BUS,
    // This test fills the whole pool from two workspaces: no per-workspace quota below the pool's size.
    maxDefinitionsPerWorkspace: BUSES * RULES_PER_BUS,
    maxRulesPerWorkspace: BUSES * RULES_PER_BUS,
  });
  events = new EventBridgeClient({
    endpoint: stack.endpoints.eventbridge,
    region: LOCAL_REGION,
    credentials: LOCAL_CREDENTIALS,
  });
}, 120_000);

afterAll(async () => {
  events?.destroy();
  await stack?.stop();
});

const client = (workspace: string) =>
  new CrumbsClient({ endpoint: stack.endpoints.api, token: TOKEN, workspace });

async function crumbs(workspace: string, ...args: string[]): Promise<{ code: number; out: string }> {
  let out = '';
  const code = await main(
    [...args, '--endpoint', stack.endpoints.api, '--token', TOKEN, '--workspace', workspace],
    {
      stdout: (s) => {
        out += s;
      },
      stderr: () => undefined,
      env: {},
    },
  );
  return { code, out };
}

function toolDefinition(name: string) {
  return { schema_name: 'tool.def.v1', title: name, context: { name, implementation: 'echo' } };
}

interface Row {
  id: string;
  state: string;
  rule_name: string | null;
  event_bus: string | null;
  errors: { path: string; message: string }[];
}

/** The workspace's definitions as `crumbs rules --json` prints them, once none is pending. */
async function settledRules(workspace: string, count: number): Promise<Row[]> {
  return eventually(
    async () => {
      const res = await crumbs(workspace, 'rules', '--json');
      const rows = JSON.parse(res.out) as Row[];
      return rows.length === count && rows.every((r) => r.state === 'active' || r.state === 'invalid')
        ? rows
        : undefined;
    },
    90_000,
    250,
  );
}

/** Definition rules per bus, straight from the local EventBridge. */
async function rulesPerBus(): Promise<Record<string, string[]>> {
  const out: Record<string, string[]> = {};
  for (const bus of POOL) {
    const listed = await events.send(new ListRulesCommand({ EventBusName: bus, Limit: 100 }));
    out[bus] = (listed.Rules ?? []).map((r) => r.Name ?? '');
  }
  return out;
}

describe('definitions over a pool of 4 buses of 10 rules', () => {
  const wsA = 'pool-a';
  const wsB = 'pool-b';

  it('answers once when a definition has a rule on two buses (a move or a crash), and rules sync keeps one', async () => {
    const ws = 'pool-dup';
    const c = client(ws);
    await c.put('tool-echo-dup', toolDefinition('echo-dup'));
    const [row] = await settledRules(ws, 1);
    expect(row).toMatchObject({ state: 'active' });
    const home = row!.event_bus!;
    const name = row!.rule_name!;
    // The same rule, target and all, on another bus with room, which the workspace's placement then names.
    const before = await rulesPerBus();
    const other = POOL.find((b) => b !== home && before[b]!.length < RULES_PER_BUS)!;
    const rule = await events.send(new DescribeRuleCommand({ Name: name, EventBusName: home }));
    const { Targets } = await events.send(new ListTargetsByRuleCommand({ Rule: name, EventBusName: home }));
    await events.send(
      new PutRuleCommand({
        Name: name,
        EventBusName: other,
        EventPattern: rule.EventPattern,
        Description: rule.Description,
      }),
    );
    await events.send(new PutTargetsCommand({ Rule: name, EventBusName: other, Targets }));
    const placement = await c.getFull(PLACEMENT_ID).catch(() => undefined);
    const buses = [...((placement?.context.buses as string[] | undefined) ?? []), other].filter(
      (b) => b !== POOL[0],
    );
    await c.put(PLACEMENT_ID, {
      schema_name: PLACEMENT_SCHEMA,
      title: 'placement',
      context: { buses: [...new Set(buses)] },
    });
    // The publisher's placement cache (500 ms locally) has run out.
    await new Promise((r) => setTimeout(r, 1500));

    const request = await c.create({
      schema_name: 'tool.request.v1',
      tags: ['request:dup'],
      context: { tool: 'echo-dup', input: { twice: true }, requestId: 'dup' },
    });
    const answers = async () =>
      (await c.list({ schema_name: 'tool.response.v1', tag: 'request:dup', limit: 10, view: 'full' })).items;
    await eventually(async () => ((await answers()).length > 0 ? true : undefined), 30_000);
    await stack.settle();
    const got = await answers();
    expect(got).toHaveLength(1);
    expect(got[0]!.causation?.caused_by).toBe(`${request.id}@1`);

    expect((await crumbs(ws, 'rules', 'sync')).code).toBe(0);
    const after = await rulesPerBus();
    const holding = POOL.filter((b) => after[b]!.includes(name));
    expect(holding).toHaveLength(1);
    const [synced] = await settledRules(ws, 1);
    expect(synced).toMatchObject({ state: 'active', event_bus: holding[0] });
  }, 120_000);

  it('makes 25 tool definitions in one workspace and 10 in another active, spread over the buses; each request is answered once', async () => {
    const a = client(wsA);
    const b = client(wsB);
    const names = {
      [wsA]: Array.from({ length: 25 }, (_, i) => `echo-a${i + 1}`),
      [wsB]: Array.from({ length: 10 }, (_, i) => `echo-b${i + 1}`),
    };
    for (const name of names[wsA]) await a.put(`tool-${name}`, toolDefinition(name));
    for (const name of names[wsB]) await b.put(`tool-${name}`, toolDefinition(name));

    const rowsA = await settledRules(wsA, 25);
    const rowsB = await settledRules(wsB, 10);
    for (const row of [...rowsA, ...rowsB]) {
      expect(row.state, `${row.id}: ${JSON.stringify(row.errors)}`).toBe('active');
      expect(POOL).toContain(row.event_bus);
    }
    // No bus holds more than the quota; the first bus also holds the two system rules.
    const onBuses = await rulesPerBus();
    for (const bus of POOL) expect(onBuses[bus]!.length).toBeLessThanOrEqual(RULES_PER_BUS);
    expect(onBuses[POOL[0]!]).toEqual(
      expect.arrayContaining([topology.bus.ruleManagerRuleName, topology.bus.indexerRuleName]),
    );
    // Every definition's rule is on exactly the bus its status names, and on no other.
    const definitionRules = Object.entries(onBuses).flatMap(([bus, rules]) =>
      rules
        .filter(
          (r) =>
            r.startsWith(`${topology.bus.ruleNamePrefix}${wsA}-`) ||
            r.startsWith(`${topology.bus.ruleNamePrefix}${wsB}-`),
        )
        .map((r) => `${r}@${bus}`),
    );
    expect(definitionRules.sort()).toEqual(
      [...rowsA, ...rowsB].map((r) => `${r.rule_name}@${r.event_bus}`).sort(),
    );
    expect(new Set(rowsA.map((r) => r.event_bus)).size).toBeGreaterThan(1);

    // One request per tool; each answered exactly once.
    const requests: { ws: string; name: string; request: Breadcrumb }[] = [];
    for (const [ws, c] of [
      [wsA, a],
      [wsB, b],
    ] as const) {
      for (const name of names[ws]!) {
        const request = await c.create({
          schema_name: 'tool.request.v1',
          tags: [`request:${name}`],
          context: { tool: name, input: { said: name }, requestId: name },
        });
        requests.push({ ws, name, request });
      }
    }
    const answers = async (ws: string, name: string) =>
      (
        await client(ws).list({
          schema_name: 'tool.response.v1',
          tag: `request:${name}`,
          limit: 10,
          view: 'full',
        })
      ).items;
    await eventually(
      async () => {
        for (const { ws, name } of requests) if ((await answers(ws, name)).length === 0) return undefined;
        return true;
      },
      60_000,
      250,
    );
    await stack.settle();
    for (const { ws, name } of requests) {
      const got = await answers(ws, name);
      expect(got, name).toHaveLength(1);
      expect(got[0]!.context).toMatchObject({ tool: name, status: 'success', output: { said: name } });
    }
  }, 240_000);

  it('makes a definition invalid, naming the quota, when every bus of the pool is full', async () => {
    // Room left on the buses, after the system rules and the definitions above.
    const room = Object.values(await rulesPerBus()).reduce(
      (sum, rules) => sum + RULES_PER_BUS - rules.length,
      0,
    );
    expect(room).toBeGreaterThan(0);
    const c = client('pool-c');
    for (let i = 1; i <= room + 1; i++) await c.put(`tool-fill${i}`, toolDefinition(`fill${i}`));
    const rows = await settledRules('pool-c', room + 1);
    const invalid = rows.filter((r) => r.state === 'invalid');
    expect(rows.filter((r) => r.state === 'active')).toHaveLength(room);
    expect(invalid).toHaveLength(1);
    expect(invalid[0]).toMatchObject({ rule_name: null, event_bus: null });
    expect(invalid[0]!.errors).toEqual([
      {
        path: 'event_bus',
        message: expect.stringContaining(
          `LimitExceededException, the "Rules per event bus" quota) on every bus of the pool (${POOL.join(', ')})`,
        ),
      },
    ]);
    // The dashboard's definitions route says the same.
    const { items } = await c.definitions();
    expect(items.find((d) => d.id === invalid[0]!.id)).toMatchObject({ state: 'invalid', event_bus: null });

    // Deleting a definition removes its rule from the bus that held it, and `crumbs rules sync` then places the
    // refused one there.
    const freed = rows.find((r) => r.state === 'active' && r.event_bus !== POOL[0])!;
    await c.delete(freed.id);
    await eventually(async () =>
      (await rulesPerBus())[freed.event_bus!]!.includes(freed.rule_name!) ? undefined : true,
    );
    expect((await crumbs('pool-c', 'rules', 'sync')).code).toBe(0);
    const after = await settledRules('pool-c', room);
    expect(after.find((r) => r.id === invalid[0]!.id)).toMatchObject({
      state: 'active',
      event_bus: freed.event_bus,
    });
  }, 240_000);
});

describe('the bus sweeper (a destroyed stage, a shrinking pool)', () => {
  it("empties a bus of crumbs' rules through CloudFormation's custom resource protocol, leaving other rules", async () => {
    const bus = POOL[3] as string;
    // The pool is full from the tests before: make room for a rule of someone else's on the bus (run alone, the
    // bus is empty: give it a rule of crumbs' own).
    const registry = new EventBridgeRuleRegistry(bus, events);
    const [first] = (await registry.list(topology.bus.ruleNamePrefix)).map((r) => r.name);
    if (first !== undefined) {
      await registry.removeTargets(
        first,
        (await registry.targets(first)).map((t) => t.id),
      );
      await registry.delete(first);
    } else {
      await registry.put({
        name: `${topology.bus.ruleNamePrefix}sweep-own`,
        pattern: '{"source":["crumbs"]}',
        description: 'a rule of the rule manager',
      });
    }
    await events.send(
      new PutRuleCommand({ Name: 'ops-audit', EventBusName: bus, EventPattern: '{"source":["ops"]}' }),
    );
    const before = (await rulesPerBus())[bus] ?? [];
    const crumbsRules = before.filter((r) => r.startsWith(topology.bus.ruleNamePrefix));
    expect(crumbsRules.length).toBeGreaterThan(0);

    // CloudFormation's response URL, played by a loopback server that records the PUT.
    const received: string[] = [];
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => {
        body += c.toString('utf8');
      });
      req.on('end', () => {
        received.push(`${req.method} ${body}`);
        res.end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    try {
      const event: CustomResourceEvent = {
        RequestType: 'Delete',
        ResponseURL: `http://127.0.0.1:${port}/response`,
        StackId: 'arn:aws:cloudformation:eu-west-1:111111111111:stack/crumbs-test-stateful/1',
        RequestId: 'req-1',
        LogicalResourceId: 'BusSweep4',
        PhysicalResourceId: `crumbs-rule-sweep:${bus}`,
        ResourceProperties: { EventBusName: bus, RulePrefix: topology.bus.ruleNamePrefix },
      };
      const response = await handleSweepEvent(event, (name) => new EventBridgeRuleRegistry(name, events));
      await sendCustomResourceResponse(event.ResponseURL, response);
      expect(response).toMatchObject({ Status: 'SUCCESS', Data: { Removed: String(crumbsRules.length) } });
      expect(received).toHaveLength(1);
      expect(JSON.parse((received[0] as string).slice('PUT '.length))).toMatchObject({
        Status: 'SUCCESS',
        PhysicalResourceId: `crumbs-rule-sweep:${bus}`,
        LogicalResourceId: 'BusSweep4',
        RequestId: 'req-1',
      });
    } finally {
      server.close();
    }
    expect((await rulesPerBus())[bus]).toEqual(['ops-audit']);
    // The other buses keep their rules.
    for (const other of POOL.slice(0, 3))
      expect(((await rulesPerBus())[other] ?? []).length).toBeGreaterThan(0);
  });

  it('answers FAILED with the reason when the bus cannot be swept, and does nothing on Create or Update', async () => {
    const base = {
      ResponseURL: 'http://127.0.0.1:1/unused',
      StackId: 'stack',
      RequestId: 'r',
      LogicalResourceId: 'BusSweep',
      ResourceProperties: { EventBusName: 'no-such-bus', RulePrefix: topology.bus.ruleNamePrefix },
    };
    // A registry whose listing is refused, as EventBridge refuses a role without events:ListRules.
    const refused = new EventBridgeRuleRegistry('no-such-bus', events);
    refused.list = async () => {
      throw new Error('AccessDeniedException: not allowed');
    };
    const failing = await handleSweepEvent({ ...base, RequestType: 'Delete' }, () => refused);
    expect(failing).toMatchObject({ Status: 'FAILED', Reason: expect.stringContaining('not allowed') });
    for (const type of ['Create', 'Update'] as const) {
      const untouched = await handleSweepEvent({ ...base, RequestType: type }, () => {
        throw new Error('no registry is needed');
      });
      expect(untouched).toMatchObject({
        Status: 'SUCCESS',
        PhysicalResourceId: 'crumbs-rule-sweep:no-such-bus',
      });
    }
  });
});
