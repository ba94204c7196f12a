import { describe, expect, it } from 'vitest';
import { validateDefinition } from '#shared/domain/definition-validation.ts';
import { ValidationError } from '#shared/domain/errors.ts';
import { secretNameProblem, secretRefsOf } from '#shared/domain/secret-refs.ts';

function issuesOf(schema: string, context: unknown) {
  try {
    validateDefinition(schema, context);
  } catch (error) {
    if (error instanceof ValidationError) return error.issues;
    throw error;
  }
  return [];
}

const apiAgent = (api: Record<string, unknown>) => ({
  agent_id: 'weather',
  type: 'api',
  transport: { kind: 'api', api: { endpoint: 'https://api.example/v1', ...api } },
});

describe('secret_ref', () => {
  it('is a plain word: a path, "..", an ARN or a blank is refused with what was expected', () => {
    expect(secretNameProblem('partner-token')).toBeUndefined();
    expect(secretNameProblem('OPENAI_API_KEY')).toBeUndefined();
    expect(secretNameProblem('../team-a/x')).toMatch(/is a path/);
    expect(secretNameProblem('team-a/x')).toMatch(/is a path/);
    expect(secretNameProblem('x..y')).toMatch(/is a path/);
    expect(secretNameProblem('arn:aws:secretsmanager:eu-west-1:1:secret:crumbs/agents/team-a/x')).toMatch(
      /is an ARN/,
    );
    expect(secretNameProblem('')).toMatch(/1-128 letters, digits/);
    expect(secretNameProblem('a'.repeat(129))).toMatch(/1-128 letters, digits/);
  });

  it('makes the definition invalid at the path of each field that names one outside the workspace', () => {
    expect(
      issuesOf(
        'agent.def.v1',
        apiAgent({
          authentication: { type: 'bearer', secret_ref: '../team-a/partner-token' },
          headers: { 'X-Api-Key': { secret_ref: 'arn:aws:secretsmanager:eu-west-1:1:secret:x' } },
        }),
      ),
    ).toEqual([
      { path: 'transport.api.headers.X-Api-Key.secret_ref', message: expect.stringMatching(/is an ARN/) },
      { path: 'transport.api.authentication.secret_ref', message: expect.stringMatching(/is a path/) },
    ]);
    expect(
      issuesOf('tool.def.v1', {
        name: 'gh',
        implementation: 'mcp',
        mcp: { url: 'https://mcp.example', authentication: { type: 'bearer', secret_ref: 'team-a/gh' } },
      }),
    ).toEqual([{ path: 'mcp.authentication.secret_ref', message: expect.stringMatching(/is a path/) }]);
  });

  it('lists every secret a definition names, with its field path', () => {
    const agent = validateDefinition(
      'agent.def.v1',
      apiAgent({
        authentication: { type: 'bearer', secret_ref: 'partner-token' },
        headers: { 'X-Trace': 'plain', 'X-Api-Key': { secret_ref: 'api-key' } },
      }),
    );
    expect(secretRefsOf(agent)).toEqual([
      { path: 'transport.api.headers.X-Api-Key.secret_ref', name: 'api-key' },
      { path: 'transport.api.authentication.secret_ref', name: 'partner-token' },
    ]);
    const external = validateDefinition('agent.def.v1', {
      agent_id: 'partner',
      type: 'external',
      transport: {
        kind: 'external',
        external: { endpoint: 'https://p.example', authentication: { type: 'header', secret_ref: 'p' } },
      },
    });
    expect(secretRefsOf(external)).toEqual([
      { path: 'transport.external.authentication.secret_ref', name: 'p' },
    ]);
    const tool = validateDefinition('tool.def.v1', {
      name: 'gh',
      implementation: 'mcp',
      mcp: { url: 'https://mcp.example', headers: { Authorization: { secret_ref: 'gh' } } },
    });
    expect(secretRefsOf(tool)).toEqual([{ path: 'mcp.headers.Authorization.secret_ref', name: 'gh' }]);
    expect(secretRefsOf(validateDefinition('tool.def.v1', { name: 'echo' }))).toEqual([]);
  });
});

describe('an http tool with credentials by secret_ref', () => {
  const http = (config: Record<string, unknown>) => ({
    name: 'partner',
    implementation: 'http',
    config: { allowed_hosts: ['api.partner.example'], ...config },
  });

  it('lists the secrets its config.headers and config.authentication name, beside literal headers', () => {
    const tool = validateDefinition(
      'tool.def.v1',
      http({
        headers: { 'X-Trace': 'crumbs', 'X-Api-Key': { secret_ref: 'partner-key' } },
        authentication: { type: 'bearer', secret_ref: 'partner-token' },
      }),
    );
    expect(secretRefsOf(tool)).toEqual([
      { path: 'config.headers.X-Api-Key.secret_ref', name: 'partner-key' },
      { path: 'config.authentication.secret_ref', name: 'partner-token' },
    ]);
    expect(secretRefsOf(validateDefinition('tool.def.v1', http({})))).toEqual([]);
  });

  it('makes the definition invalid at the field: a bad ref, a literal credential, a missing ref, "*" hosts', () => {
    expect(
      issuesOf('tool.def.v1', http({ headers: { 'X-Api-Key': { secret_ref: '../team-a/partner-key' } } })),
    ).toEqual([{ path: 'config.headers.X-Api-Key.secret_ref', message: expect.stringMatching(/is a path/) }]);
    expect(issuesOf('tool.def.v1', http({ headers: { Authorization: 'Bearer abc' } }))).toEqual([
      { path: 'config.headers.Authorization', message: expect.stringMatching(/a credential header/) },
    ]);
    expect(issuesOf('tool.def.v1', http({ headers: { 'X-Trace': 7 } }))).toEqual([
      { path: 'config.headers.X-Trace', message: 'expected a string or { secret_ref }' },
    ]);
    expect(issuesOf('tool.def.v1', http({ authentication: { type: 'bearer' } }))).toEqual([
      {
        path: 'config.authentication.secret_ref',
        message: 'name the secret that holds the bearer credential',
      },
    ]);
    expect(
      issuesOf(
        'tool.def.v1',
        http({ allowed_hosts: ['*'], authentication: { type: 'bearer', secret_ref: 'partner-token' } }),
      ),
    ).toEqual([{ path: 'config.allowed_hosts', message: expect.stringMatching(/must list the hosts/) }]);
    // Literal, non-credential headers may go anywhere the tool may.
    expect(issuesOf('tool.def.v1', http({ allowed_hosts: ['*'], headers: { 'X-Trace': 'crumbs' } }))).toEqual(
      [],
    );
  });
});
