import { describe, expect, it } from 'vitest';
import { CHANGE_SOURCE, type ChangeEvent, DETAIL_TYPES, tagMap } from '#shared/domain/change-event.ts';
import { ValidationError } from '#shared/domain/errors.ts';
import type { SelectorInput } from '#shared/domain/selector.ts';
import { contextWords } from '#shared/domain/words.ts';
import {
  canonicalJson,
  compileSelector,
  compileTriggerPattern,
  matchesSelector,
  patternHash,
} from '#shared/routing/compiler.ts';
import { matchesEventPattern } from '#shared/routing/event-pattern.ts';

const WORKSPACE = 'team-a';
const PRINCIPAL = 'agent:helper';

interface EventOptions {
  workspace?: string;
  schema_name?: string;
  tags?: string[];
  context?: Record<string, unknown>;
  context_omitted?: boolean;
  created_by?: string;
  /** The writer of this version; defaults to created_by. */
  updated_by?: string;
  detailType?: ChangeEvent['detail-type'];
}

/** A change event exactly as the publisher builds it (shared/domain/change-event.ts). */
function changeEvent(options: EventOptions = {}): ChangeEvent {
  const tags = options.tags ?? [];
  const omitted = options.context_omitted ?? false;
  const words = omitted ? undefined : contextWords(options.context ?? {});
  return {
    version: '0',
    id: 'evt-1',
    source: CHANGE_SOURCE,
    'detail-type': options.detailType ?? DETAIL_TYPES.created,
    account: '000000000000',
    region: 'us-east-1',
    time: '2025-01-01T00:00:00Z',
    resources: [],
    detail: {
      workspace: options.workspace ?? WORKSPACE,
      id: '01J0000000000000000000000A',
      version: 1,
      schema_name: options.schema_name ?? 'tool.response.v1',
      title: 'a breadcrumb',
      tags,
      tag_map: tagMap(tags),
      created_by: options.created_by ?? 'user:alice',
      updated_by: options.updated_by ?? options.created_by ?? 'user:alice',
      updated_at: '2025-01-01T00:00:00.000Z',
      causation: null,
      ...(omitted ? {} : { context: options.context ?? {} }),
      context_omitted: omitted,
      ...(words ? { words: words.words, words_truncated: words.truncated } : {}),
      checksum: 'c'.repeat(64),
    },
  };
}

/** Compiles one selector into a full rule and tells whether the event would be routed. */
function routes(selector: SelectorInput, event: ChangeEvent): boolean {
  const pattern = compileTriggerPattern({
    workspace: WORKSPACE,
    principal: PRINCIPAL,
    selectors: [selector],
  });
  return matchesEventPattern(pattern, event);
}

function onPath(op: string, value: unknown, path = '$.status'): SelectorInput {
  return { schema_name: 'tool.response.v1', context_match: [{ path, op, value }] } as SelectorInput;
}

function validationIssues(fn: () => unknown): { path: string; message: string }[] {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    return [...(error as ValidationError).issues];
  }
  throw new Error('expected a ValidationError');
}

