import { describe, expect, it } from 'vitest';
import { ValidationError } from '#shared/domain/errors.ts';
import { resolveModel } from '#shared/domain/llm-model.ts';

describe('resolveModel', () => {
  it('reads <provider>/<model id>, keeping slashes inside the model id', () => {
    expect(resolveModel('bedrock/amazon.nova-lite-v1:0', 'offline')).toEqual({
      provider: 'bedrock',
      model: 'amazon.nova-lite-v1:0',
    });
    expect(resolveModel('openrouter/openai/gpt-4o-mini', undefined)).toEqual({
      provider: 'openrouter',
      model: 'openai/gpt-4o-mini',
    });
  });

  it("runs a bare model id, or none, on the stack's default provider", () => {
    expect(resolveModel('gpt-4', 'openrouter')).toEqual({ provider: 'openrouter', model: 'gpt-4' });
    expect(resolveModel(undefined, 'bedrock')).toEqual({ provider: 'bedrock', model: 'default' });
  });

  it('refuses an unknown provider and a bare id without a default, naming the field', () => {
    const unknown = (() => {
      try {
        resolveModel('antrhopic/claude-3', 'offline', 'llm_config.model');
      } catch (error) {
        return error;
      }
    })();
    expect(unknown).toBeInstanceOf(ValidationError);
    expect((unknown as ValidationError).issues).toEqual([
      {
        path: 'llm_config.model',
        message: expect.stringMatching(/provider "antrhopic".*not one of bedrock/),
      },
    ]);
    expect(() => resolveModel('gpt-4', undefined)).toThrow(/no default provider/);
  });
});
