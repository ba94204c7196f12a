/**
 * Request generators for the API fuzz suite (`test/integration/api-fuzz.test.ts`), built with fast-check.
 *
 * Bodies are generated as JSON *text* from a small tree (`J`), not with `JSON.stringify` of objects: that is the only
 * way to send what a hostile client sends — `__proto__` keys (an object literal would set a prototype instead),
 * numbers JSON allows but doubles cannot hold (`1e400`), numbers DynamoDB cannot store (`8e307`), lone surrogates
 * (escaped `\ud800`), duplicate keys and nesting of any depth.
 *
 * Two kinds of request:
 * - `anyRequest`: every route, method, header and body shape — valid, boundary and hostile — mostly against the
 *   fuzz workspace, and one in ten a well-formed write that reaches the store. The server must answer it without a
 *   5xx.
 * - `rejectedWrite`: a write that must be refused (each carries one named poison) against the reject workspace,
 *   whose items are compared before and after: a refused write changes nothing.
 */
import fc from 'fast-check';
import type { RouteDescription } from '#shared/core/api/api.ts';

export interface FuzzRequest {
  method: string;
  /** Path with its segments already percent-encoded (or deliberately not). */
  path: string;
  query: [string, string][];
  headers: Record<string, string>;
  body?: string;
  /** For rejected writes: why it must be refused. */
  poison?: string;
}

export interface FuzzTargets {
  /** Anything goes here. */
  workspace: string;
  /** Only refused writes go here; seeded with `rejectIds`. */
  rejectWorkspace: string;
  /** Breadcrumbs that exist in `workspace` when the run starts (schema fuzz.seed.v1). */
  ids: readonly string[];
  /** Breadcrumbs that exist in `rejectWorkspace` (schema fuzz.seed.v1, version 1). */
  rejectIds: readonly string[];
  token: string;
  /** May use only `scopedWorkspace`. */
  scopedToken: string;
  scopedWorkspace: string;
  routes: readonly RouteDescription[];
}

// ---------------------------------------------------------------------------------------------------------------
// JSON text

type J = { t: 'raw'; text: string } | { t: 'arr'; items: J[] } | { t: 'obj'; entries: [string, J][] };

const raw = (text: string): J => ({ t: 'raw', text });
const str = (s: string): J => raw(JSON.stringify(s));
const arr = (items: J[]): J => ({ t: 'arr', items });
const obj = (entries: [string, J][]): J => ({ t: 'obj', entries });

export function jsonText(j: J): string {
  switch (j.t) {
    case 'raw':
      return j.text;
    case 'arr':
      return `[${j.items.map(jsonText).join(',')}]`;
    case 'obj':
      return `{${j.entries.map(([k, v]) => `${JSON.stringify(k)}:${jsonText(v)}`).join(',')}}`;
  }
}

/** `depth` levels of nesting around `leaf`, objects and arrays alternating (as text: depth may be 40,000). */
function nested(depth: number, leaf: J = raw('1')): J {
  let open = '';
  let close = '';
  for (let i = depth - 1; i >= 0; i--) {
    open += i % 2 === 0 ? '{"n":' : '[';
    close = (i % 2 === 0 ? '}' : ']') + close;
  }
  return raw(`${open}${jsonText(leaf)}${close}`);
}

const loneSurrogate = fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c));
const withLoneSurrogate = fc
  .tuple(fc.string({ maxLength: 6 }), loneSurrogate, fc.string({ maxLength: 6 }))
  .map(([a, s, b]) => `${a}${s}${b}`);

