import { describe, expect, it } from 'vitest';
import {
  applyInputTransformer,
  renderInputTemplate,
  targetInput,
} from '#local/eventbridge/input-transformer.ts';
import { evaluateJsonPath, JsonPathError, parseJsonPath } from '#local/eventbridge/json-path.ts';

/** The example event of the user guide page "Amazon EventBridge input transformation". */
const event = {
  version: '0',
  id: '7bf73129-1428-4cd3-a780-95db273d1602',
  'detail-type': 'EC2 Instance State-change Notification',
  source: 'aws.ec2',
  account: '123456789012',
  time: '2015-11-11T21:29:54Z',
  region: 'us-east-1',
  resources: ['arn:aws:ec2:us-east-1:123456789012:instance/i-abcd1111'],
  detail: { 'instance-id': 'i-0123456789', state: 'RUNNING' },
};

/** The page's Input Path. */
const InputPathsMap = {
  timestamp: '$.time',
  instance: '$.detail.instance-id',
  state: '$.detail.state',
  resource: '$.resources[0]',
};

const context = {
  ruleArn: 'arn:aws:events:us-east-2:123456789012:rule/example',
  ruleName: 'example',
  ingestionTime: '2015-11-11T21:29:55Z',
};

const render = (InputTemplate: string) =>
  applyInputTransformer({ InputPathsMap, InputTemplate }, event, context);

describe('input transformer: the documented examples', () => {
  it('simple string', () => {
    expect(render('"instance <instance> is in <state>"')).toBe('"instance i-0123456789 is in RUNNING"');
  });

  it('string with escaped quotes', () => {
    expect(render('"instance \\"<instance>\\" is in <state>"')).toBe(
      '"instance \\"i-0123456789\\" is in RUNNING"',
    );
  });

  it('simple JSON', () => {
    const out = render('{\n  "instance" : <instance>,\n  "state": <state>\n}');
    expect(out).toBe('{\n  "instance" : "i-0123456789",\n  "state": "RUNNING"\n}');
  });

  it('JSON with strings and variables', () => {
    const out = render(
      '{\n "instance" : <instance>,\n "state": "<state>",\n "instanceStatus": "instance \\"<instance>\\" is in <state>"\n}',
    );
    expect(out).toBe(
      '{\n "instance" : "i-0123456789",\n "state": "RUNNING",\n "instanceStatus": "instance \\"i-0123456789\\" is in RUNNING"\n}',
    );
    expect(JSON.parse(out)).toEqual({
      instance: 'i-0123456789',
      state: 'RUNNING',
      instanceStatus: 'instance "i-0123456789" is in RUNNING',
    });
  });

  it('JSON with a mix of variables and static information', () => {
    const out = render(
      '{\n  "instance" : <instance>,\n  "state": [ 9, <state>, true ],\n  "Transformed" : "Yes"\n}',
    );
    expect(JSON.parse(out)).toEqual({
      instance: 'i-0123456789',
      state: [9, 'RUNNING', true],
      Transformed: 'Yes',
    });
  });

  it('including reserved variables in JSON', () => {
    const out = render(
      '{"instance" : <instance>, "state": <state>, "ruleArn" : <aws.events.rule-arn>, "ruleName" : <aws.events.rule-name>, "originalEvent" : <aws.events.event.json>}',
    );
    expect(JSON.parse(out)).toEqual({
      instance: 'i-0123456789',
      state: 'RUNNING',
      ruleArn: 'arn:aws:events:us-east-2:123456789012:rule/example',
      ruleName: 'example',
      originalEvent: event,
    });
  });

  it('<aws.events.event> is the event without detail', () => {
    const { detail: _d, ...rest } = event;
    expect(JSON.parse(render('{"e": <aws.events.event>}'))).toEqual({ e: rest });
  });

  it('including reserved variables in a string', () => {
    expect(render('"<aws.events.rule-name> triggered"')).toBe('"example triggered"');
  });

  it('ingestion time and array index paths', () => {
    expect(
      JSON.parse(render('{"at": <aws.events.event.ingestion-time>, "r": <resource>, "t": <timestamp>}')),
    ).toEqual({ at: '2015-11-11T21:29:55Z', r: event.resources[0], t: '2015-11-11T21:29:54Z' });
  });

  it('the API reference examples: plain-text templates substitute raw values', () => {
    const map = { instance: '$.detail.instance-id', status: '$.detail.state' };
    expect(
      applyInputTransformer(
        { InputPathsMap: map, InputTemplate: '<instance> is in state <status>' },
        event,
        context,
      ),
    ).toBe('i-0123456789 is in state RUNNING');
    expect(
      applyInputTransformer(
        { InputPathsMap: map, InputTemplate: '<instance> is in state "<status>"' },
        event,
        context,
      ),
    ).toBe('i-0123456789 is in state "RUNNING"');
    const out = applyInputTransformer(
      {
        InputPathsMap: map,
        InputTemplate: '{"myInstance": <instance>,"myStatus": "<instance> is in state \\"<status>\\""}',
      },
      event,
      context,
    );
    expect(JSON.parse(out)).toEqual({
      myInstance: 'i-0123456789',
      myStatus: 'i-0123456789 is in state "RUNNING"',
    });
  });
});

