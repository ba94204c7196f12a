/**
 * The MCP catalog of a workspace: active definitions only, under names MCP accepts; a definition taking a name
 * crumbs keeps (`ask_*`, `crumbs_*`) or one MCP would refuse is left out, never renamed; annotations pass on as
 * MCP's hints; a non-object schema is not offered as one.
 */
import { describe, expect, it } from 'vitest';
import type { DefinitionSummary } from '#shared/core/api/activity-routes.ts';
import { BUILTIN_TOOLS, type CatalogDefinition, catalogOf } from '#shared/core/mcp/catalog.ts';

function def(
  id: string,
  schema_name: string,
  context: Record<string, unknown>,
  state = 'active',
): CatalogDefinition {
  const summary = { id, schema_name, title: id, version: 1, state } as DefinitionSummary;
  return { summary, context };
}

describe('the MCP catalog', () => {
  it('offers active tools under their names and agents as ask_<id>, then the breadcrumb tools', () => {
    const tools = catalogOf([
      def('t1', 'tool.def.v1', {
        name: 'lookup',
        input_schema: { type: 'object', properties: { q: { type: 'string' } } },
        output_schema: { type: 'array' },
        annotations: { read_only: true, destructive: false },
      }),
      def('a1', 'agent.def.v1', { agent_id: 'helper', description: 'Answers questions.' }),
      def('t2', 'tool.def.v1', { name: 'draft' }, 'pending'),
      def('t3', 'tool.def.v1', { name: 'broken' }, 'invalid'),
      def('w1', 'workflow.def.v1', { workflow_id: 'flow' }),
    ]);
    expect(tools.map((t) => t.name)).toEqual(['ask_helper', 'lookup', ...BUILTIN_TOOLS.map((t) => t.name)]);
    const lookup = tools.find((t) => t.name === 'lookup');
    expect(lookup).toMatchObject({
      inputSchema: { type: 'object', properties: { q: { type: 'string' } } },
      annotations: { readOnlyHint: true, destructiveHint: false },
      target: { kind: 'tool', tool: 'lookup', definition: 't1' },
    });
    expect(lookup?.outputSchema).toBeUndefined();
    expect(tools.find((t) => t.name === 'ask_helper')?.description).toContain('Answers questions.');
  });

  it('leaves out names crumbs keeps or MCP refuses, and the second of two tools with one name', () => {
    const tools = catalogOf([
      def('t1', 'tool.def.v1', { name: 'crumbs_get' }),
      def('t2', 'tool.def.v1', { name: 'ask_x' }),
      def('t3', 'tool.def.v1', { name: 'ns:tool' }),
      def('t4', 'tool.def.v1', { name: 'dup' }),
      def('t5', 'tool.def.v1', { name: 'dup' }),
    ]);
    expect(tools.filter((t) => t.target.kind === 'tool').map((t) => [t.name, t.target])).toEqual([
      ['dup', { kind: 'tool', tool: 'dup', definition: 't4' }],
    ]);
    expect(tools.filter((t) => t.name === 'crumbs_get')).toHaveLength(1);
  });
});