const PROTOTYPE_KEYS = ['__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'valueOf'];
const ODD_KEYS = ['', 'a.b', '$', '$.x', '[0]', ' ', '#', 'a#b', '\u0000', 'ключ', '🔑', 'x'.repeat(300)];

const key = fc.oneof(
  { weight: 8, arbitrary: fc.string({ maxLength: 10 }) },
  { weight: 2, arbitrary: fc.string({ unit: 'grapheme', maxLength: 8 }) },
  { weight: 1, arbitrary: fc.constantFrom(...PROTOTYPE_KEYS.filter((k) => k !== '__proto__')) },
);

/** Numbers at and beyond every boundary: doubles, DynamoDB's range, JSON's own, safe integers. */
const HOSTILE_NUMBERS = [
  '8e307',
  '1e126',
  '-1e126',
  '9.99e125',
  '1e-130',
  '1e-131',
  '5e-324',
  '1e400',
  '-1e400',
  '1e-400',
  '1.7976931348623157e308',
  '9007199254740993',
  '123456789012345678901234567890',
  '-0',
  '0.1e-129',
  '1E+21',
];
const OUT_OF_RANGE_NUMBERS = ['8e307', '1e126', '-1e130', '1e-131', '5e-324', '1e400', '-1e400', '1e200'];

const number = fc.oneof(
  { weight: 4, arbitrary: fc.integer().map((n) => raw(String(n))) },
  {
    weight: 3,
    arbitrary: fc.double({ noNaN: true, noDefaultInfinity: true }).map((n) => raw(JSON.stringify(n))),
  },
  { weight: 2, arbitrary: fc.constantFrom(...HOSTILE_NUMBERS).map(raw) },
);

const text = fc.oneof(
  { weight: 6, arbitrary: fc.string({ maxLength: 24 }) },
  { weight: 3, arbitrary: fc.string({ unit: 'grapheme', maxLength: 16 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 8 }) },
  { weight: 1, arbitrary: withLoneSurrogate },
  {
    weight: 1,
    arbitrary: fc.constantFrom('', '\u0000', '\n\t', '{{x}}', '$..*', '\u202e', 'x'.repeat(3000)),
  },
);

const leaf: fc.Arbitrary<J> = fc.oneof(
  { weight: 4, arbitrary: text.map(str) },
  { weight: 3, arbitrary: number },
  { weight: 2, arbitrary: fc.constantFrom('true', 'false', 'null').map(raw) },
);

/** Any JSON value, nesting up to a few levels, with odd keys now and then. */
const jsonTree: fc.Arbitrary<J> = fc.letrec<{ value: J }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    { weight: 5, arbitrary: leaf },
    { weight: 1, arbitrary: fc.array(tie('value'), { maxLength: 4 }).map(arr) },
    {
      weight: 2,
      arbitrary: fc
        .array(
          fc.tuple(fc.oneof({ weight: 9, arbitrary: key }, fc.constantFrom(...ODD_KEYS)), tie('value')),
          {
            maxLength: 4,
          },
        )
        .map(obj),
    },
  ),
})).value;

/**
 * Keys JavaScript objects inherit, which a context may hold as plain data (`__proto__` is refused: it is a poison
 * below). Values an object-type check could be fooled by (`{"constructor":{"name":"String"}}`) come with them.
 */
const INHERITED_KEYS = PROTOTYPE_KEYS.filter((k) => k !== '__proto__');
const INHERITED_KEY_VALUES = [
  '{"constructor":{"name":"String"}}',
  '{"constructor":{"name":"Set"},"size":1}',
  '{"constructor":{"name":"Map"}}',
  '{"constructor":{"name":"Buffer"}}',
  '{"constructor":{"name":"Number"}}',
  '{"prototype":{"constructor":1},"valueOf":"v","toString":null}',
  '[{"constructor":"x"}]',
];

/** A small, storable JSON object: what a context usually is — now and then with keys objects inherit. */
const safeContext: fc.Arbitrary<J> = fc
  .array(
    fc.tuple(
      fc.oneof(
        { weight: 8, arbitrary: fc.stringMatching(/^[a-z][a-z0-9_]{0,8}$/) },
        { weight: 1, arbitrary: fc.constantFrom(...INHERITED_KEYS) },
      ),
      fc.oneof(
        { weight: 3, arbitrary: fc.string({ maxLength: 20 }).map(str) },
        { weight: 3, arbitrary: fc.integer({ min: -1e9, max: 1e9 }).map((n) => raw(String(n))) },
        {
          weight: 3,
          arbitrary: fc.constantFrom('true', 'false', 'null', '1.5', '[1,2,3]', '{"k":"v"}').map(raw),
        },
        { weight: 1, arbitrary: fc.constantFrom(...INHERITED_KEY_VALUES).map(raw) },
      ),
    ),
    { maxLength: 5 },
  )
  .map(obj);

// ---------------------------------------------------------------------------------------------------------------
// Bodies

