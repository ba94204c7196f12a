/**
 * `crumbs smoke` against the shared local stack, run in-process through `main` as a user runs it: every check
 * passes (the MCP check lists the smoke's own tool), a check that cannot pass fails with its line and exit 1, a refused
 * token writes nothing, a named workspace that is not empty is left alone, and the smoke's workspace lists
 * nothing afterwards, after a failure too.
 */
import { describe, expect, it } from 'vitest';
import { CrumbsClient } from '#cli/api-client.ts';
import { main } from '#cli/main.ts';
import type { SmokeReport } from '#cli/smoke.ts';
import { eventually, localStack, uniqueWorkspace, workspaceItems } from '../support/local.ts';
import { SCOPED_TOKEN } from '../support/shared-stack.ts';

async function crumbs(
  args: string[],
  env: NodeJS.ProcessEnv = {},
): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await main(['smoke', '--endpoint', localStack().api, ...args], {
    stdout: (s) => {
      out += s;
    },
    stderr: (s) => {
      err += s;
    },
    env,
  });
  return { code, out, err };
}

function client(workspace: string): CrumbsClient {
  const { api, token } = localStack();
  return new CrumbsClient({ endpoint: api, token, workspace });
}

async function definitions(workspace: string): Promise<string[]> {
  return (await client(workspace).definitions()).items.map((d) => d.id);
}

/** The workspace's live breadcrumbs in the table (tombstones and kept history are what a delete leaves). */
async function liveHeads(workspace: string): Promise<unknown[]> {
  return (await workspaceItems(workspace))
    .filter((item) => item.kind === 'breadcrumb')
    .map((item) => item.id);
}

describe('crumbs smoke', () => {
  it('passes every check against the local stack and leaves its workspace empty', async () => {
    const { code, out, err } = await crumbs(['--token', localStack().token, '--json']);
    expect(err).toBe('');
    const report = JSON.parse(out) as SmokeReport;
    expect(report.checks.map((c) => [c.name, c.status])).toEqual([
      ['api', 'passed'],
      ['tool round trip', 'passed'],
      ['agent answer', 'passed'],
      ['workflow with approval', 'passed'],
      ['mcp tools/list', 'passed'],
    ]);
    expect(report.checks[2]?.detail).toMatch(/^smoke-agent \(offline\/default\) answered: \S/);
    expect(report.checks[4]?.detail).toMatch(/^tools\/list answered \d+ tools \(smoke-echo among them\)/);
    expect(report.cleanup).toMatchObject({ status: 'passed' });
    expect(report.ok).toBe(true);
    expect(code).toBe(0);
    expect(report.workspace).toMatch(/^smoke-[0-9a-f]{10}$/);
    expect(await definitions(report.workspace)).toEqual([]);
    expect(await liveHeads(report.workspace)).toEqual([]);
  });

  it('fails with a line naming what it expected when a check cannot pass, and still cleans up', async () => {
    // A model on a provider that does not exist: the agent's definition is invalid, so no agent can answer.
    const { code, out, err } = await crumbs(['--token', localStack().token, '--model', 'nowhere/model']);
    expect(code).toBe(1);
    const workspace = /workspace (smoke-[0-9a-f]{10})/.exec(out)?.[1];
    expect(workspace).toBeDefined();
    const lines = out.trimEnd().split('\n');
    expect(lines.find((l) => l.startsWith('✗'))).toMatch(
      /^✗ agent answer +\d+\.\d s {2}expected definition agent-smoke-agent \(agent-smoke-agent-smoke-[0-9a-z]+-[0-9a-f]{6}\) v1 active; got invalid \(model: "nowhere\/model" names the provider "nowhere".*\(waited \d+\.\d s\)$/,
    );
    expect(lines.filter((l) => l.startsWith('✗'))).toHaveLength(1);
    expect(lines.find((l) => l.includes('tool round trip'))).toMatch(/^✓ /);
    expect(lines.find((l) => l.includes('workflow with approval'))).toMatch(/^✓ /);
    expect(lines.find((l) => l.includes('cleanup'))).toMatch(/^✓ cleanup .*holds nothing$/);
    expect(err).toMatch(/^crumbs smoke: 1 failed \(agent answer\)/);
    expect(await definitions(String(workspace))).toEqual([]);
    expect(await liveHeads(String(workspace))).toEqual([]);
  });

  it('writes nothing and says why when the token may not use the workspace', async () => {
    const workspace = uniqueWorkspace('smoke');
    const { code, out, err } = await crumbs(['--token', SCOPED_TOKEN, '--workspace', workspace]);
    expect(code).toBe(1);
    expect(out).toMatch(/^✗ api .*expected the token to be allowed workspace \S+; got 403 Forbidden/m);
    expect(out).toMatch(/^- tool round trip .*not run: the api check failed$/m);
    expect(out).toMatch(/^- cleanup .*nothing was written$/m);
    expect(err).toMatch(/1 failed \(api\)/);
    expect(await workspaceItems(workspace)).toEqual([]);
  });

  it('runs again and again in a named workspace it keeps empty', async () => {
    const workspace = uniqueWorkspace('smoke-kept');
    for (const run of [1, 2]) {
      const { code, out, err } = await crumbs(['--token', localStack().token, '--json'], {
        CRUMBS_WORKSPACE: workspace,
      });
      expect(err, `run ${run}`).toBe('');
      expect((JSON.parse(out) as SmokeReport).workspace).toBe(workspace);
      expect(code, `run ${run}`).toBe(0);
      expect(await liveHeads(workspace)).toEqual([]);
    }
  });

  it('leaves a named workspace that is not empty alone', async () => {
    const workspace = uniqueWorkspace('smoke-named');
    const c = client(workspace);
    const kept = await c.create({ schema_name: 'user.message.v1', context: { text: 'keep me' } });
    // The smoke sees a workspace through its change stream, which hands out a change once it has settled.
    await eventually(async () =>
      (await c.changes({ backlog: 10, wait: 0 })).events.length > 0 ? true : undefined,
    );
    const { code, out } = await crumbs(['--token', localStack().token], { CRUMBS_WORKSPACE: workspace });
    expect(code).toBe(1);
    expect(out).toMatch(
      new RegExp(`^✗ api .*expected workspace ${workspace} to be empty; got it holds ${kept.id} `, 'm'),
    );
    expect((await c.getFull(kept.id)).version).toBe(1);
    expect(await definitions(workspace)).toEqual([]);
    expect(await liveHeads(workspace)).toEqual([kept.id]);
  });
});
