import { describe, expect, it } from 'vitest';
import { evaluateDefinition } from '#shared/core/rule-manager.ts';
import type { Breadcrumb } from '#shared/domain/breadcrumb.ts';

function definitionRecord(schemaName: string, context: Record<string, unknown>): Breadcrumb {
  return {
    id: 'def-1',
    workspace: 'ws',
    schema_name: schemaName,
    title: 'definition',
    tags: [],
    context,
    version: 3,
    checksum: 'c',
    created_at: '2025-01-01T00:00:00.000Z',
    updated_at: '2025-01-01T00:00:00.000Z',
    created_by: 'user:alice',
    updated_by: 'user:alice',
  };
}

const workflow = (input: Record<string, unknown>, when?: string) => ({
  workflow_id: 'fetcher',
  subscriptions: { selectors: [{ schema_name: 'user.message.v1' }] },
  steps: [
    { id: 'fetch', tool: 'http', input },
    { id: 'store', tool: 'breadcrumb.create', ...(when !== undefined ? { when } : {}) },
  ],
  output: { schema_name: 'fetcher.result.v1' },
});

describe('evaluateDefinition', () => {
  it('marks a workflow invalid, with no rule, when an expression is not JSONata', () => {
    const status = evaluateDefinition(
      definitionRecord('workflow.def.v1', workflow({ url: '=trigger.context.(' }, 'steps.fetch.ok and')),
      'bus',
      'crumbs-def-',
      'offline',
    );
    expect(status).toMatchObject({ state: 'invalid', rule_name: null, pattern: null, definition_version: 3 });
    expect(status.errors).toEqual([
      { path: 'steps[0].input.url', message: expect.stringMatching(/^not a valid JSONata expression: \S/) },
      { path: 'steps[1].when', message: expect.stringMatching(/^not a valid JSONata expression: \S/) },
    ]);
  });

  it('compiles the rule of a workflow whose expressions are JSONata', () => {
    const status = evaluateDefinition(
      definitionRecord('workflow.def.v1', workflow({ url: '=trigger.context.url' }, '=steps.fetch.ok')),
      'bus',
      'crumbs-def-',
      'offline',
    );
    expect(status).toMatchObject({ state: 'active', errors: [], kind: 'workflow' });
    expect(status.rule_name).toMatch(/^crumbs-def-/);
  });
});