const SCHEMAS = ['note.v1', 'fuzz.item.v1', 'user.profile.v1', 'fz.x_y-z.v2', 'document.v1'];
const schemaName = fc.oneof(
  { weight: 8, arbitrary: fc.constantFrom(...SCHEMAS) },
  { weight: 1, arbitrary: fc.stringMatching(/^fz\.[a-z0-9_-]{1,12}\.v[0-9]$/) },
);
const tag = fc.oneof(
  fc.stringMatching(/^[a-z][a-z0-9:_-]{0,12}$/),
  fc.string({ minLength: 1, maxLength: 12 }),
);
const validHints = fc.constantFrom(
  '{"exclude":["secret"]}',
  '{"include":["a","b"]}',
  '{"transform":{"s":{"type":"template","template":"{{a}} and {{#each b}}{{this}}{{/each}}"}},"mode":"merge"}',
  '{"transform":{"x":{"type":"extract","value":"$.a"},"l":{"type":"literal","literal":[1,{"k":null}]}}}',
  '{"transform":{"f":{"type":"format","format":"{a} / {b}"}}}',
  '{"include":["constructor","prototype.x","a"]}',
  '{"exclude":["constructor.name","__proto__.toString","toString"]}',
  '{"transform":{"f":{"type":"format","format":"{constructor.name}|{valueOf}"},"constructor":{"type":"extract","value":"$.constructor"}},"mode":"merge"}',
);
const validExpiresAt = fc.oneof(
  fc.integer({ min: 1_900_000_000, max: 2_500_000_000 }).map((n) => raw(String(n))),
  fc.constantFrom('"2031-01-01T00:00:00Z"', '"2040-06-30T12:00:00.000+02:00"').map(raw),
);

type Fields = [string, J][];

/** A create body the API accepts (fields in random order, optional ones now and then). */
const validCreateFields: fc.Arbitrary<Fields> = fc
  .record(
    {
      schema_name: schemaName.map(str),
      title: fc.string({ maxLength: 40 }).map(str),
      tags: fc.array(tag, { maxLength: 4 }).map((t) => arr(t.map(str))),
      context: safeContext,
      llm_hints: validHints.map(raw),
      expires_at: validExpiresAt,
    },
    { requiredKeys: ['schema_name', 'context'] },
  )
  .map((r) => Object.entries(r) as Fields);

const validPatchFields: fc.Arbitrary<Fields> = fc
  .record(
    {
      title: fc.string({ maxLength: 40 }).map(str),
      tags: fc.array(tag, { maxLength: 4 }).map((t) => arr(t.map(str))),
      context: safeContext,
      llm_hints: fc.oneof(validHints.map(raw), fc.constant(raw('null'))),
      expires_at: fc.oneof(validExpiresAt, fc.constant(raw('null'))),
    },
    { requiredKeys: [] },
  )
  .map((r) => Object.entries(r) as Fields)
  .filter((f) => f.length > 0);

/** Sets (or adds) one field. */
function withField(fields: Fields, name: string, value: J): Fields {
  return [...fields.filter(([k]) => k !== name), [name, value]];
}

/** `value` placed somewhere inside the context, a few levels down. */
const inContext = (value: J) =>
  fc
    .tuple(safeContext, fc.integer({ min: 0, max: 3 }), fc.stringMatching(/^[a-z]{1,6}$/))
    .map(([context, depth, name]): J => {
      const entries = context.t === 'obj' ? context.entries : [];
      return obj([...entries, [name, depth === 0 ? value : nested(depth, value)]]);
    });

interface Poison {
  name: string;
  /** Applies to the fields of a valid create (or patch) body. */
  apply: fc.Arbitrary<(fields: Fields) => Fields>;
}

const set =
  (name: string, value: J) =>
  (fields: Fields): Fields =>
    withField(fields, name, value);

