import { describe, expect, it } from 'vitest';
import { contextKey, getPath, inferRole, type Selector, SelectorSchema } from '#shared/domain/selector.ts';

function parse(value: unknown): Selector {
  return SelectorSchema.parse(value);
}

function issues(value: unknown): { path: string; message: string }[] {
  const result = SelectorSchema.safeParse(value);
  if (result.success) throw new Error('expected the selector to be refused');
  return result.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message }));
}

describe('SelectorSchema', () => {
  it('normalizes a bare fetch method into { method }', () => {
    expect(parse({ schema_name: 'user.message.v1', fetch: 'event_data' }).fetch).toEqual({
      method: 'event_data',
    });
  });

  it('moves a top-level limit into fetch', () => {
    expect(parse({ schema_name: 'a.b.v1', fetch: 'recent', limit: 10 }).fetch).toEqual({
      method: 'recent',
      limit: 10,
    });
    expect(parse({ schema_name: 'a.b.v1', limit: 1 }).fetch).toEqual({ method: 'latest', limit: 1 });
    expect(parse({ schema_name: 'a.b.v1', limit: 5 }).fetch).toEqual({ method: 'recent', limit: 5 });
  });

  it('keeps a fetch object as written', () => {
    expect(parse({ schema_name: 'a.b.v1', fetch: { method: 'vector', nn: 5 } }).fetch).toEqual({
      method: 'vector',
      nn: 5,
    });
  });

  it('accepts priority, comment and unknown keys without keeping the unused ones', () => {
    expect(parse({ schema_name: 'a.b.v1', priority: 2, comment: 'why', note: 'x' })).toEqual({
      schema_name: 'a.b.v1',
      comment: 'why',
    });
  });

  it('gives the same result when a normalized selector is parsed again', () => {
    const once = parse({ schema_name: 'a.b.v1', fetch: 'latest', limit: 3, role: 'context' });
    expect(parse(once)).toEqual(once);
  });

  it('normalizes paths written without "$."', () => {
    const selector = parse({ context_match: [{ path: 'output.status', op: 'eq', value: 'ok' }] });
    expect(selector.context_match?.[0]?.path).toBe('$.output.status');
  });

  it('refuses array paths with a clear message', () => {
    for (const path of ['$.a[0]', '$.a[*]', 'a.*']) {
      const [issue] = issues({ context_match: [{ path, op: 'eq', value: 1 }] });
      expect(issue?.path).toBe('context_match.0.path');
      expect(issue?.message).toMatch(/array paths are not supported/);
    }
  });

  it('refuses empty and "$"-prefixed path steps', () => {
    for (const path of ['$', '$.', '$.a..b', '$.$or']) {
      expect(issues({ context_match: [{ path, op: 'eq', value: 1 }] })[0]?.path).toBe('context_match.0.path');
    }
  });

  it('refuses an unknown op, listing the known ones', () => {
    const [issue] = issues({ context_match: [{ path: '$.a', op: 'regex', value: 'x' }] });
    expect(issue?.path).toBe('context_match.0.op');
    expect(issue?.message).toContain('contains_any');
  });

  it.each([
    ['eq', { a: 1 }, /cannot match an object or array/],
    ['eq', [1], /cannot match an object or array/],
    ['ne', true, /string or a number/],
    ['in', [], /non-empty array/],
    ['in', 'a', /non-empty array/],
    ['contains_any', [], /non-empty array/],
    ['contains_any', [''], /empty string/],
    ['gt', '5', /finite number/],
    ['lte', 1e10, /between/],
    ['exists', 'yes', /true or false/],
    ['prefix', 5, /non-empty string/],
    ['prefix', '', /non-empty string/],
  ])('refuses %s with value %j', (op, value, message) => {
    const [issue] = issues({ context_match: [{ path: '$.a', op, value }] });
    expect(issue?.path).toMatch(/^context_match\.0\.value/);
    expect(issue?.message).toMatch(message);
  });

  it.each([
    ['eq', null],
    ['ne', 3],
    ['in', ['a', 1, true, null]],
    ['contains_any', ['a', 2]],
    ['gte', -1.5],
    ['exists', false],
    ['prefix', 'req-'],
  ])('accepts %s with value %j', (op, value) => {
    expect(() => parse({ context_match: [{ path: '$.a', op, value }] })).not.toThrow();
  });

  it('refuses empty tag lists and a bad role', () => {
    expect(issues({ any_tags: [], role: 'watcher' }).map((i) => i.path)).toEqual(['any_tags', 'role']);
  });
});

describe('inferRole', () => {
  it('lets an explicit role win', () => {
    expect(inferRole({ schema_name: 'user.message.v1', role: 'context' })).toBe('context');
    expect(inferRole({ schema_name: 'browser.navigation.v1', role: 'trigger' })).toBe('trigger');
  });

  it("infers trigger for the seeds' trigger schemas and context for everything else", () => {
    for (const schema of ['user.message.v1', 'agent.context.v1', 'tool.request.v1', 'system.message.v1']) {
      expect(inferRole({ schema_name: schema })).toBe('trigger');
    }
    expect(inferRole({ schema_name: 'tool.response.v1' })).toBe('context');
    expect(inferRole({})).toBe('context');
  });
});

describe('contextKey', () => {
  it("uses an explicit key, then the seeds' key map, then the schema name with underscores", () => {
    expect(contextKey({ key: 'history', schema_name: 'user.message.v1' })).toBe('history');
    expect(contextKey({ schema_name: 'tool.response.v1' })).toBe('tool_results');
    expect(contextKey({ schema_name: 'browser.page.context.v1' })).toBe('browser_context');
    expect(contextKey({ schema_name: 'agent.def.v1' })).toBe('agent_definition');
    expect(contextKey({ schema_name: 'page.summary.v1' })).toBe('page_summary_v1');
  });
});

describe('getPath', () => {
  const context = { content: 'hi', output: { status: 'ok', list: [1, 2] }, nothing: null };

  it('reads nested values with or without "$."', () => {
    expect(getPath(context, '$.content')).toBe('hi');
    expect(getPath(context, 'output.status')).toBe('ok');
    expect(getPath(context, '$.output.list')).toEqual([1, 2]);
    expect(getPath(context, '$.nothing')).toBeNull();
  });

  it('returns undefined for missing steps and through non-objects', () => {
    expect(getPath(context, '$.missing.x')).toBeUndefined();
    expect(getPath(context, '$.content.length')).toBeUndefined();
    expect(getPath(context, '$.output.list.0')).toBeUndefined();
    expect(getPath(undefined, '$.a')).toBeUndefined();
  });
});
