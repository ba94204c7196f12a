import { describe, expect, it } from 'vitest';
import { validateDefinition } from '#shared/domain/definition-validation.ts';
import { ToolDefinitionSchema } from '#shared/domain/definitions.ts';
import { ValidationError } from '#shared/domain/errors.ts';
import { definitionWarnings, unknownFields, warningHeader } from '#shared/domain/unknown-fields.ts';

describe('unknown fields of a definition', () => {
  it("names an api agent's request_transform written beside yaml instead of inside it", () => {
    const context = {
      agent_id: 'weather',
      type: 'api',
      transport: { kind: 'api', api: { endpoint: 'https://api.example.com/w', method: 'POST' } },
      yaml: 'response_transform: data',
      request_transform: '{ "city": input.city }',
    };
    expect(validateDefinition('agent.def.v1', context).kind).toBe('agent');
    expect(definitionWarnings('agent.def.v1', context)).toEqual([
      { path: 'request_transform', message: expect.stringContaining('unknown field') },
    ]);
  });

  it('follows arrays, unions, pipes and nested objects, and leaves open objects alone', () => {
    expect(
      definitionWarnings('workflow.def.v1', {
        workflow_id: 'w',
        input_schema: { type: 'object', anything: true },
        steps: [
          { id: 'a', tool: 'echo', inptu: { x: 1 }, input: { free: 'form' } },
          { id: 'p', parallel: [{ id: 'q', tool: 'echo', retry: { max_attempts: 2, backof: 1 } }] },
        ],
        subscriptions: { selectors: [{ schema_name: 'user.message.v1', coment: 'x' }] },
      }).map((w) => w.path),
    ).toEqual(['steps[0].inptu', 'steps[1].parallel[0].retry.backof', 'subscriptions.selectors[0].coment']);
    expect(
      definitionWarnings('agent.definition.v1', {
        agent_name: 'old',
        triggers: [{ selector: { any_tags: ['x'] } }],
        llm_config: { modle: 'gpt' },
      }).map((w) => w.path),
    ).toEqual(['llm_config.modle']);
    expect(definitionWarnings('tool.def.v1', { name: 'echo', config: { any: 1 } })).toEqual([]);
    expect(definitionWarnings('note.text.v1', { whatever: 1 })).toEqual([]);
  });

  it('reports at most 50 and says them as a Warning header', () => {
    const many = Object.fromEntries(Array.from({ length: 80 }, (_, i) => [`x${i}`, i]));
    expect(unknownFields(ToolDefinitionSchema, { name: 'echo', ...many })).toHaveLength(50);
    expect(
      warningHeader([
        { path: 'a', message: 'm "q"' },
        { path: 'b', message: 'n' },
      ]),
    ).toBe('299 - "a: m \\"q\\"", 299 - "b: n"');
    expect(warningHeader([])).toBeUndefined();
  });
});

describe('a context builder that could never run', () => {
  const builder = (trigger: Record<string, unknown>) => ({
    consumer_id: 'ctx',
    update_triggers: [trigger],
    output: { schema_name: 'agent.context.v1' },
  });

  it('is invalid when an update trigger names a schema that is not a trigger, saying how to fix it', () => {
    let error: unknown;
    try {
      validateDefinition('context.config.v1', builder({ schema_name: 'note.text.v1' }));
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).issues).toEqual([
      {
        path: 'update_triggers[0]',
        message: expect.stringMatching(/"note\.text\.v1", which is not a trigger schema .*role: "trigger"/),
      },
    ]);
  });

  it('is valid with a trigger schema, or with role: "trigger" said', () => {
    expect(validateDefinition('context.config.v1', builder({ schema_name: 'user.message.v1' })).kind).toBe(
      'context-builder',
    );
    expect(
      validateDefinition('context.config.v1', builder({ schema_name: 'note.text.v1', role: 'trigger' })).kind,
    ).toBe('context-builder');
  });
});