/** Mutations that make any valid create or patch body one the API must refuse. */
const POISONS: Poison[] = [
  {
    name: 'a number DynamoDB cannot store in context',
    apply: fc
      .constantFrom(...OUT_OF_RANGE_NUMBERS)
      .chain((n) => inContext(raw(n)).map((c) => set('context', c))),
  },
  {
    name: 'a lone surrogate in a context value',
    apply: withLoneSurrogate.chain((s) => inContext(str(s)).map((c) => set('context', c))),
  },
  {
    name: 'a lone surrogate in a context key',
    apply: withLoneSurrogate.map((k) => set('context', obj([[k, raw('1')]]))),
  },
  { name: 'a lone surrogate in the title', apply: withLoneSurrogate.map((s) => set('title', str(s))) },
  { name: 'a lone surrogate in a tag', apply: withLoneSurrogate.map((s) => set('tags', arr([str(s)]))) },
  {
    name: 'a __proto__ key in context',
    apply: inContext(obj([['__proto__', obj([['polluted', raw('true')]])]])).map((c) => set('context', c)),
  },
  { name: 'a __proto__ key at the top', apply: fc.constant((f: Fields) => [...f, ['__proto__', obj([])]]) },
  { name: 'an empty key in context', apply: inContext(obj([['', raw('1')]])).map((c) => set('context', c)) },
  {
    name: 'context nested deeper than DynamoDB allows',
    apply: fc.integer({ min: 32, max: 60 }).map((d) => set('context', obj([['deep', nested(d)]]))),
  },
  {
    name: 'context nested thousands of levels deep',
    apply: fc.integer({ min: 5_000, max: 40_000 }).map((d) => set('context', obj([['deep', nested(d)]]))),
  },
  {
    name: 'an unknown field',
    apply: fc
      .tuple(fc.stringMatching(/^[a-z_]{1,12}$/), jsonTree)
      .filter(([k]) => !['title', 'tags', 'context', 'llm_hints', 'expires_at', 'schema_name'].includes(k))
      .map(([k, v]) => (f: Fields) => [...f, [k, v]]),
  },
  {
    name: 'a field of the wrong type',
    apply: fc
      .constantFrom(
        ...Object.entries({
          title: ['1', '[]', '{}', 'true', 'null'],
          tags: ['1', '"x"', '{}', 'true', '[{"a":1}]', '[1]', 'null'],
          context: ['1', '"x"', '[]', 'true', 'null'],
          llm_hints: ['1', '"x"', '[]', 'true', '{"mode":"both"}'],
          expires_at: ['"x"', '[]', '{}', 'true', '"2024-13-45T99:00:00Z"', '"2031-01-01"'],
        }).flatMap(([field, values]) => values.map((value) => [field, value] as const)),
      )
      .map(([field, value]) => set(field, raw(value))),
  },
  {
    name: 'context that is not an object',
    apply: fc.constantFrom('[]', '"text"', '42', 'true').map((v) => set('context', raw(v))),
  },
  {
    name: 'too many or too long tags',
    apply: fc
      .constantFrom(
        arr(Array.from({ length: 51 }, (_, i) => str(`t${i}`))),
        arr([str('x'.repeat(129))]),
        arr([str('line\nbreak')]),
        arr([str('')]),
      )
      .map((t) => set('tags', t)),
  },
  { name: 'a title longer than 512', apply: fc.constant(set('title', str('t'.repeat(513)))) },
  {
    name: 'an expiry out of range',
    apply: fc
      .constantFrom('1e300', '0', '-5', '1.5', '253402300800', '"1969-12-31T23:59:59Z"', '"not a date"')
      .map((v) => set('expires_at', raw(v))),
  },
  {
    name: 'llm_hints that do not compile',
    apply: fc
      .constantFrom(
        '{"transform":{"x":{"type":"template","template":"{{#if}}"}}}',
        '{"transform":{"x":{"type":"extract","value":"$..[?("}}}',
        '{"transform":{"x":{"type":"template","template":"{{> partial}}"}}}',
        '{"exclude":"secret"}',
        '{"bogus":true}',
        '{"transform":{"x":{"type":"literal","literal":8e307}}}',
        '{"transform":{"x":{"type":"shell","cmd":"rm -rf"}}}',
      )
      .map((v) => set('llm_hints', raw(v))),
  },
  {
    // Contexts past an item's size are stored as a blob (the attachments room); the reference is crumbs' own.
    name: 'a context forging a spilled-context reference',
    apply: fc.constant(set('context', obj([['$spilled', obj([['id', str(`att_${'0'.repeat(64)}`)]])]]))),
  },
];

/** Poisons that only make sense for a create body (schema_name). */
const CREATE_POISONS: Poison[] = [
  {
    name: 'a bad schema_name',
    apply: fc
      .constantFrom(
        '"Note.V1"',
        '"note"',
        '"note.v"',
        '""',
        '5',
        'null',
        `"${'a'.repeat(260)}.v1"`,
        '"tool.def.v1 "',
        '"a..b.v1"',
      )
      .map((v) => set('schema_name', raw(v))),
  },
  { name: 'no schema_name', apply: fc.constant((f: Fields) => f.filter(([k]) => k !== 'schema_name')) },
  { name: 'no context', apply: fc.constant((f: Fields) => f.filter(([k]) => k !== 'context')) },
];

