import { describe, expect, it } from 'vitest';
import { LlmRouter } from '#shared/adapters/llm/llm-router.ts';
import {
  contextBreadcrumbId,
  createContextBuilderKind,
  formatContext,
  llmTool,
} from '#shared/core/context-builder/context-builder-kind.ts';
import type { ExecutionInput } from '#shared/core/executor/contract.ts';
import { type ContextConfig, parseDefinition } from '#shared/domain/definitions.ts';
import { silentLog } from '#shared/ports/log.ts';
import type { ToolContext } from '#shared/tools/tool.ts';

/** Seed 003's context config, as written there. */
function seed003Config(extra: Record<string, unknown> = {}): ContextConfig {
  const parsed = parseDefinition('context.config.v1', {
    consumer_id: 'default-chat-assistant',
    update_triggers: [{ schema_name: 'user.message.v1', any_tags: ['workspace:agents'] }],
    sources: [
      { schema_name: 'user.message.v1', method: 'vector', nn: 5, key: 'related' },
      { schema_name: 'tool.catalog.v1', method: 'latest' },
    ],
    output: { schema_name: 'agent.context.v1', tags: ['agent:context', 'consumer:default-chat-assistant'] },
    ...extra,
  });
  if (parsed.kind !== 'context-builder') throw new Error('not a context config');
  return parsed.definition;
}

function input(
  def: ContextConfig,
  tags: string[],
  context: Record<string, unknown>,
): ExecutionInput<ContextConfig> {
  const trigger = {
    id: 'msg-7',
    schema_name: 'user.message.v1',
    title: '',
    tags,
    version: 1,
    updated_at: '2026-01-01T00:00:00.000Z',
    context: { message: 'What was that API key?' },
    workspace: 'ws',
    created_by: 'user:u',
  };
  return {
    definition: def,
    definitionRef: {
      id: 'cfg',
      version: 1,
      workspace: 'ws',
      kind: 'context-builder',
      schema_name: 'context.config.v1',
    },
    principal: `context-builder:${def.consumer_id}`,
    trigger,
    context: { trigger: trigger.context, ...context },
    causation: { caused_by: 'msg-7@1', thread: 'msg-7', hop: 1 },
    signal: new AbortController().signal,
  };
}

describe('context builder', () => {
  it('upserts one agent.context.v1 per consumer and session, pointing at the trigger (seed 003)', async () => {
    const sources = {
      related: [{ message: 'the API key is in vault' }],
      tool_catalog: { tools: ['calculator'] },
    };
    const { outputs } = await createContextBuilderKind().execute(
      input(seed003Config(), ['user:message', 'workspace:agents', 'session:abc'], sources),
    );
    expect(outputs).toHaveLength(1);
    const [out] = outputs;
    expect(out?.upsertId).toBe(contextBreadcrumbId('default-chat-assistant', 'abc'));
    expect(out?.tags).toEqual(['agent:context', 'consumer:default-chat-assistant', 'session:abc']);
    expect(out?.context).toMatchObject({
      consumer_id: 'default-chat-assistant',
      trigger_event_id: 'msg-7',
      session: 'abc',
      user_message: 'What was that API key?',
      sources,
    });
    expect(out?.context.formatted_context).toContain('## related');
    expect(out?.context.formatted_context).toContain('## tool_catalog');
    expect(out?.context.token_estimate).toBe(Math.ceil(String(out?.context.formatted_context).length / 4));
  });

  it('uses one record per consumer without a session, and adds the consumer tag the agent needs', async () => {
    const def = seed003Config({ output: { schema_name: 'agent.context.v1', tags: ['agent:context'] } });
    const { outputs } = await createContextBuilderKind().execute(input(def, ['user:message'], {}));
    expect(outputs[0]?.upsertId).toBe(contextBreadcrumbId('default-chat-assistant', undefined));
    expect(outputs[0]?.tags).toEqual(['agent:context', 'consumer:default-chat-assistant']);
  });

  it('trims the formatted context to formatting.max_tokens', async () => {
    const def = seed003Config({ formatting: { max_tokens: 50 } });
    const long = { related: Array.from({ length: 100 }, (_, i) => ({ message: `message number ${i}` })) };
    const { outputs } = await createContextBuilderKind().execute(input(def, [], long));
    const formatted = String(outputs[0]?.context.formatted_context);
    expect(formatted.length).toBeLessThanOrEqual(200);
    expect(formatted).toContain('truncated');
    expect(outputs[0]?.context.token_estimate).toBeLessThanOrEqual(50);
  });

  it('reports a failed source as it came (never silently dropped)', () => {
    expect(formatContext({ related: { error: 'vector search is down' } }, 1000)).toContain(
      'vector search is down',
    );
  });

  it('offers an llm tool that makes one model call', async () => {
    const tool = llmTool(new LlmRouter({ env: {} }));
    const ctx = {
      config: { model: 'offline/x' },
      signal: new AbortController().signal,
      log: silentLog,
    } as unknown as ToolContext;
    const out = (await tool.run({ prompt: 'hello' }, ctx)) as { text: string; model: string };
    expect(out.model).toBe('offline/x');
    expect(out.text).toContain('hello');
  });
});