describe('compileTriggerPattern', () => {
  it('routes only created and updated breadcrumb events from the crumbs source', () => {
    const selector = { schema_name: 'tool.response.v1' };
    expect(routes(selector, changeEvent())).toBe(true);
    expect(routes(selector, changeEvent({ detailType: DETAIL_TYPES.updated }))).toBe(true);
    expect(routes(selector, changeEvent({ detailType: DETAIL_TYPES.deleted }))).toBe(false);
    expect(routes(selector, { ...changeEvent(), source: 'other' } as unknown as ChangeEvent)).toBe(false);
  });

  it('matches only its schema_name when one is given', () => {
    expect(
      routes({ schema_name: 'tool.response.v1' }, changeEvent({ schema_name: 'tool.response.v1' })),
    ).toBe(true);
    expect(routes({ schema_name: 'tool.response.v1' }, changeEvent({ schema_name: 'tool.request.v1' }))).toBe(
      false,
    );
  });

  it('pins the rule to the definition workspace', () => {
    const selector = { schema_name: 'tool.response.v1' };
    expect(routes(selector, changeEvent({ workspace: WORKSPACE }))).toBe(true);
    expect(routes(selector, changeEvent({ workspace: 'team-b' }))).toBe(false);
  });

  it('does not route changes the definition wrote itself', () => {
    const selector = { schema_name: 'tool.response.v1' };
    expect(routes(selector, changeEvent({ created_by: PRINCIPAL }))).toBe(false);
    expect(routes(selector, changeEvent({ created_by: 'agent:other' }))).toBe(true);
    // Its own update of a breadcrumb someone else created: its own write, not a trigger.
    expect(
      routes(
        selector,
        changeEvent({ created_by: 'user:alice', updated_by: PRINCIPAL, detailType: DETAIL_TYPES.updated }),
      ),
    ).toBe(false);
  });

  it("routes another writer's update of a breadcrumb the definition created", () => {
    const selector = { schema_name: 'tool.response.v1' };
    expect(
      routes(
        selector,
        changeEvent({ created_by: PRINCIPAL, updated_by: 'user:alice', detailType: DETAIL_TYPES.updated }),
      ),
    ).toBe(true);
  });

  describe('any_tags', () => {
    it('matches when any one of the tags is on the breadcrumb', () => {
      const selector = { any_tags: ['user:message', 'chat:input'] };
      expect(routes(selector, changeEvent({ tags: ['x', 'chat:input'] }))).toBe(true);
      expect(routes(selector, changeEvent({ tags: ['x', 'y'] }))).toBe(false);
      expect(routes(selector, changeEvent({ tags: [] }))).toBe(false);
    });

    it('matches tags containing dots, dollars, percent signs and spaces literally', () => {
      const tags = ['v1.2', 'price:$5', '100%', 'two words'];
      for (const tag of tags) {
        expect(routes({ any_tags: [tag] }, changeEvent({ tags: [tag] }))).toBe(true);
        expect(routes({ any_tags: [tag] }, changeEvent({ tags: [`${tag}x`] }))).toBe(false);
      }
    });
  });

  describe('all_tags', () => {
    it('matches only when every tag is on the breadcrumb', () => {
      const selector = { all_tags: ['agent:context', 'consumer:default-chat-assistant'] };
      expect(
        routes(
          selector,
          changeEvent({ tags: ['agent:context', 'consumer:default-chat-assistant', 'extra'] }),
        ),
      ).toBe(true);
      expect(routes(selector, changeEvent({ tags: ['agent:context'] }))).toBe(false);
    });

    it('matches tags containing dots, dollars, percent signs and spaces', () => {
      const selector = { all_tags: ['a.b', '$x', '50%', 'with space'] };
      expect(routes(selector, changeEvent({ tags: ['a.b', '$x', '50%', 'with space'] }))).toBe(true);
      // "a.b" must not be confused with a nested path a → b, nor "%2E" with ".".
      expect(routes(selector, changeEvent({ tags: ['a%2Eb', '$x', '50%', 'with space'] }))).toBe(false);
      expect(routes(selector, changeEvent({ tags: ['a.b', '$x', '50%'] }))).toBe(false);
    });
  });

  describe('context_match', () => {
    it('eq matches the exact value of strings, numbers, booleans and null', () => {
      for (const value of ['done', 3, true, null]) {
        expect(routes(onPath('eq', value), changeEvent({ context: { status: value } }))).toBe(true);
      }
      expect(routes(onPath('eq', 'done'), changeEvent({ context: { status: 'pending' } }))).toBe(false);
      expect(routes(onPath('eq', 3), changeEvent({ context: { status: '3' } }))).toBe(false);
    });

    it('eq follows nested paths written with or without "$."', () => {
      const event = changeEvent({ context: { output: { status: 'ok' } } });
      expect(routes(onPath('eq', 'ok', '$.output.status'), event)).toBe(true);
      expect(routes(onPath('eq', 'ok', 'output.status'), event)).toBe(true);
      expect(routes(onPath('eq', 'ok', '$.output.other'), event)).toBe(false);
    });

    it('ne matches a different value or a missing field', () => {
      expect(routes(onPath('ne', 'done'), changeEvent({ context: { status: 'pending' } }))).toBe(true);
      expect(routes(onPath('ne', 'done'), changeEvent({ context: {} }))).toBe(true);
      expect(routes(onPath('ne', 'done'), changeEvent({ context: { status: 'done' } }))).toBe(false);
    });

    it('in matches any of the listed values', () => {
      expect(routes(onPath('in', ['a', 'b']), changeEvent({ context: { status: 'b' } }))).toBe(true);
      expect(routes(onPath('in', ['a', 'b']), changeEvent({ context: { status: 'c' } }))).toBe(false);
    });

    it('contains_any matches a text field containing any of the words, whatever their case', () => {
      const selector = onPath('contains_any', ['file', 'list', 'javascript'], '$.content');
      const text = (content: string) => changeEvent({ context: { content } });
      expect(routes(selector, text('Can you list my files?'))).toBe(true);
      expect(routes(selector, text('I like JavaScript.'))).toBe(true);
      expect(routes(selector, text('FILE'))).toBe(true);
      expect(routes(selector, text('javascript'))).toBe(true);
    });

    it('contains_any matches whole words only: no substrings, no stems', () => {
      const selector = onPath('contains_any', ['file', 'list', 'javascript'], '$.content');
      const text = (content: string) => changeEvent({ context: { content } });
      expect(routes(selector, text('show my files'))).toBe(false);
      expect(routes(selector, text('a listing of typescript profiles'))).toBe(false);
      expect(routes(selector, text(''))).toBe(false);
      expect(routes(selector, changeEvent({ context: {} }))).toBe(false);
    });

    it('contains_any finds words in nested text fields and in non-Latin scripts', () => {
      const nested = onPath('contains_any', ['Café'], '$.message.body');
      expect(routes(nested, changeEvent({ context: { message: { body: 'Meet at the CAFÉ, 9am' } } }))).toBe(
        true,
      );
      expect(routes(nested, changeEvent({ context: { message: { title: 'café' } } }))).toBe(false);
      // Full-width letters and ligatures are their plain forms (NFKC).
      expect(
        routes(
          onPath('contains_any', ['file'], '$.content'),
          changeEvent({ context: { content: 'ｆｉｌｅ' } }),
        ),
      ).toBe(true);
      expect(
        routes(
          onPath('contains_any', ['文件'], '$.content'),
          changeEvent({ context: { content: '我想列出我的文件' } }),
        ),
      ).toBe(true);
    });

    it('contains_any compiles to word equality, never wildcards, which EventBridge can find too complex', () => {
      const fragment = compileSelector(onPath('contains_any', ['File', 'list', 'javascript'], '$.content'));
      expect(JSON.stringify(fragment)).not.toContain('wildcard');
      expect(fragment).toEqual({
        schema_name: ['tool.response.v1'],
        $or: [
          { context: { content: ['File', 'list', 'javascript'] } },
          { words: { content: ['file', 'list', 'javascript'] } },
          { words_truncated: [true] },
          { context_omitted: [true] },
        ],
      });
    });

    it('contains_any matches any element of an array field, by equality', () => {
      const selector = onPath('contains_any', ['red', 7], '$.labels');
      expect(routes(selector, changeEvent({ context: { labels: ['blue', 'red'] } }))).toBe(true);
      expect(routes(selector, changeEvent({ context: { labels: [1, 7] } }))).toBe(true);
      expect(routes(selector, changeEvent({ context: { labels: ['blue', 'green'] } }))).toBe(false);
      // Array elements are not split into words.
      expect(routes(selector, changeEvent({ context: { labels: ['dark red'] } }))).toBe(false);
      expect(routes(selector, changeEvent({ context: { labels: ['Red'] } }))).toBe(false);
    });

    it('contains_any with numbers and booleans matches equal values only', () => {
      const selector = onPath('contains_any', [7, true], '$.n');
      expect(routes(selector, changeEvent({ context: { n: 7 } }))).toBe(true);
      expect(routes(selector, changeEvent({ context: { n: true } }))).toBe(true);
      expect(routes(selector, changeEvent({ context: { n: 'route 7' } }))).toBe(false);
      expect(compileSelector(selector)).toEqual({
        schema_name: ['tool.response.v1'],
        $or: [{ context: { n: [7, true] } }, { context_omitted: [true] }],
      });
    });

    it('contains_any on a text field whose words were cut routes the event, for the executor to re-check', () => {
      const selector = onPath('contains_any', ['needle'], '$.content');
      const event = changeEvent({ context: { content: 'hay' } });
      const truncated = { ...event, detail: { ...event.detail, words_truncated: true } };
      expect(routes(selector, event)).toBe(false);
      expect(routes(selector, truncated)).toBe(true);
      // Selectors without a text contains_any ignore the flag.
      expect(routes(onPath('eq', 'x', '$.content'), truncated)).toBe(false);
    });
    it('gt, gte, lt and lte compare numbers', () => {
      const at = (n: number) => changeEvent({ context: { status: n } });
      expect(routes(onPath('gt', 5), at(6))).toBe(true);
      expect(routes(onPath('gt', 5), at(5))).toBe(false);
      expect(routes(onPath('gte', 5), at(5))).toBe(true);
      expect(routes(onPath('lt', 5), at(4.5))).toBe(true);
      expect(routes(onPath('lt', 5), at(5))).toBe(false);
      expect(routes(onPath('lte', 5), at(5))).toBe(true);
      expect(routes(onPath('gt', 5), changeEvent({ context: { status: '6' } }))).toBe(false);
    });

    it('combines several numeric comparisons on one path into one range', () => {
      const selector = {
        schema_name: 'tool.response.v1',
        context_match: [
          { path: '$.score', op: 'gte', value: 0.5 },
          { path: '$.score', op: 'lt', value: 1 },
          { path: '$.score', op: 'gt', value: 0.2 },
        ],
      } as SelectorInput;
      const fragment = compileSelector(selector);
      expect(JSON.stringify(fragment)).toContain('"numeric":[">=",0.5,"<",1]');
      expect(routes(selector, changeEvent({ context: { score: 0.7 } }))).toBe(true);
      expect(routes(selector, changeEvent({ context: { score: 0.3 } }))).toBe(false);
      expect(routes(selector, changeEvent({ context: { score: 1 } }))).toBe(false);
    });

    it('exists matches present or missing fields', () => {
      expect(routes(onPath('exists', true), changeEvent({ context: { status: 'x' } }))).toBe(true);
      expect(routes(onPath('exists', true), changeEvent({ context: {} }))).toBe(false);
      expect(routes(onPath('exists', false), changeEvent({ context: {} }))).toBe(true);
      expect(routes(onPath('exists', false), changeEvent({ context: { status: 'x' } }))).toBe(false);
    });

    it('prefix matches strings starting with the value', () => {
      expect(routes(onPath('prefix', 'req-'), changeEvent({ context: { status: 'req-42' } }))).toBe(true);
      expect(routes(onPath('prefix', 'req-'), changeEvent({ context: { status: 'x-req-42' } }))).toBe(false);
    });

    it('ANDs conditions on different paths', () => {
      const selector = {
        schema_name: 'tool.request.v1',
        context_match: [
          { path: '$.tool', op: 'eq', value: 'echo' },
          { path: '$.input.mode', op: 'ne', value: 'dry' },
        ],
      } as SelectorInput;
      const event = (context: Record<string, unknown>) =>
        changeEvent({ schema_name: 'tool.request.v1', context });
      expect(routes(selector, event({ tool: 'echo', input: { mode: 'real' } }))).toBe(true);
      expect(routes(selector, event({ tool: 'echo' }))).toBe(true);
      expect(routes(selector, event({ tool: 'echo', input: { mode: 'dry' } }))).toBe(false);
      expect(routes(selector, event({ tool: 'calc', input: { mode: 'real' } }))).toBe(false);
    });

    it('still routes an event whose context was too large to carry, for the executor to re-check', () => {
      const selector = onPath('eq', 'done');
      expect(routes(selector, changeEvent({ context_omitted: true }))).toBe(true);
      // The other fields still apply.
      expect(routes(selector, changeEvent({ context_omitted: true, schema_name: 'other.thing.v1' }))).toBe(
        false,
      );
      expect(routes(selector, changeEvent({ context_omitted: true, updated_by: PRINCIPAL }))).toBe(false);
    });
  });

  describe('several selectors', () => {
    const selectors: SelectorInput[] = [
      { schema_name: 'agent.context.v1', all_tags: ['consumer:default-chat-assistant'] },
      {
        schema_name: 'tool.response.v1',
        context_match: [{ path: '$.requestedBy', op: 'eq', value: 'default-chat-assistant' }],
      },
    ];
    const pattern = compileTriggerPattern({ workspace: WORKSPACE, principal: PRINCIPAL, selectors });

    it('routes an event matching any one of them', () => {
      expect(
        matchesEventPattern(
          pattern,
          changeEvent({ schema_name: 'agent.context.v1', tags: ['consumer:default-chat-assistant'] }),
        ),
      ).toBe(true);
      expect(
        matchesEventPattern(
          pattern,
          changeEvent({
            schema_name: 'tool.response.v1',
            context: { requestedBy: 'default-chat-assistant' },
          }),
        ),
      ).toBe(true);
      expect(
        matchesEventPattern(pattern, changeEvent({ schema_name: 'tool.response.v1', context_omitted: true })),
      ).toBe(true);
    });

    it('does not mix the fields of different selectors', () => {
      expect(
        matchesEventPattern(
          pattern,
          changeEvent({
            schema_name: 'agent.context.v1',
            context: { requestedBy: 'default-chat-assistant' },
          }),
        ),
      ).toBe(false);
      expect(
        matchesEventPattern(
          pattern,
          changeEvent({ schema_name: 'tool.response.v1', tags: ['consumer:default-chat-assistant'] }),
        ),
      ).toBe(false);
    });

    it("still pins the workspace and excludes the definition's own writes", () => {
      const event = changeEvent({
        schema_name: 'agent.context.v1',
        tags: ['consumer:default-chat-assistant'],
      });
      expect(
        matchesEventPattern(pattern, { ...event, detail: { ...event.detail, workspace: 'team-b' } }),
      ).toBe(false);
      expect(
        matchesEventPattern(pattern, { ...event, detail: { ...event.detail, updated_by: PRINCIPAL } }),
      ).toBe(false);
    });
  });

  describe('rejections', () => {
    it('refuses an unknown op, naming the selector and field', () => {
      const issues = validationIssues(() =>
        compileTriggerPattern({
          workspace: WORKSPACE,
          principal: PRINCIPAL,
          selectors: [{ schema_name: 'a.b.v1' }, onPath('regex', 'x.*')],
        }),
      );
      expect(issues[0]?.path).toBe('selectors[1].context_match[0].op');
      expect(issues[0]?.message).toMatch(/unknown op/);
    });

    it('refuses array paths with a clear message', () => {
      for (const path of ['$.items[0]', '$.items[*].name']) {
        const issues = validationIssues(() => compileSelector(onPath('eq', 'x', path)));
        expect(issues[0]?.path).toBe('context_match[0].path');
        expect(issues[0]?.message).toMatch(/array paths are not supported/);
      }
    });

    it('refuses eq with an object or array value', () => {
      for (const value of [{ a: 1 }, ['a']]) {
        const issues = validationIssues(() => compileSelector(onPath('eq', value)));
        expect(issues[0]?.path).toBe('context_match[0].value');
        expect(issues[0]?.message).toMatch(/cannot match an object or array/);
      }
    });

    it('refuses two non-numeric conditions on the same path', () => {
      const selector = {
        context_match: [
          { path: '$.a', op: 'eq', value: 1 },
          { path: '$.a', op: 'prefix', value: 'x' },
        ],
      } as SelectorInput;
      const issues = validationIssues(() => compileSelector(selector));
      expect(issues[0]?.path).toBe('context_match[1].op');
    });

    it('refuses numeric conditions that can never hold together', () => {
      const selector = {
        context_match: [
          { path: '$.a', op: 'gt', value: 5 },
          { path: '$.a', op: 'lt', value: 2 },
        ],
      } as SelectorInput;
      expect(validationIssues(() => compileSelector(selector))[0]?.message).toMatch(/never both hold/);
    });

    it('refuses a field matched both as a value and as an object', () => {
      const selector = {
        context_match: [
          { path: '$.a', op: 'eq', value: 1 },
          { path: '$.a.b', op: 'eq', value: 2 },
        ],
      } as SelectorInput;
      expect(validationIssues(() => compileSelector(selector))[0]?.path).toBe('context_match[1].path');
    });

    it('refuses an empty selector, which would match every change in the workspace', () => {
      expect(validationIssues(() => compileSelector({ comment: 'everything' }))[0]?.message).toMatch(
        /at least one of/,
      );
    });

    it('refuses a definition without trigger selectors', () => {
      const issues = validationIssues(() =>
        compileTriggerPattern({ workspace: WORKSPACE, principal: PRINCIPAL, selectors: [] }),
      );
      expect(issues[0]?.path).toBe('selectors');
    });

    it('refuses a pattern over EventBridge size limit, naming the largest selector', () => {
      const many = Array.from({ length: 120 }, (_, i) => `value-number-${i}`);
      const issues = validationIssues(() =>
        compileTriggerPattern({
          workspace: WORKSPACE,
          principal: PRINCIPAL,
          selectors: [{ schema_name: 'a.b.v1' }, onPath('in', many)],
          selectorPaths: ['subscriptions.selectors[0]', 'subscriptions.selectors[3]'],
        }),
      );
      expect(issues[0]?.path).toBe('subscriptions.selectors[3]');
      expect(issues[0]?.message).toMatch(/over EventBridge's limit of 2048/);
    });

    it('refuses a contains_any value that is not one word, pointing at separate values or "in"', () => {
      const phrase = validationIssues(() =>
        compileSelector(onPath('contains_any', ['file', 'list files'], '$.content')),
      );
      expect(phrase[0]?.path).toBe('context_match[0].value[1]');
      expect(phrase[0]?.message).toMatch(/"list files" is 2 words \(list, files\)/);
      expect(phrase[0]?.message).toMatch(/separate values/);
      expect(phrase[0]?.message).toMatch(/"in"/);
      const none = validationIssues(() => compileSelector(onPath('contains_any', ['?!'], '$.content')));
      expect(none[0]?.message).toMatch(/holds no word/);
      // Punctuation around one word is not a second word.
      expect(() => compileSelector(onPath('contains_any', ['list!', 'file.txt'], '$.content'))).not.toThrow();
    });

    it('refuses contains_any selectors whose word alternatives outgrow the pattern size limit', () => {
      const words = Array.from({ length: 90 }, (_, i) => `keyword${i}`);
      const issues = validationIssues(() =>
        compileTriggerPattern({
          workspace: WORKSPACE,
          principal: PRINCIPAL,
          selectors: [onPath('contains_any', words, '$.content')],
        }),
      );
      expect(issues[0]?.path).toBe('selectors[0]');
      expect(issues[0]?.message).toMatch(/over EventBridge's limit of 2048/);
    });

    it("keeps several contains_any conditions within EventBridge's $or limits", () => {
      const selector = {
        schema_name: 'user.message.v1',
        context_match: [
          { path: '$.content', op: 'contains_any', value: ['file', 'list'] },
          { path: '$.subject', op: 'contains_any', value: ['urgent'] },
          { path: '$.channel', op: 'ne', value: 'spam' },
        ],
      } as SelectorInput;
      const pattern = compileTriggerPattern({
        workspace: WORKSPACE,
        principal: PRINCIPAL,
        selectors: [selector],
      });
      // 2 × 2 × 2 word/element alternatives, the cut-words and omitted-context cases: one flat $or.
      expect((pattern.detail as { $or: unknown[] }).$or).toHaveLength(10);
      const event = changeEvent({
        schema_name: 'user.message.v1',
        context: { content: 'List them', subject: 'Urgent: files', channel: 'mail' },
      });
      expect(matchesEventPattern(pattern, event)).toBe(true);
    });

    it('accepts a larger pattern when the account quota is raised, up to 4096', () => {
      const many = Array.from({ length: 120 }, (_, i) => `value-number-${i}`);
      const input = { workspace: WORKSPACE, principal: PRINCIPAL, selectors: [onPath('in', many)] };
      expect(() => compileTriggerPattern({ ...input, maxPatternLength: 4096 })).not.toThrow();
      expect(() => compileTriggerPattern({ ...input, maxPatternLength: 100_000 })).not.toThrow();
      const more = Array.from({ length: 300 }, (_, i) => `value-number-${i}`);
      expect(() =>
        compileTriggerPattern({ ...input, selectors: [onPath('in', more)], maxPatternLength: 100_000 }),
      ).toThrow(/limit of 4096/);
    });

    it('refuses a bad workspace or principal', () => {
      const issues = validationIssues(() =>
        compileTriggerPattern({
          workspace: 'a/b',
          principal: 'nobody',
          selectors: [{ schema_name: 'a.b.v1' }],
        }),
      );
      expect(issues.map((i) => i.path)).toEqual(['workspace', 'principal']);
    });
  });
});

describe('compileSelector', () => {
  it('merges the context alternatives with the omitted-context case under $or', () => {
    expect(compileSelector(onPath('eq', 'done'))).toEqual({
      schema_name: ['tool.response.v1'],
      $or: [{ context: { status: ['done'] } }, { context_omitted: [true] }],
    });
  });

  it('compiles tag-only selectors without a context condition', () => {
    expect(compileSelector({ any_tags: ['a.b'], all_tags: ['c d'] })).toEqual({
      tags: ['a.b'],
      tag_map: { 'c%20d': [true] },
    });
  });
});

describe('matchesSelector', () => {
  const selector: SelectorInput = {
    any_tags: ['user:message', 'chat:input'],
    context_match: [{ path: '$.content', op: 'contains_any', value: ['file', 'list', 'javascript'] }],
  };

  it('checks the full stored context, not the omitted-context shortcut', () => {
    expect(
      matchesSelector(selector, { schema_name: 'user.message.v1', tags: ['chat:input'], context: {} }),
    ).toBe(false);
    expect(
      matchesSelector(selector, {
        schema_name: 'user.message.v1',
        tags: ['chat:input'],
        context: { content: ['show', 'file'] },
      }),
    ).toBe(true);
  });

  it("finds the words of the stored text itself, without the event's word limits", () => {
    const long = `${Array.from({ length: 3000 }, (_, i) => `w${i}`).join(' ')} javascript`;
    expect(contextWords({ content: long }).truncated).toBe(true);
    expect(
      matchesSelector(selector, {
        schema_name: 'user.message.v1',
        tags: ['chat:input'],
        context: { content: long },
      }),
    ).toBe(true);
    expect(
      matchesSelector(selector, {
        schema_name: 'user.message.v1',
        tags: ['chat:input'],
        context: { content: 'Can you list my files?' },
        // Stale or partial words in the subject are ignored.
        words: {},
        words_truncated: true,
      }),
    ).toBe(true);
    expect(
      matchesSelector(selector, {
        schema_name: 'user.message.v1',
        tags: ['chat:input'],
        context: { content: 'hello there' },
        words: { content: ['list'] },
      }),
    ).toBe(false);
  });

  it('computes the tag map itself, so a stored breadcrumb can be passed as is', () => {
    const allTags = { all_tags: ['x.y', 'z'] };
    expect(matchesSelector(allTags, { schema_name: 'a.b.v1', tags: ['z', 'x.y'], context: {} })).toBe(true);
    expect(matchesSelector(allTags, { schema_name: 'a.b.v1', tags: ['z'], context: {} })).toBe(false);
  });
});

describe('patternHash', () => {
  it('is the same for equal patterns whatever their key order', () => {
    const a = { source: ['crumbs'], detail: { workspace: ['w'], schema_name: ['x.v1'] } };
    const b = { detail: { schema_name: ['x.v1'], workspace: ['w'] }, source: ['crumbs'] };
    expect(patternHash(a)).toBe(patternHash(b));
    expect(patternHash(a)).toMatch(/^[0-9a-f]{64}$/);
    expect(canonicalJson(b)).toBe(
      '{"detail":{"schema_name":["x.v1"],"workspace":["w"]},"source":["crumbs"]}',
    );
  });

  it('changes when the pattern changes', () => {
    const base = compileTriggerPattern({
      workspace: WORKSPACE,
      principal: PRINCIPAL,
      selectors: [onPath('eq', 1)],
    });
    const other = compileTriggerPattern({
      workspace: WORKSPACE,
      principal: PRINCIPAL,
      selectors: [onPath('eq', 2)],
    });
    expect(patternHash(base)).not.toBe(patternHash(other));
  });
});