const poisonedCreate = fc
  .tuple(validCreateFields, fc.constantFrom(...POISONS, ...CREATE_POISONS))
  .chain(([fields, poison]) =>
    poison.apply.map((apply) => ({ body: jsonText(obj(apply(fields))), poison: poison.name })),
  );

const poisonedPatch = fc.oneof(
  fc
    .tuple(validPatchFields, fc.constantFrom(...POISONS))
    .chain(([fields, poison]) =>
      poison.apply.map((apply) => ({ body: jsonText(obj(apply(fields))), poison: poison.name })),
    ),
  fc.constant({ body: '{}', poison: 'an empty patch' }),
);

/** Bodies that are not a JSON object at all. */
const notJson = fc.oneof(
  fc.constantFrom(
    '',
    ' ',
    'null',
    '[]',
    '"text"',
    '42',
    'true',
    '{',
    '{"a":',
    "{'a':1}",
    '{"a":1}}',
    '\u0000',
  ),
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
);

const oversize = fc.constantFrom(
  jsonText(
    obj([
      ['schema_name', str('note.v1')],
      ['context', obj([['big', str('x'.repeat(410 * 1024))]])],
    ]),
  ),
  jsonText(
    obj([
      ['schema_name', str('note.v1')],
      ['context', obj([['a', str('x'.repeat(300 * 1024))]])],
      [
        'llm_hints',
        obj([
          [
            'transform',
            obj([
              [
                'l',
                obj([
                  ['type', str('literal')],
                  ['literal', str('y'.repeat(90 * 1024))],
                ]),
              ],
            ]),
          ],
        ]),
      ],
    ]),
  ),
);

/** Any body shape, weighted toward small ones. */
const anyBody: fc.Arbitrary<string | undefined> = fc.oneof(
  { weight: 120, arbitrary: validCreateFields.map((f) => jsonText(obj(f))) },
  { weight: 60, arbitrary: validPatchFields.map((f) => jsonText(obj(f))) },
  { weight: 80, arbitrary: poisonedCreate.map((p) => p.body) },
  { weight: 40, arbitrary: poisonedPatch.map((p) => p.body) },
  { weight: 40, arbitrary: jsonTree.map(jsonText) },
  { weight: 20, arbitrary: notJson },
  { weight: 20, arbitrary: fc.constant(undefined) },
  { weight: 1, arbitrary: oversize },
);

// ---------------------------------------------------------------------------------------------------------------
// Headers, paths, queries

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'] as const;

/** Header values fetch can send (Latin-1 without CR, LF or NUL). */
const headerText = fc.string({
  unit: fc
    .integer({ min: 0x20, max: 0xff })
    .filter((c) => c !== 0x7f)
    .map((c) => String.fromCharCode(c)),
  maxLength: 40,
});

function headersFor(t: FuzzTargets) {
  return fc.record(
    {
      authorization: fc.oneof(
        { weight: 24, arbitrary: fc.constant(`Bearer ${t.token}`) },
        { weight: 2, arbitrary: fc.constant(`Bearer ${t.scopedToken}`) },
        {
          weight: 1,
          arbitrary: fc.constantFrom('', 'Bearer', 'Bearer ', `Basic ${t.token}`, `bearer ${t.token}`),
        },
        { weight: 1, arbitrary: headerText.map((s) => `Bearer ${s}`) },
      ),
      'content-type': fc.oneof(
        { weight: 12, arbitrary: fc.constant('application/json') },
        {
          weight: 3,
          arbitrary: fc.constantFrom(
            'application/json; charset=utf-8',
            'application/merge-patch+json',
            'APPLICATION/JSON',
            'text/plain',
            'application/x-www-form-urlencoded',
            'multipart/form-data; boundary=x',
            'application/jsonx',
            'json',
            '',
          ),
        },
        { weight: 1, arbitrary: headerText },
      ),
      'if-match': fc.oneof(
        fc.constantFrom('1', '2', '"1"', 'W/"1"', '*', '', 'abc', '99999999999999999999', '-1', '1.5', '999'),
        headerText,
      ),
      'if-none-match': fc.constantFrom('*', '"1"', 'junk'),
      'idempotency-key': fc.oneof(
        fc.stringMatching(/^[A-Za-z0-9-]{1,16}$/),
        fc.constantFrom('', ' ', 'has space', 'k'.repeat(256), 'ünï'),
        headerText,
      ),
    },
    { requiredKeys: [] },
  );
}