describe('input transformer: the documented common issues', () => {
  const vars = new Map<string, unknown>([
    ['detail', event.detail],
    ['n', 42],
    ['flag', false],
    ['nothing', null],
    ['list', ['a', 'b']],
  ]);

  it('an object referenced inside a string loses its internal quotes', () => {
    expect(renderInputTemplate('"Detail is <detail>"', vars)).toBe(
      '"Detail is {instance-id:i-0123456789,state:RUNNING}"',
    );
  });

  it('an object placed as a JSON value is inserted as JSON', () => {
    expect(JSON.parse(renderInputTemplate('{"detail": <detail>, "list": <list>}', vars))).toEqual({
      detail: event.detail,
      list: ['a', 'b'],
    });
  });

  it('numbers, booleans and null are inserted as JSON outside quotes and as text inside', () => {
    expect(
      JSON.parse(renderInputTemplate('{"n": <n>, "f": <flag>, "z": <nothing>, "s": "<n>/<flag>"}', vars)),
    ).toEqual({
      n: 42,
      f: false,
      z: null,
      s: '42/false',
    });
  });

  it('a variable whose path matches nothing is not created', () => {
    const out = applyInputTransformer(
      { InputPathsMap: { gone: '$.detail.missing' }, InputTemplate: '{"a": <gone>, "b": "x<gone>y"}' },
      event,
      context,
    );
    expect(JSON.parse(out)).toEqual({ a: null, b: 'xy' });
  });

  it('placeholders that name no variable are left alone', () => {
    expect(renderInputTemplate('"<unknown> <n>"', vars)).toBe('"<unknown> 42"');
  });
});

describe('targetInput', () => {
  const full = { ...event, detail: { context: { a: 1 }, list: [1, 2] } };

  it('sends the event by default', () => {
    expect(JSON.parse(targetInput({}, full, context))).toEqual(full);
  });

  it('sends Input verbatim', () => {
    expect(targetInput({ Input: '{ "fixed" : true }' }, full, context)).toBe('{ "fixed" : true }');
  });

  it('sends the value at InputPath', () => {
    expect(JSON.parse(targetInput({ InputPath: '$.detail' }, full, context))).toEqual(full.detail);
    expect(targetInput({ InputPath: '$.detail.context.a' }, full, context)).toBe('1');
    expect(targetInput({ InputPath: '$.detail.missing' }, full, context)).toBe('null');
  });
});

describe('json path', () => {
  const doc = { a: { 'b-c': [{ d: 1 }, { d: 2 }], 'x/y': 'slash' } };

  it('parses dot notation, indices and wildcards', () => {
    expect(parseJsonPath('$.a.b-c[1].d')).toEqual([
      { kind: 'key', key: 'a' },
      { kind: 'key', key: 'b-c' },
      { kind: 'index', index: 1 },
      { kind: 'key', key: 'd' },
    ]);
    expect(() => parseJsonPath('a.b')).toThrow(JsonPathError);
    expect(() => parseJsonPath("$['a']")).toThrow(JsonPathError);
    expect(() => parseJsonPath('$.')).toThrow(JsonPathError);
  });

  it('evaluates', () => {
    expect(evaluateJsonPath(doc, '$')).toEqual({ found: true, value: doc });
    expect(evaluateJsonPath(doc, '$.a.b-c[1].d')).toEqual({ found: true, value: 2 });
    expect(evaluateJsonPath(doc, '$.a.x/y')).toEqual({ found: true, value: 'slash' });
    expect(evaluateJsonPath(doc, '$.a.b-c[*].d')).toEqual({ found: true, value: [1, 2] });
    expect(evaluateJsonPath(doc, '$.a.b-c[5]')).toEqual({ found: false });
    expect(evaluateJsonPath(doc, '$.a.nope')).toEqual({ found: false });
    expect(evaluateJsonPath({ a: null }, '$.a')).toEqual({ found: true, value: null });
  });
});
