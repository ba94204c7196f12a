/**
 * The routing CLI against the shared local stack: `crumbs apply`, `crumbs rules`, `crumbs rules sync` and
 * `crumbs explain`, run in-process through `main` exactly as a user would run them.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  DeleteRuleCommand,
  EventBridgeClient,
  ListRulesCommand,
  PutRuleCommand,
  RemoveTargetsCommand,
} from '@aws-sdk/client-eventbridge';
import { describe, expect, it } from 'vitest';
import { CrumbsClient } from '#cli/api-client.ts';
import { main } from '#cli/main.ts';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '#local/aws-env.ts';
import { topology } from '#shared/topology.ts';
import { localStack, uniqueWorkspace } from '../support/local.ts';

async function crumbs(
  workspace: string,
  ...args: string[]
): Promise<{ code: number; out: string; err: string }> {
  const { api, token } = localStack();
  let out = '';
  let err = '';
  const code = await main([...args, '--endpoint', api, '--token', token, '--workspace', workspace], {
    stdout: (s) => {
      out += s;
    },
    stderr: (s) => {
      err += s;
    },
    env: {},
  });
  return { code, out, err };
}

function definitionsDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'crumbs-defs-'));
  writeFileSync(
    join(dir, 'echo.yaml'),
    ['schema_name: tool.def.v1', 'context:', '  name: echo', '  implementation: echo', ''].join('\n'),
  );
  writeFileSync(
    join(dir, 'helper.json'),
    JSON.stringify({
      schema_name: 'agent.def.v1',
      context: {
        agent_id: 'helper',
        system_prompt: 'Help.',
        model: 'offline/crumbs',
        subscriptions: {
          selectors: [{ schema_name: 'user.message.v1', all_tags: ['to:helper', 'lang.en'] }],
        },
      },
    }),
  );
  return dir;
}

describe('crumbs apply, rules, rules sync, explain', () => {
  it('applies a folder of JSON and YAML definitions and prints each one active; re-applying writes nothing new', async () => {
    const ws = uniqueWorkspace('cli');
    const dir = definitionsDir();
    const first = await crumbs(ws, 'apply', '-f', dir);
    expect(first.err).toBe('');
    expect(first.code).toBe(0);
    expect(first.out).toMatch(/tool-echo\s+tool\.def\.v1\s+1\s+active/);
    expect(first.out).toMatch(/agent-helper\s+agent\.def\.v1\s+1\s+active/);
    const again = await crumbs(ws, 'apply', '-f', dir, '--json');
    expect(
      (JSON.parse(again.out) as { version: number; state: string }[]).map((r) => [r.version, r.state]),
    ).toEqual([
      [1, 'active'],
      [1, 'active'],
    ]);
  });

  it('refuses to write anything when one definition is invalid, naming the file and field', async () => {
    const ws = uniqueWorkspace('cli');
    const dir = definitionsDir();
    writeFileSync(
      join(dir, 'broken.json'),
      JSON.stringify({
        schema_name: 'tool.def.v1',
        context: {
          name: 'broken',
          subscriptions: {
            selectors: [
              {
                schema_name: 'x.v1',
                role: 'trigger',
                context_match: [{ path: '$.a', op: 'near', value: 1 }],
              },
            ],
          },
        },
      }),
    );
    const res = await crumbs(ws, 'apply', '-f', dir);
    expect(res.code).toBe(1);
    expect(res.err).toContain('broken.json');
    expect(res.err).toContain('context_match[0].op');
    const client = new CrumbsClient({ endpoint: localStack().api, token: localStack().token, workspace: ws });
    expect((await client.list({ schema_name: 'tool.def.v1' })).items).toEqual([]);
  });

  it('lists definitions with state, rule and pattern', async () => {
    const ws = uniqueWorkspace('cli');
    await crumbs(ws, 'apply', '-f', definitionsDir());
    const res = await crumbs(ws, 'rules', '--json');
    const rows = JSON.parse(res.out) as { id: string; state: string; rule_name: string; pattern: unknown }[];
    expect(rows.map((r) => [r.id, r.state]).sort()).toEqual([
      ['agent-helper', 'active'],
      ['tool-echo', 'active'],
    ]);
    expect(rows.every((r) => r.rule_name.startsWith(topology.bus.ruleNamePrefix) && r.pattern)).toBe(true);
  });

  it('rules sync recreates a rule deleted behind its back and deletes an orphan rule of the workspace', async () => {
    const ws = uniqueWorkspace('cli');
    await crumbs(ws, 'apply', '-f', definitionsDir());
    const rows = JSON.parse((await crumbs(ws, 'rules', '--json')).out) as { id: string; rule_name: string }[];
    const echoRule = rows.find((r) => r.id === 'tool-echo')!.rule_name;
    const events = new EventBridgeClient({
      endpoint: localStack().eventbridge,
      region: LOCAL_REGION,
      credentials: LOCAL_CREDENTIALS,
    });
    // Drift: the rule is removed by hand.
    await events.send(
      new RemoveTargetsCommand({ Rule: echoRule, EventBusName: topology.bus.name, Ids: ['executor'] }),
    );
    await events.send(new DeleteRuleCommand({ Name: echoRule, EventBusName: topology.bus.name }));
    // Orphan: a rule under the prefix for a definition of this workspace that does not exist.
    const ghost = `${topology.bus.ruleNamePrefix}${ws}-ghost`;
    await events.send(
      new PutRuleCommand({
        Name: ghost,
        EventBusName: topology.bus.name,
        EventPattern: JSON.stringify({ source: ['crumbs'], detail: { workspace: [ws] } }),
        Description: JSON.stringify({ workspace: ws, definition_id: 'ghost' }),
      }),
    );

    const res = await crumbs(ws, 'rules', 'sync', '--json');
    expect(res.code).toBe(0);
    expect(JSON.parse(res.out)).toMatchObject({
      definitions: 2,
      created: 1,
      unchanged: 1,
      deleted_orphans: 1,
    });
    const out = await events.send(
      new ListRulesCommand({ EventBusName: topology.bus.name, NamePrefix: topology.bus.ruleNamePrefix }),
    );
    const names = (out.Rules ?? []).map((r) => r.Name ?? '');
    expect(names).toContain(echoRule);
    expect(names).not.toContain(ghost);
    events.destroy();
  });

  it('explains which selector matches, and the first field that fails', async () => {
    const ws = uniqueWorkspace('cli');
    await crumbs(ws, 'apply', '-f', definitionsDir());
    const client = new CrumbsClient({ endpoint: localStack().api, token: localStack().token, workspace: ws });
    const hit = await client.create({
      schema_name: 'user.message.v1',
      tags: ['to:helper', 'lang.en'],
      context: { message: 'hi' },
    });
    const miss = await client.create({
      schema_name: 'user.message.v1',
      tags: ['to:helper'],
      context: { message: 'hi' },
    });

    const yes = await crumbs(ws, 'explain', 'agent-helper', hit.id);
    expect(yes.code).toBe(0);
    expect(yes.out).toContain('selector 0 matches');
    expect(yes.out).toMatch(
      new RegExp(`agent-helper: rule crumbs-def-\\S+ on event bus ${topology.bus.name}\n`),
    );
    const no = await crumbs(ws, 'explain', 'agent-helper', miss.id);
    expect(no.code).toBe(1);
    expect(no.out).toContain('fails at all_tags: missing lang.en');
  });
});