const freshId = fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._:-]{0,20}$/);
const HOSTILE_SEGMENTS = [
  '',
  '%',
  '%E0%A4%A',
  '%ED%A0%80',
  '%00',
  '%2F',
  'a%2Fb',
  '..',
  '.',
  'search',
  'a#b',
  'x'.repeat(200),
  '%F0%9F%94%91',
  'ünï',
];
const hostileSegment = fc.oneof(
  fc.constantFrom(...HOSTILE_SEGMENTS),
  fc.string({ unit: 'grapheme', maxLength: 12 }).map(encodeURIComponent),
);

function cursorFor(t: FuzzTargets) {
  const b64 = (v: unknown) =>
    Buffer.from(typeof v === 'string' ? v : JSON.stringify(v), 'utf8').toString('base64url');
  const pk = `${t.workspace}#s#note.v1`;
  const ref = fc.oneof(
    fc.string({ maxLength: 30 }),
    fc.string({ unit: 'grapheme', minLength: 300, maxLength: 700 }),
    withLoneSurrogate,
  );
  return fc.oneof(
    fc.string({ maxLength: 30 }),
    fc.constantFrom(
      '',
      'null',
      b64('null'),
      b64('[]'),
      b64({ v: 1 }),
      b64({ v: 1e9 }),
      b64({ v: 'x' }),
      b64('{'),
    ),
    fc
      .record({ id: ref, workspace: fc.oneof(fc.constant(t.workspace), ref), gsi1sk: ref })
      .map((k) => b64({ ...k, gsi1pk: pk })),
    fc.record({ id: ref, gsi1sk: fc.oneof(ref, fc.integer()) }).map((k) => b64({ ...k, gsi1pk: pk })),
    jsonTree.map((j) => b64(jsonText(j))),
  );
}

function queryFor(template: string, t: FuzzTargets): fc.Arbitrary<[string, string][]> {
  const limit = fc.constantFrom(
    '1',
    '25',
    '100',
    '0',
    '101',
    '-1',
    'abc',
    '1e2',
    '',
    '2.5',
    '99999999999999999999',
  );
  const junk = fc.array(fc.tuple(fc.string({ maxLength: 8 }), fc.string({ maxLength: 12 })), {
    maxLength: 2,
  });
  const param = (name: string, value: fc.Arbitrary<string>) =>
    fc.option(
      value.map((v): [string, string] => [name, v]),
      { nil: undefined, freq: 2 },
    );
  const schemaParam = fc.oneof(
    { weight: 5, arbitrary: fc.constantFrom(...SCHEMAS) },
    { weight: 1, arbitrary: fc.constantFrom('', 'Bad', `${'a'.repeat(300)}.v1`, 'x'.repeat(3000)) },
    { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 20 }) },
  );
  const tagParam = fc.oneof(tag, fc.constantFrom('', 'x'.repeat(129), 'y'.repeat(5000), 'a\nb'));
  const compact = (params: ([string, string] | undefined)[], extra: [string, string][]) => [
    ...params.filter((p): p is [string, string] => p !== undefined),
    ...extra,
  ];
  if (template.endsWith('/breadcrumbs')) {
    return fc
      .tuple(
        param('schema_name', schemaParam),
        param('tag', tagParam),
        param('limit', limit),
        param('cursor', cursorFor(t)),
        param('view', fc.constantFrom('full', 'context', '', 'FULL', 'x')),
        junk,
      )
      .map(([a, b, c, d, e, extra]) => compact([a, b, c, d, e], extra));
  }
  if (template.endsWith('/search')) {
    return fc
      .tuple(
        param('q', fc.oneof(fc.string({ maxLength: 30 }), fc.constantFrom('', '  ', 'q'.repeat(2001)))),
        param('nn', fc.constantFrom('1', '5', '50', '51', '0', '-3', 'x', '')),
        param('schema_name', schemaParam),
        junk,
      )
      .map(([a, b, c, extra]) => compact([a, b, c], extra));
  }
  if (template.endsWith('/history')) {
    return fc
      .tuple(param('limit', limit), param('cursor', cursorFor(t)), junk)
      .map(([a, b, extra]) => compact([a, b], extra));
  }
  return junk;
}

