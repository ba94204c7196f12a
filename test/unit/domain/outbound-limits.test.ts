import { describe, expect, it } from 'vitest';
import { definitionLimits } from '#shared/config.ts';
import { validateDefinition } from '#shared/domain/definition-validation.ts';
import { ValidationError } from '#shared/domain/errors.ts';

const httpTool = (config: Record<string, unknown>) => ({
  name: 'fetcher',
  implementation: 'http',
  config: { allowed_hosts: ['api.example.com'], ...config },
  subscriptions: { selectors: [{ schema_name: 'tool.request.v1' }] },
});

function issues(schema: string, context: unknown, limits = { maxResponseBytes: 5 * 1024 * 1024 }) {
  try {
    validateDefinition(schema, context, limits);
    return [];
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    return error.issues;
  }
}

describe('outbound limits of a definition, checked when it is written', () => {
  it("refuses an http tool's max_response_bytes above the operator's ceiling, naming the field and the ceiling", () => {
    expect(issues('tool.def.v1', httpTool({ max_response_bytes: 1e12 }))).toEqual([
      {
        path: 'config.max_response_bytes',
        message:
          "at most 5242880 bytes (CRUMBS_MAX_RESPONSE_BYTES, the operator's ceiling), got 1000000000000",
      },
    ]);
    expect(issues('tool.def.v1', httpTool({ max_response_bytes: 5 * 1024 * 1024 }))).toEqual([]);
    expect(
      issues('tool.def.v1', httpTool({ max_response_bytes: 2048 }), { maxResponseBytes: 1024 }),
    ).toHaveLength(1);
    expect(issues('tool.def.v1', httpTool({ max_response_bytes: -1 }))[0]?.path).toBe(
      'config.max_response_bytes',
    );
  });

  it('refuses more than 5 redirects', () => {
    expect(issues('tool.def.v1', httpTool({ max_redirects: 6 }))).toEqual([
      { path: 'config.max_redirects', message: 'expected a whole number from 0 to 5, got 6' },
    ]);
    expect(issues('tool.def.v1', httpTool({ max_redirects: 5 }))).toEqual([]);
  });

  it("refuses an api agent's max_response_bytes above a lowered ceiling", () => {
    const agent = {
      agent_id: 'weather',
      type: 'api',
      transport: { kind: 'api', api: { endpoint: 'https://api.example.com/', max_response_bytes: 4096 } },
      subscriptions: { selectors: [{ schema_name: 'agent.request.v1' }] },
    };
    expect(issues('agent.def.v1', agent, { maxResponseBytes: 2048 })).toEqual([
      {
        path: 'transport.api.max_response_bytes',
        message: "at most 2048 bytes (CRUMBS_MAX_RESPONSE_BYTES, the operator's ceiling), got 4096",
      },
    ]);
    expect(issues('agent.def.v1', agent)).toEqual([]);
  });

  it('reads the ceiling from CRUMBS_MAX_RESPONSE_BYTES, 5 MiB by default', () => {
    expect(definitionLimits({})).toEqual({ maxResponseBytes: 5 * 1024 * 1024 });
    expect(definitionLimits({ CRUMBS_MAX_RESPONSE_BYTES: '1048576' })).toEqual({ maxResponseBytes: 1048576 });
    expect(() => definitionLimits({ CRUMBS_MAX_RESPONSE_BYTES: 'lots' })).toThrow(ValidationError);
  });
});
