/**
 * The smoke runner's bounds and lines without a stack: a wait that is never satisfied ends at the timeout and
 * says what it expected, what it last saw and how long it waited; an API error is a failed line and the next
 * check still runs; a check that does not apply is skipped; nothing is cleaned up when nothing was written. The
 * MCP check lists the tools of a real MCP server (the SDK's, on loopback) where the API's MCP route would be, and
 * fails where that route answers 404 (the route always exists, so a 404 means something is wrong).
 */
import { describe, expect, it } from 'vitest';
import { ApiProblemError, CrumbsClient } from '#cli/api-client.ts';
import { CheckSkipped, runSmoke, SMOKE_CHECKS, type SmokeCheck } from '#cli/smoke.ts';
import { startMcpServer } from '../../support/mcp-server.ts';

const client = new CrumbsClient({ endpoint: 'http://127.0.0.1:9', workspace: 'smoke-unit' });

function smoke(checks: SmokeCheck[], timeoutMs = 400) {
  const lines: string[] = [];
  return runSmoke(
    { client, token: undefined, timeoutMs, namedWorkspace: false, onResult: (r) => lines.push(r.name) },
    checks,
  ).then((report) => ({ report, lines }));
}

describe('the smoke runner', () => {
  it('ends a wait at the timeout with what it expected, what it saw and how long it waited', async () => {
    let probes = 0;
    const never: SmokeCheck = {
      name: 'never answered',
      run: (ctx) =>
        ctx.waitFor<string>('an answer tagged request:x', async () => {
          probes++;
          return { seen: `no answer after ${probes} looks` };
        }),
    };
    const { report } = await smoke([never]);
    const [result] = report.checks;
    expect(result?.status).toBe('failed');
    expect(result?.detail).toMatch(
      /^expected an answer tagged request:x; got no answer after \d+ looks \(waited \d+\.\d s\)$/,
    );
    expect(report.ok).toBe(false);
  });

  it('reports an API error as a failed line and runs the next check; a skipped check is no failure', async () => {
    const refused: SmokeCheck = {
      name: 'refused',
      run: async () => {
        throw new ApiProblemError(
          { type: 'about:blank', title: 'Forbidden', status: 403, detail: 'you may not use workspace w' },
          { method: 'POST', url: 'http://127.0.0.1:9/v1/workspaces/w/breadcrumbs' },
        );
      },
    };
    const skipped: SmokeCheck = {
      name: 'not here',
      run: async () => {
        throw new CheckSkipped('skipped: the endpoint has no such thing');
      },
    };
    const fine: SmokeCheck = { name: 'fine', run: async () => 'all good' };
    const { report, lines } = await smoke([refused, skipped, fine]);
    expect(report.checks.map((c) => [c.name, c.status, c.detail.replace(/\(after .*\)$/, '')])).toEqual([
      [
        'refused',
        'failed',
        "expected the API to answer the check's request; got POST /v1/workspaces/w/breadcrumbs answered 403 Forbidden: you may not use workspace w ",
      ],
      ['not here', 'skipped', 'skipped: the endpoint has no such thing'],
      ['fine', 'passed', 'all good'],
    ]);
    // Nothing was written (the api check never claimed the workspace), so nothing is deleted.
    expect(report.cleanup).toMatchObject({ status: 'skipped', detail: 'nothing was written' });
    expect(lines).toEqual(['refused', 'not here', 'fine', 'cleanup']);
    expect(report.ok).toBe(false);
  });

  it('is ok when no check failed', async () => {
    const { report } = await smoke([{ name: 'fine', run: async () => 'ok' }]);
    expect(report.ok).toBe(true);
  });
});

describe('the MCP check', () => {
  const mcpCheck = SMOKE_CHECKS.find((c) => c.name === 'mcp tools/list') as SmokeCheck;

  async function againstServer(path: string) {
    const server = await startMcpServer('streamable');
    const base = new URL(server.url);
    try {
      // The API's MCP route of the workspace, served here by the test server at `path`.
      const report = await runSmoke(
        {
          client,
          token: 'smoke-token',
          timeoutMs: 10_000,
          namedWorkspace: false,
          fetch: (input, init) =>
            fetch(
              String(input).replace(
                'http://127.0.0.1:9/v1/workspaces/smoke-unit/mcp',
                `${base.origin}${path}`,
              ),
              init,
            ),
        },
        [mcpCheck],
      );
      return { result: report.checks[0], requests: server.requests };
    } finally {
      await server.close();
    }
  }

  it('lists the tools where the endpoint serves MCP', async () => {
    const { result, requests } = await againstServer('/mcp');
    expect(result).toMatchObject({ status: 'passed', detail: 'tools/list answered 5 tools' });
    expect(requests.filter((r) => r === 'POST /mcp').length).toBeGreaterThan(1);
  });

  it('fails where the endpoint answers 404, saying what it expected and what came', async () => {
    const { result } = await againstServer('/nothing-here');
    expect(result).toMatchObject({ status: 'failed' });
    expect(result?.detail).toMatch(
      /^expected POST \/v1\/workspaces\/smoke-unit\/mcp to answer an MCP initialize; got HTTP 404 \(no MCP route/,
    );
  });
});