function pathFor(template: string, workspace: fc.Arbitrary<string>, id: fc.Arbitrary<string>) {
  const n = fc.constantFrom('1', '2', '0', '-1', 'abc', '1e3', '99999999999999999999', '1.5', '%20');
  return fc
    .record({ ws: workspace, id, n })
    .map(({ ws, id: i, n: v }) => template.replace('{ws}', ws).replace('{id}', i).replace('{n}', v));
}

function workspaceFor(t: FuzzTargets) {
  return fc.oneof(
    { weight: 20, arbitrary: fc.constant(t.workspace) },
    { weight: 1, arbitrary: fc.constant(t.scopedWorkspace) },
    { weight: 2, arbitrary: hostileSegment },
    { weight: 1, arbitrary: fc.constantFrom('x'.repeat(65), 'ws_1-ok', 'UPPER') },
  );
}

function idFor(t: FuzzTargets) {
  return fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom(...t.ids) },
    { weight: 3, arbitrary: freshId },
    { weight: 2, arbitrary: hostileSegment },
  );
}

/**
 * A write the API should accept: the right token and content type, a valid body. Random headers refuse most
 * generated writes before they reach the store, so without these the store's side of a body (how its context is
 * marshalled, keys such as `constructor` included) would hardly ever be exercised.
 */
function wellFormedWrite(t: FuzzTargets): fc.Arbitrary<FuzzRequest> {
  const base = `/v1/workspaces/${t.workspace}/breadcrumbs`;
  const headers = { authorization: `Bearer ${t.token}`, 'content-type': 'application/json' };
  const write = (method: string, path: string, fields: Fields): FuzzRequest => ({
    method,
    path,
    query: [],
    headers,
    body: jsonText(obj(fields)),
  });
  return fc.oneof(
    validCreateFields.map((f) => write('POST', base, f)),
    fc.tuple(validCreateFields, freshId).map(([f, id]) => write('PUT', `${base}/fresh-${id}`, f)),
    fc
      .tuple(validPatchFields, fc.constantFrom(...t.ids))
      .map(([f, id]) => write('PATCH', `${base}/${id}`, f)),
  );
}

/** Any request, against any route (or none), mostly in the fuzz workspace. */
export function anyRequest(t: FuzzTargets): fc.Arbitrary<FuzzRequest> {
  const routed = fc.constantFrom(...t.routes).chain((route) =>
    fc.record({
      method: fc.oneof(
        { weight: 4, arbitrary: fc.constantFrom(...route.methods) },
        { weight: 1, arbitrary: fc.constantFrom(...METHODS) },
      ),
      path: pathFor(route.template, workspaceFor(t), idFor(t)),
      query: queryFor(route.template, t),
    }),
  );
  const unrouted = fc.record({
    method: fc.constantFrom(...METHODS),
    path: fc.oneof(
      fc.constantFrom('/', '/v1', '/v1/workspaces', `/v1/workspaces/${t.workspace}`, '/health/', '/v2/x'),
      fc.array(hostileSegment, { minLength: 1, maxLength: 6 }).map((segments) => `/${segments.join('/')}`),
      fc.constant(`/v1/workspaces/${t.workspace}/breadcrumbs/${t.ids[0]}/versions/1/extra`),
    ),
    query: fc.constant([] as [string, string][]),
  });
  const generated = fc
    .record({
      target: fc.oneof({ weight: 12, arbitrary: routed }, { weight: 1, arbitrary: unrouted }),
      headers: headersFor(t),
      body: anyBody,
    })
    .map(({ target, headers, body }) => {
      const hasBody = body !== undefined && target.method !== 'GET' && target.method !== 'HEAD';
      return {
        method: target.method,
        path: target.path,
        query: target.query,
        headers: headers as Record<string, string>,
        ...(hasBody ? { body } : {}),
      };
    });
  return fc.oneof({ weight: 9, arbitrary: generated }, { weight: 1, arbitrary: wellFormedWrite(t) });
}

/**
 * A write to the reject workspace that must be refused: a poisoned body, or a valid body with a header or
 * precondition that must fail. Every one names its poison.
 */
