import { describe, expect, it } from 'vitest';
import { LlmEnvSchema, parseEnv } from '#shared/config.ts';
import { ValidationError } from '#shared/domain/errors.ts';
import { MAX_MODEL_ALIASES, resolveModel } from '#shared/domain/llm-model.ts';

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
    expect(resolveModel(undefined, 'offline')).toEqual({ provider: 'offline', model: 'default' });
  });

  it("gives an agent without a model its provider's default model, never the word `default`", () => {
    expect(resolveModel(undefined, 'bedrock')).toEqual({
      provider: 'bedrock',
      model: 'amazon.nova-lite-v1:0',
    });
    expect(resolveModel('', 'openai')).toEqual({ provider: 'openai', model: 'gpt-4o-mini' });
    expect(resolveModel('bedrock/default', undefined)).toEqual({
      provider: 'bedrock',
      model: 'amazon.nova-lite-v1:0',
    });
    expect(() => resolveModel(undefined, 'ollama')).toThrow(
      /ollama has no default model.*set the alias "default" \(CRUMBS_MODEL_ALIASES\)/,
    );
  });

  it("runs what the operator's alias says for a bare id, `default` included, whatever the default provider", () => {
    const aliases = { 'gpt-4': 'openai/gpt-4o', default: 'bedrock/anthropic.claude-3-5-haiku-20241022-v1:0' };
    expect(resolveModel('gpt-4', 'bedrock', 'model', aliases)).toEqual({
      provider: 'openai',
      model: 'gpt-4o',
    });
    expect(resolveModel(undefined, 'offline', 'model', aliases)).toEqual({
      provider: 'bedrock',
      model: 'anthropic.claude-3-5-haiku-20241022-v1:0',
    });
    // An id with a provider is never an alias; an id no alias names runs on the default provider.
    expect(resolveModel('openrouter/gpt-4', 'bedrock', 'model', aliases).provider).toBe('openrouter');
    expect(resolveModel('llama3', 'ollama', 'model', aliases)).toEqual({
      provider: 'ollama',
      model: 'llama3',
    });
    // Inherited object keys are not aliases.
    expect(() => resolveModel('constructor', 'bedrock', 'model', aliases)).toThrow(/names no provider/);
  });

  it('refuses a bare id Bedrock cannot run, naming the providers and the aliases there are', () => {
    const refusal = (() => {
      try {
        resolveModel('gpt-4', 'bedrock', 'llm.model', { 'house-model': 'offline/x' });
      } catch (error) {
        return error as ValidationError;
      }
    })();
    expect(refusal?.issues).toEqual([
      {
        path: 'llm.model',
        message: expect.stringMatching(
          /"gpt-4" names no provider.*Bedrock model ids.*providers: bedrock, openrouter, openai, ollama, openai-compatible, offline.*an alias \(house-model;.*CRUMBS_MODEL_ALIASES\)/,
        ),
      },
    ]);
    expect(resolveModel('us.anthropic.claude-3-5-haiku-20241022-v1:0', 'bedrock').model).toBe(
      'us.anthropic.claude-3-5-haiku-20241022-v1:0',
    );
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

describe('CRUMBS_MODEL_ALIASES', () => {
  const parse = (text: string | undefined) =>
    parseEnv(LlmEnvSchema, { CRUMBS_DEFAULT_LLM_PROVIDER: 'bedrock', CRUMBS_MODEL_ALIASES: text })
      .CRUMBS_MODEL_ALIASES;

  it('reads a JSON object of bare ids to <provider>/<model id>; absent or blank is none', () => {
    expect(parse('{"gpt-4":"openai/gpt-4o","default":"offline/x"}')).toEqual({
      'gpt-4': 'openai/gpt-4o',
      default: 'offline/x',
    });
    expect(parse(undefined)).toEqual({});
    expect(parse('  ')).toEqual({});
  });

  it('refuses a target without a known provider, an alias with a slash, too many, or no JSON object', () => {
    expect(() => parse('{"gpt-4":"gpt-4o"}')).toThrow(
      /CRUMBS_MODEL_ALIASES.*expected <provider>\/<model id>/,
    );
    expect(() => parse('{"gpt-4":"antrhopic/claude"}')).toThrow(/expected <provider>\/<model id>/);
    expect(() => parse('{"openai/gpt-4":"openai/gpt-4o"}')).toThrow(/an alias is a model id without a slash/);
    expect(() => parse('["gpt-4"]')).toThrow(/expected a JSON object/);
    const many = Object.fromEntries(
      Array.from({ length: MAX_MODEL_ALIASES + 1 }, (_, i) => [`m${i}`, 'offline/x']),
    );
    expect(() => parse(JSON.stringify(many))).toThrow(/at most 100 aliases/);
  });
});
