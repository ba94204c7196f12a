/**
 * Bedrock optional: the embedding model is a deploy setting (`crumbs:embeddings`). Off, no function may invoke an
 * embedding model and no rule feeds the indexer; the Bedrock model is granted by its id alone; an OpenAI-compatible
 * endpoint gets its URL, its key's secret and no Bedrock grant. The default agent model is a setting too (`crumbs:defaultModel`).
 */
import { describe, expect, it } from 'vitest';
import { ENV, topology } from '#shared/topology.ts';
import { type Json, type Resource, statelessResources } from '../support/synth.ts';

const stateless = (context: Json = {}): Resource[] => Object.values(statelessResources('embed', context));

const envOf = (resources: Resource[], name: string): Json =>
  ((
    resources.find((r) => r.Properties.FunctionName === `crumbs-embed-${name}`)?.Properties.Environment as
      | Json
      | undefined
  )?.Variables ?? {}) as Json;

const embeddingGrants = (resources: Resource[]) =>
  resources
    .filter((r) => r.Type === 'AWS::IAM::Policy')
    .flatMap((p) => (p.Properties.PolicyDocument as { Statement: Json[] }).Statement)
    .filter((s) => s.Sid === 'InvokeEmbeddingModel');

const resources = (all: Resource[], sid: string) =>
  all
    .filter((r) => r.Type === 'AWS::IAM::Policy')
    .flatMap((p) => (p.Properties.PolicyDocument as { Statement: Json[] }).Statement)
    .filter((s) => s.Sid === sid);

const indexerRules = (resources: Resource[]) =>
  resources.filter(
    (r) => r.Type === 'AWS::Events::Rule' && r.Properties.Name === topology.bus.indexerRuleName,
  );

describe('the embedding model setting', () => {
  it('defaults to Titan v2 on Bedrock, granted on that model only, with the indexer rule', () => {
    const resources = stateless();
    expect(envOf(resources, 'api')[ENV.embeddings]).toBe('bedrock/amazon.titan-embed-text-v2:0');
    const grants = embeddingGrants(resources);
    expect(grants.length).toBeGreaterThan(0);
    for (const g of grants)
      expect(JSON.stringify(g.Resource)).toContain('foundation-model/amazon.titan-embed-text-v2:0');
    expect(indexerRules(resources)).toHaveLength(1);
  });

  it('off: no embedding grant, no indexer rule, and every function told so', () => {
    const resources = stateless({ 'crumbs:embeddings': 'none' });
    expect(embeddingGrants(resources)).toEqual([]);
    expect(indexerRules(resources)).toEqual([]);
    for (const name of ['api', 'indexer', 'executor-context-builder']) {
      expect(envOf(resources, name)[ENV.embeddings], name).toBe('none');
    }
  });

  it('refuses a Bedrock model the Titan embedder cannot speak to; an OpenAI-compatible endpoint gets its URL, its key and no Bedrock grant', () => {
    expect(() => stateless({ 'crumbs:embeddings': 'bedrock/cohere.embed-english-v3' })).toThrow(
      /crumbs:embeddings.*Titan Text Embeddings v2/,
    );
    const compatible = stateless({
      'crumbs:embeddings': 'openai-compatible/nomic-embed-text',
      'crumbs:embeddingsBaseUrl': 'https://embeddings.example.com/v1',
    });
    expect(embeddingGrants(compatible)).toEqual([]);
    expect(envOf(compatible, 'indexer')).toMatchObject({
      [ENV.embeddings]: 'openai-compatible/nomic-embed-text',
      [ENV.embeddingsBaseUrl]: 'https://embeddings.example.com/v1',
    });
    // Its key: the one secret <LLM secret prefix>embeddings, to the functions that embed (and no other function).
    const keyGrants = resources(compatible, 'ReadEmbeddingsKey');
    expect(keyGrants.length).toBeGreaterThan(0);
    for (const g of keyGrants) expect(JSON.stringify(g.Resource)).toContain(':secret:crumbs/llm/embeddings*');
    expect(envOf(compatible, 'indexer')[ENV.secretPrefix]).toBe('crumbs/llm/');
    expect(resources(stateless(), 'ReadEmbeddingsKey')).toEqual([]);
    expect(() => stateless({ 'crumbs:embeddings': 'openai-compatible/x' })).toThrow(/base URL/);
    expect(() => stateless({ 'crumbs:embeddings': 'titan' })).toThrow(/crumbs:embeddings/);
  });

  it('sets the default agent model as the alias default that every model-resolving function reads', () => {
    const resources = stateless({
      'crumbs:defaultModel': 'bedrock/anthropic.claude-3-5-haiku-20241022-v1:0',
    });
    const aliases = JSON.parse(String(envOf(resources, 'executor-agent')[ENV.modelAliases]));
    expect(aliases).toEqual({ default: 'bedrock/anthropic.claude-3-5-haiku-20241022-v1:0' });
    expect(() => stateless({ 'crumbs:defaultModel': 'claude' })).toThrow(/crumbs:defaultModel/);
  });
});