export function rejectedWrite(t: FuzzTargets): fc.Arbitrary<FuzzRequest> {
  const base = `/v1/workspaces/${t.rejectWorkspace}/breadcrumbs`;
  const seeded = fc.constantFrom(...t.rejectIds);
  const json = { authorization: `Bearer ${t.token}`, 'content-type': 'application/json' };
  const validCreate = validCreateFields.map((f) => jsonText(obj(f)));
  const validPatch = validPatchFields.map((f) => jsonText(obj(f)));
  const req = (
    method: string,
    path: string,
    body: string,
    poison: string,
    headers: Record<string, string> = json,
  ) => ({
    method,
    path,
    query: [] as [string, string][],
    headers,
    body,
    poison,
  });
  return fc.oneof(
    // Poisoned bodies on every write route.
    { weight: 8, arbitrary: poisonedCreate.map((p) => req('POST', base, p.body, p.poison)) },
    {
      weight: 4,
      arbitrary: fc
        .tuple(poisonedCreate, fc.oneof(seeded, freshId))
        .map(([p, id]) => req('PUT', `${base}/${id}`, p.body, p.poison)),
    },
    {
      weight: 4,
      arbitrary: fc
        .tuple(poisonedPatch, seeded)
        .map(([p, id]) => req('PATCH', `${base}/${id}`, p.body, p.poison)),
    },
    // Valid bodies that a header or precondition must stop.
    {
      weight: 2,
      arbitrary: fc
        .tuple(
          validCreate,
          fc.constantFrom(
            'text/plain',
            'application/x-www-form-urlencoded',
            'multipart/form-data',
            'application/jsonx',
          ),
        )
        .map(([body, type]) =>
          req('POST', base, body, `Content-Type ${type}`, { ...json, 'content-type': type }),
        ),
    },
    {
      weight: 2,
      arbitrary: fc
        .tuple(validCreate, fc.constantFrom('', 'has space', 'k'.repeat(256), 'tab\there'))
        .map(([body, key]) =>
          req('POST', base, body, 'a bad Idempotency-Key', { ...json, 'idempotency-key': key }),
        ),
    },
    {
      weight: 2,
      arbitrary: fc
        .tuple(
          fc.constantFrom('POST', 'PUT', 'PATCH', 'DELETE'),
          validCreate,
          seeded,
          fc.constantFrom(undefined, '', 'Bearer nope', `Bearer ${t.scopedToken}`, `Basic ${t.token}`),
        )
        .map(([method, body, id, authorization]) => {
          const headers: Record<string, string> = { 'content-type': 'application/json' };
          if (authorization !== undefined) headers.authorization = authorization;
          return req(
            method,
            method === 'POST' ? base : `${base}/${id}`,
            body,
            'no or a foreign token',
            headers,
          );
        }),
    },
    {
      weight: 2,
      arbitrary: fc
        .tuple(
          fc.constantFrom('PUT', 'PATCH', 'DELETE'),
          validPatch,
          validCreate,
          seeded,
          fc.constantFrom('999', '"7"', 'abc', '', '1.5', '*'),
        )
        .map(([method, patch, create, id, ifMatch]) =>
          req(method, `${base}/${id}`, method === 'PATCH' ? patch : create, `If-Match ${ifMatch}`, {
            ...json,
            'if-match': ifMatch,
          }),
        ),
    },
    {
      weight: 1,
      arbitrary: fc.tuple(validCreate, seeded).map(([body, id]) =>
        req('PUT', `${base}/${id}`, body, 'If-None-Match * on an existing id', {
          ...json,
          'if-none-match': '*',
        }),
      ),
    },
    {
      weight: 1,
      arbitrary: fc
        .tuple(validCreateFields, seeded)
        .map(([fields, id]) =>
          req(
            'PUT',
            `${base}/${id}`,
            jsonText(obj(withField(fields, 'schema_name', str('other.schema.v1')))),
            'a PUT changing the schema',
          ),
        ),
    },
    {
      weight: 1,
      arbitrary: notJson.map((body) => req('POST', base, body, 'a body that is not a JSON object')),
    },
    {
      weight: 1,
      arbitrary: fc
        .tuple(notJson, seeded)
        .map(([body, id]) => req('PATCH', `${base}/${id}`, body, 'a patch that is not a JSON object')),
    },
  );
}
