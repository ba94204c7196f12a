/**
 * Team-b names credentials that are not its own in its definitions' `secret_ref`s: team-a's secret (by name, by a
 * path into team-a's namespace, by ARN), and variables of the stack's own process environment (OPENAI_API_KEY, PATH,
 * the fake model server's URL the stack was started with). Each definition is `invalid` at the field that names
 * the secret, so it has no rule and never runs; team-b's own secret works, and team-a's data is unchanged. The
 * call-time refusal of the same names is in test/unit/adapters/secrets/secret-source.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { type ApiAnswer, eventually, teamA, teamB, workspaceItems } from './support.ts';

type Status = { state: string; rule_name: string | null; errors: { path: string; message: string }[] };

async function statusOf(id: string, version: number): Promise<Status> {
  const b = teamB();
  return eventually(async () => {
    const page = await b.call(
      'GET',
      `/breadcrumbs?schema_name=definition.status.v1&tag=definition:${id}&view=full`,
    );
    const items = (page.body.items ?? []) as { context: Status & { definition_version: number } }[];
    const s = items[0]?.context;
    return s && s.definition_version >= version ? s : undefined;
  }, `the status of ${id}`);
}

async function put(id: string, schema_name: string, context: Record<string, unknown>): Promise<number> {
  const res: ApiAnswer = await teamB().call('PUT', `/breadcrumbs/${id}`, { schema_name, title: id, context });
  expect(res.status, JSON.stringify(res.body)).toBeLessThan(300);
  return Number(res.body.version);
}

/** Every item team-a had is still there, unchanged (other files may add their own meanwhile). */
async function expectUnchanged(before: Record<string, unknown>[]): Promise<void> {
  const after = await workspaceItems(teamA().workspace);
  for (const item of before) expect(after).toContainEqual(item);
}

const apiAgent = (id: string, api: Record<string, unknown>) => ({
  agent_id: id,
  type: 'api',
  transport: { kind: 'api', api: { endpoint: 'https://partner.example/v1', ...api } },
});

const bearer = (secret_ref: string) => ({ authentication: { type: 'bearer', secret_ref } });

describe("team-b's secret_ref cannot name a credential that is not team-b's", () => {
  it("makes an api agent naming team-a's secret, or a variable of the stack's environment, invalid", async () => {
    const before = await workspaceItems(teamA().workspace);
    const cases = [
      // team-a's secret, by its plain name: team-b has no secret of that name.
      ['steal-a', 'partner-token'],
      // The stack's process environment is no namespace of anyone's.
      ['steal-openai', 'OPENAI_API_KEY'],
      ['steal-path', 'PATH'],
      ['steal-base-url', 'OPENAI_COMPATIBLE_BASE_URL'],
    ] as const;
    for (const [id, ref] of cases) {
      const version = await put(`agent-${id}`, 'agent.def.v1', apiAgent(id, bearer(ref)));
      const status = await statusOf(`agent-${id}`, version);
      expect(status, ref).toMatchObject({ state: 'invalid', rule_name: null });
      expect(status.errors, ref).toEqual([
        {
          path: 'transport.api.authentication.secret_ref',
          message: expect.stringContaining(`workspace "team-b" has no secret "${ref}"`),
        },
      ]);
    }
    await expectUnchanged(before);
  });

  it("refuses a path into team-a's namespace, an ARN or a Secrets Manager name, at the field's path", async () => {
    const before = await workspaceItems(teamA().workspace);
    const refs = [
      '../team-a/partner-token',
      'team-a/partner-token',
      '../../llm/openai',
      'crumbs/agents/team-a/partner-token',
      'arn:aws:secretsmanager:eu-west-1:123456789012:secret:crumbs/agents/team-a/partner-token-AbCdEf',
    ];
    for (const [i, ref] of refs.entries()) {
      const version = await put(`agent-path-${i}`, 'agent.def.v1', apiAgent(`path-${i}`, bearer(ref)));
      const status = await statusOf(`agent-path-${i}`, version);
      expect(status, ref).toMatchObject({ state: 'invalid', rule_name: null });
      expect(status.errors, ref).toEqual([
        {
          path: 'transport.api.authentication.secret_ref',
          message: expect.stringMatching(ref.startsWith('arn:') ? /is an ARN/ : /is a path/),
        },
      ]);
    }
    await expectUnchanged(before);
  });

  it("refuses team-a's secret in a header, an external agent's authentication and an MCP tool", async () => {
    const before = await workspaceItems(teamA().workspace);
    const header = await put(
      'agent-header-steal',
      'agent.def.v1',
      apiAgent('header-steal', { headers: { 'X-Api-Key': { secret_ref: 'partner-token' } } }),
    );
    expect((await statusOf('agent-header-steal', header)).errors).toEqual([
      {
        path: 'transport.api.headers.X-Api-Key.secret_ref',
        message: expect.stringContaining('has no secret'),
      },
    ]);
    const external = await put('agent-a2a-steal', 'agent.def.v1', {
      agent_id: 'a2a-steal',
      type: 'external',
      transport: {
        kind: 'external',
        external: {
          endpoint: 'https://partner.example',
          authentication: { type: 'header', secret_ref: 'partner-token' },
        },
      },
    });
    expect((await statusOf('agent-a2a-steal', external)).errors).toEqual([
      {
        path: 'transport.external.authentication.secret_ref',
        message: expect.stringContaining('has no secret'),
      },
    ]);
    const tool = await put('tool-mcp-steal', 'tool.def.v1', {
      name: 'mcp-steal',
      implementation: 'mcp',
      mcp: {
        url: 'https://mcp.example/mcp',
        authentication: { type: 'bearer', secret_ref: '../team-a/partner-token' },
      },
    });
    expect((await statusOf('tool-mcp-steal', tool)).errors).toEqual([
      { path: 'mcp.authentication.secret_ref', message: expect.stringMatching(/is a path/) },
    ]);
    await expectUnchanged(before);
  });

  it('lets team-b use its own secret (the boundary, not a refusal of every secret)', async () => {
    const version = await put(
      'agent-own-secret',
      'agent.def.v1',
      apiAgent('own-secret', bearer('own-token')),
    );
    expect(await statusOf('agent-own-secret', version)).toMatchObject({ state: 'active', errors: [] });
  });
});
