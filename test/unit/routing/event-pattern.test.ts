import { describe, expect, it } from 'vitest';
import {
  compileEventPattern,
  InvalidEventPatternError,
  matchesEventPattern,
  validateEventPattern,
} from '../../../shared/routing/event-pattern.ts';

// Example events from the EventBridge user guide and the aws/event-ruler README.

const EC2_EVENT = {
  version: '0',
  id: 'ddddd4-aaaa-7777-4444-345dd43cc333',
  'detail-type': 'EC2 Instance State-change Notification',
  source: 'aws.ec2',
  account: '012345679012',
  time: '2017-10-02T16:24:49Z',
  region: 'us-east-1',
  resources: ['arn:aws:ec2:us-east-1:123456789012:instance/i-000000aaaaaa00000'],
  detail: {
    'c-count': 5,
    'd-count': 3,
    'x-limit': 301.8,
    'source-ip': '10.0.0.33',
    'instance-id': 'i-000000aaaaaa00000',
    state: 'running',
  },
};

const TERMINATED_EVENT = {
  version: '0',
  id: '6a7e8feb-b491-4cf7-a9f1-bf3703467718',
  'detail-type': 'EC2 Instance State-change Notification',
  source: 'aws.ec2',
  account: '111122223333',
  time: '2017-12-22T18:43:48Z',
  region: 'us-west-1',
  resources: ['arn:aws:ec2:us-west-1:123456789012:instance/i-1234567890abcdef0'],
  detail: { 'instance-id': 'i-1234567890abcdef0', state: 'terminated' },
};

const NULL_EVENT = {
  version: '0',
  id: '3e3c153a-8339-4e30-8c35-687ebef853fe',
  'detail-type': 'EC2 Instance Launch Successful',
  source: 'aws.autoscaling',
  account: '123456789012',
  time: '2015-11-11T21:31:47Z',
  region: 'us-east-1',
  resources: [],
  detail: { eventVersion: '', responseElements: null },
};

const PENDING_EVENT = {
  version: '0',
  id: '7bf73129-1428-4cd3-a780-95db273d1602',
  'detail-type': 'EC2 Instance State-change Notification',
  source: 'aws.ec2',
  account: '123456789012',
  time: '2015-11-11T21:29:54Z',
  region: 'us-east-1',
  resources: ['arn:aws:ec2:us-east-1:123456789012:instance/i-abcd1111'],
  detail: { 'instance-id': 'i-abcd1111', state: 'pending' },
};

const NO_STATE_EVENT = {
  'detail-type': ['EC2 Instance State-change Notification'],
  resources: ['arn:aws:ec2:us-east-1:123456789012:instance/i-02ebd4584a2ebd341'],
  detail: { 'c-count': { c1: 100 } },
};

const EMPLOYEES = {
  employees: [
    { firstName: 'John', lastName: 'Doe' },
    { firstName: 'Anna', lastName: 'Smith' },
    { firstName: 'Peter', lastName: 'Jones' },
  ],
};

const NESTED_EMPLOYEES = {
  employees: [
    [
      { firstName: 'John', lastName: 'Doe' },
      { firstName: 'Anna', lastName: 'Smith' },
    ],
    [{ firstName: 'Peter', lastName: 'Jones' }],
  ],
};

const CLOUDWATCH = {
  source: 'aws.cloudwatch',
  metricName: 'CPUUtilization',
  namespace: 'AWS/EC2',
  metricType: 'MetricType',
  scope: 'Instance',
  detail: { source: 'aws.cloudwatch', 'detail-type': 'CloudWatch Alarm State Change' },
};

const FILES = {
  source: 'files',
  detail: {
    FileName: 'photo.PNG',
    FilePath: 'dir/sub/photo.png',
    service: 'EventBridge',
    Region: 'us-east-1',
    Name: 'Alice',
    UserID: null,
    Price: 100,
    Weather: 'Sunny',
  },
};

const ARRAYS = {
  detail: {
    resources: [
      'arn:aws:autoscaling:us-east-1:123456789012:autoScalingGroup:eb56d16b-bbf0-401d-b893-d5978ed4a025:autoScalingGroupName/ASGTerminate',
      'arn:aws:ec2:us-east-1:123456789012:instance/i-b188560f',
    ],
    prices: [100, 50],
    flags: [true, null, ''],
    empty: [],
    emptyObj: {},
    items: [
      { sku: 'a', qty: 1, tags: ['x', 'y'] },
      { sku: 'b', qty: 5, tags: ['z'] },
    ],
  },
};

type Case = [name: string, pattern: unknown, event: unknown, expected: boolean];

const exactCases: Case[] = [
  [
    'matches the user-guide termination pattern',
    {
      source: ['aws.ec2'],
      'detail-type': ['EC2 Instance State-change Notification'],
      detail: { state: ['terminated'] },
    },
    TERMINATED_EVENT,
    true,
  ],
  [
    'rejects a different state',
    { source: ['aws.ec2'], detail: { state: ['running'] } },
    TERMINATED_EVENT,
    false,
  ],
  ['matches one of several sources', { source: ['aws.ec2', 'aws.fargate'] }, TERMINATED_EVENT, true],
  [
    'does not match when no listed source matches',
    { source: ['aws.s3', 'aws.fargate'] },
    TERMINATED_EVENT,
    false,
  ],
  [
    'matches the README simple example',
    {
      'detail-type': ['EC2 Instance State-change Notification'],
      resources: ['arn:aws:ec2:us-east-1:123456789012:instance/i-000000aaaaaa00000'],
      detail: { state: ['initializing', 'running'] },
    },
    EC2_EVENT,
    true,
  ],
  ['is case sensitive for exact strings', { source: ['AWS.EC2'] }, EC2_EVENT, false],
  ['does not trim or normalise strings', { source: ['aws.ec2 '] }, EC2_EVENT, false],
  ['ignores fields the pattern does not name', { region: ['us-east-1'] }, EC2_EVENT, true],
  ['requires every named field (AND)', { region: ['us-east-1'], source: ['aws.s3'] }, EC2_EVENT, false],
  ['fails when a named field is missing', { detail: { missing: ['x'] } }, EC2_EVENT, false],
  ['fails when the nesting differs', { state: ['running'] }, EC2_EVENT, false],
  ['matches an exact number', { detail: { 'c-count': [5] } }, EC2_EVENT, true],
  ['matches a number written as a float', { detail: { 'c-count': [5.0] } }, EC2_EVENT, true],
  ['matches a number in exponent form', { detail: { 'x-limit': [3.018e2] } }, EC2_EVENT, true],
  ['does not match a number against its string form', { detail: { 'c-count': ['5'] } }, EC2_EVENT, false],
  ['does not match a string against a number', { detail: { state: [5] } }, EC2_EVENT, false],
  ['does not match a different number', { detail: { 'c-count': [6] } }, EC2_EVENT, false],
  [
    'matches large account-like numbers exactly',
    { account: [123456789012] },
    { account: 123456789012 },
    true,
  ],
  ['matches numerically equal values in JSON text', '{"a":[300]}', '{"a":3.0e2}', true],
  ['matches 300.0 and 300', '{"a":[300.0]}', '{"a":300}', true],
  ['matches true literally', { a: [true] }, { a: true }, true],
  ['does not match true against "true"', { a: [true] }, { a: 'true' }, false],
  ['does not match "true" against true', { a: ['true'] }, { a: true }, false],
  ['matches false literally', { a: [false] }, { a: false }, true],
  ['does not match false against null', { a: [false] }, { a: null }, false],
  [
    'matches an exact value inside a deeper object',
    { detail: { a: { b: { c: ['d'] } } } },
    { detail: { a: { b: { c: 'd' } } } },
    true,
  ],
  ['does not match an object with a value list', { detail: ['x'] }, { detail: { a: 'x' } }, false],
  ['matches unicode strings', { a: ['héllo ✓'] }, { a: 'héllo ✓' }, true],
  [
    'accepts the pattern and event as JSON strings',
    JSON.stringify({ source: ['aws.ec2'] }),
    JSON.stringify(EC2_EVENT),
    true,
  ],
  ['matches the explicit exactly operator', { source: [{ exactly: 'aws.ec2' }] }, EC2_EVENT, true],
  [
    'matches an IPv6 literal in another spelling',
    { ip: ['2001:db8::1'] },
    { ip: '2001:0DB8:0:0:0:0:0:1' },
    true,
  ],
  ['does not match a different IP literal', { ip: ['10.0.0.1'] }, { ip: '10.0.0.2' }, false],
  ['does not match an event that is not an object', { a: ['x'] }, ['x'], false],
];

const nullCases: Case[] = [
  ['matches an empty string', { detail: { eventVersion: [''] } }, NULL_EVENT, true],
  ['matches a null value', { detail: { responseElements: [null] } }, NULL_EVENT, true],
  ['does not match null with an empty string', { detail: { responseElements: [''] } }, NULL_EVENT, false],
  ['does not match an empty string with null', { detail: { eventVersion: [null] } }, NULL_EVENT, false],
  ['does not match null against a missing field', { detail: { missing: [null] } }, NULL_EVENT, false],
  ['treats a null value as existing', { detail: { responseElements: [{ exists: true }] } }, NULL_EVENT, true],
  [
    'does not treat a null value as absent',
    { detail: { responseElements: [{ exists: false }] } },
    NULL_EVENT,
    false,
  ],
  ['treats an empty string as existing', { detail: { eventVersion: [{ exists: true }] } }, NULL_EVENT, true],
  [
    'does not match an empty string with a prefix of x',
    { detail: { eventVersion: [{ prefix: 'x' }] } },
    NULL_EVENT,
    false,
  ],
  [
    'matches an empty string with an empty prefix',
    { detail: { eventVersion: [{ prefix: '' }] } },
    NULL_EVENT,
    true,
  ],
  ['matches null in an event array', { f: [null] }, { f: [1, null] }, true],
  ['does not treat an empty array as a value', { resources: [{ exists: true }] }, NULL_EVENT, false],
  ['treats an empty array as absent', { resources: [{ exists: false }] }, NULL_EVENT, true],
  [
    'matches anything-but against null values',
    { detail: { responseElements: [{ 'anything-but': 'x' }] } },
    NULL_EVENT,
    true,
  ],
  [
    'matches anything-but against an empty string',
    { detail: { eventVersion: [{ 'anything-but': 'x' }] } },
    NULL_EVENT,
    true,
  ],
  [
    'excludes the empty string with anything-but ""',
    { detail: { eventVersion: [{ 'anything-but': '' }] } },
    NULL_EVENT,
    false,
  ],
];

const prefixSuffixCases: Case[] = [
  ['matches a prefix', { time: [{ prefix: '2017-10-02' }] }, EC2_EVENT, true],
  ['rejects a non-matching prefix', { time: [{ prefix: '2017-10-03' }] }, EC2_EVENT, false],
  ['matches a prefix equal to the whole value', { source: [{ prefix: 'aws.ec2' }] }, EC2_EVENT, true],
  ['does not apply prefix to numbers', { detail: { 'c-count': [{ prefix: '5' }] } }, EC2_EVENT, false],
  ['is case sensitive for plain prefix', { source: [{ prefix: 'AWS' }] }, EC2_EVENT, false],
  [
    'matches a prefix ignoring case',
    { detail: { service: [{ prefix: { 'equals-ignore-case': 'eventb' } }] } },
    FILES,
    true,
  ],
  [
    'matches an upper-case prefix ignoring case',
    { detail: { service: [{ prefix: { 'equals-ignore-case': 'EVENTB' } }] } },
    FILES,
    true,
  ],
  [
    'rejects a prefix ignoring case that differs',
    { detail: { service: [{ prefix: { 'equals-ignore-case': 'eventx' } }] } },
    FILES,
    false,
  ],
  ['matches a suffix', { source: [{ suffix: 'ec2' }] }, EC2_EVENT, true],
  ['rejects a non-matching suffix', { source: [{ suffix: 'ec3' }] }, EC2_EVENT, false],
  ['is case sensitive for plain suffix', { detail: { FileName: [{ suffix: '.png' }] } }, FILES, false],
  [
    'matches a suffix ignoring case',
    { detail: { FileName: [{ suffix: { 'equals-ignore-case': '.png' } }] } },
    FILES,
    true,
  ],
  [
    'matches the suffix-ignore-case tbridge example',
    { detail: { service: [{ suffix: { 'equals-ignore-case': 'TBRIDGE' } }] } },
    FILES,
    true,
  ],
  ['does not apply suffix to booleans', { a: [{ suffix: 'e' }] }, { a: true }, false],
  ['matches a prefix on any array element', { resources: [{ prefix: 'arn:aws:ec2' }] }, EC2_EVENT, true],
  ['matches equals-ignore-case', { detail: { Name: [{ 'equals-ignore-case': 'alice' }] } }, FILES, true],
  [
    'matches equals-ignore-case in upper case',
    { detail: { Name: [{ 'equals-ignore-case': 'ALICE' }] } },
    FILES,
    true,
  ],
  [
    'rejects equals-ignore-case for another word',
    { detail: { Name: [{ 'equals-ignore-case': 'alicia' }] } },
    FILES,
    false,
  ],
  [
    'does not apply equals-ignore-case to numbers',
    { detail: { Price: [{ 'equals-ignore-case': '100' }] } },
    FILES,
    false,
  ],
  [
    'matches the README equals-ignore-case example',
    { source: [{ 'equals-ignore-case': 'AWS.EC2' }] },
    EC2_EVENT,
    true,
  ],
];

const wildcardCases: Case[] = [
  ['matches dir/*.png', { detail: { FilePath: [{ wildcard: 'dir/*.png' }] } }, FILES, true],
  ['matches a leading wildcard', { detail: { FilePath: [{ wildcard: '*.png' }] } }, FILES, true],
  ['matches a wildcard in the middle', { source: [{ wildcard: 'aws*2' }] }, EC2_EVENT, true],
  ['matches several wildcards', { detail: { FilePath: [{ wildcard: 'd*/s*/*' }] } }, FILES, true],
  ['matches zero characters', { source: [{ wildcard: 'aws.*ec2' }] }, EC2_EVENT, true],
  ['matches the whole value only', { source: [{ wildcard: 'aws' }] }, EC2_EVENT, false],
  ['matches a lone star against any string', { source: [{ wildcard: '*' }] }, EC2_EVENT, true],
  ['matches a lone star against an empty string', { a: [{ wildcard: '*' }] }, { a: '' }, true],
  ['does not apply wildcard to numbers', { a: [{ wildcard: '*' }] }, { a: 5 }, false],
  ['is case sensitive', { source: [{ wildcard: 'AWS*' }] }, EC2_EVENT, false],
  ['treats an escaped star literally', { a: [{ wildcard: 'a\\*b' }] }, { a: 'a*b' }, true],
  ['does not expand an escaped star', { a: [{ wildcard: 'a\\*b' }] }, { a: 'axxb' }, false],
  ['treats an escaped backslash literally', { a: [{ wildcard: 'a\\\\b' }] }, { a: 'a\\b' }, true],
  ['treats regex metacharacters literally', { a: [{ wildcard: 'a.c(*)' }] }, { a: 'a.c(xyz)' }, true],
  ['does not let a dot match any character', { a: [{ wildcard: 'a.c' }] }, { a: 'abc' }, false],
  [
    'matches Simple*Service from the README',
    { source: [{ wildcard: 'Simple*Service' }] },
    { source: 'Simple Notification Service' },
    true,
  ],
  ['matches across newlines', { a: [{ wildcard: 'x*y' }] }, { a: 'x\n\ny' }, true],
  [
    'matches a wildcard on array elements',
    { detail: { resources: [{ wildcard: '*instance/i-*' }] } },
    ARRAYS,
    true,
  ],
];

const anythingButCases: Case[] = [
  [
    'matches anything but a string',
    { detail: { state: [{ 'anything-but': 'initializing' }] } },
    EC2_EVENT,
    true,
  ],
  ['excludes the listed string', { detail: { state: [{ 'anything-but': 'running' }] } }, EC2_EVENT, false],
  ['matches anything but a number', { detail: { 'x-limit': [{ 'anything-but': 123 }] } }, EC2_EVENT, true],
  ['excludes the listed number', { detail: { 'x-limit': [{ 'anything-but': 301.8 }] } }, EC2_EVENT, false],
  ['excludes a numerically equal number', { a: [{ 'anything-but': 300 }] }, '{"a": 3.0e2}', false],
  [
    'matches anything but a string list',
    { detail: { state: [{ 'anything-but': ['stopped', 'overloaded'] }] } },
    EC2_EVENT,
    true,
  ],
  [
    'excludes a string in the list',
    { detail: { state: [{ 'anything-but': ['stopped', 'running'] }] } },
    EC2_EVENT,
    false,
  ],
  [
    'matches anything but a number list',
    { detail: { 'x-limit': [{ 'anything-but': [100, 200, 300] }] } },
    EC2_EVENT,
    true,
  ],
  [
    'excludes a number in the list',
    { detail: { 'c-count': [{ 'anything-but': [1, 5] }] } },
    EC2_EVENT,
    false,
  ],
  ['does not match a missing field', { detail: { missing: [{ 'anything-but': 'x' }] } }, EC2_EVENT, false],
  [
    'matches numbers with a string anything-but',
    { detail: { 'c-count': [{ 'anything-but': 'x' }] } },
    EC2_EVENT,
    true,
  ],
  [
    'matches strings with a numeric anything-but',
    { detail: { state: [{ 'anything-but': 5 }] } },
    EC2_EVENT,
    true,
  ],
  ['matches the string "5" with anything-but 5', { a: [{ 'anything-but': 5 }] }, { a: '5' }, true],
  ['matches booleans with anything-but', { a: [{ 'anything-but': 'true' }] }, { a: true }, true],
  [
    'matches an array with one value not excluded',
    { detail: { prices: [{ 'anything-but': [100, 500] }] } },
    ARRAYS,
    true,
  ],
  [
    'does not match an array whose values are all excluded',
    { p: [{ 'anything-but': [100, 50] }] },
    { p: [100, 50] },
    false,
  ],
  [
    'matches anything but a prefix',
    { detail: { state: [{ 'anything-but': { prefix: 'init' } }] } },
    EC2_EVENT,
    true,
  ],
  [
    'excludes a value with the prefix',
    { detail: { state: [{ 'anything-but': { prefix: 'run' } }] } },
    EC2_EVENT,
    false,
  ],
  [
    'excludes the Region us- example',
    { detail: { Region: [{ 'anything-but': { prefix: 'us-' } }] } },
    FILES,
    false,
  ],
  [
    'matches anything but one of several prefixes',
    { detail: { state: [{ 'anything-but': { prefix: ['a', 'b'] } }] } },
    EC2_EVENT,
    true,
  ],
  [
    'excludes one of several prefixes',
    { detail: { state: [{ 'anything-but': { prefix: ['a', 'ru'] } }] } },
    EC2_EVENT,
    false,
  ],
  [
    'matches anything but a suffix',
    { detail: { FileName: [{ 'anything-but': { suffix: '.png' } }] } },
    FILES,
    true,
  ],
  [
    'excludes a value with the suffix',
    { detail: { FilePath: [{ 'anything-but': { suffix: '.png' } }] } },
    FILES,
    false,
  ],
  [
    'matches anything but ignoring case',
    { detail: { state: [{ 'anything-but': { 'equals-ignore-case': 'initializing' } }] } },
    EC2_EVENT,
    true,
  ],
  [
    'excludes a value ignoring case',
    { detail: { state: [{ 'anything-but': { 'equals-ignore-case': 'RUNNING' } }] } },
    EC2_EVENT,
    false,
  ],
  [
    'excludes any listed value ignoring case',
    { detail: { state: [{ 'anything-but': { 'equals-ignore-case': ['X', 'Running'] } }] } },
    EC2_EVENT,
    false,
  ],
  [
    'matches anything but a wildcard',
    { detail: { FilePath: [{ 'anything-but': { wildcard: '*/lib/*' } }] } },
    FILES,
    true,
  ],
  [
    'excludes a value matching the wildcard',
    { detail: { FilePath: [{ 'anything-but': { wildcard: '*/sub/*' } }] } },
    FILES,
    false,
  ],
  [
    'excludes a value matching one of the wildcards',
    { detail: { FilePath: [{ 'anything-but': { wildcard: ['x*', 'dir/*'] } }] } },
    FILES,
    false,
  ],
  [
    'matches numbers with anything-but prefix',
    { detail: { Price: [{ 'anything-but': { prefix: '1' } }] } },
    FILES,
    true,
  ],
  [
    'matches Weather anything but Raining',
    { detail: { Weather: [{ 'anything-but': 'Raining' }] } },
    FILES,
    true,
  ],
  [
    'does not match anything-but on a missing field even with prefix',
    { detail: { none: [{ 'anything-but': { prefix: 'x' } }] } },
    FILES,
    false,
  ],
];

const numericCases: Case[] = [
  [
    'matches the README numeric example',
    {
      detail: {
        'c-count': [{ numeric: ['>', 0, '<=', 5] }],
        'd-count': [{ numeric: ['<', 10] }],
        'x-limit': [{ numeric: ['=', 3.018e2] }],
      },
    },
    EC2_EVENT,
    true,
  ],
  [
    'includes the closed top of a range',
    { detail: { 'c-count': [{ numeric: ['>', 0, '<=', 5] }] } },
    EC2_EVENT,
    true,
  ],
  [
    'excludes the open top of a range',
    { detail: { 'c-count': [{ numeric: ['>', 0, '<', 5] }] } },
    EC2_EVENT,
    false,
  ],
  ['includes the closed bottom', { detail: { 'c-count': [{ numeric: ['>=', 5] }] } }, EC2_EVENT, true],
  ['excludes the open bottom', { detail: { 'c-count': [{ numeric: ['>', 5] }] } }, EC2_EVENT, false],
  ['matches less than', { detail: { 'd-count': [{ numeric: ['<', 10] }] } }, EC2_EVENT, true],
  ['matches less than or equal', { detail: { 'd-count': [{ numeric: ['<=', 3] }] } }, EC2_EVENT, true],
  ['rejects less than when equal', { detail: { 'd-count': [{ numeric: ['<', 3] }] } }, EC2_EVENT, false],
  ['matches equality', { detail: { 'x-limit': [{ numeric: ['=', 301.8] }] } }, EC2_EVENT, true],
  [
    'rejects equality for another value',
    { detail: { 'x-limit': [{ numeric: ['=', 301.9] }] } },
    EC2_EVENT,
    false,
  ],
  [
    'matches Price more than 10 and at most 20',
    { price: [{ numeric: ['>', 10, '<=', 20] }] },
    { price: 15 },
    true,
  ],
  ['rejects Price above 20', { price: [{ numeric: ['>', 10, '<=', 20] }] }, { price: 20.5 }, false],
  ['does not apply numeric to strings', { a: [{ numeric: ['>', 0] }] }, { a: '5' }, false],
  ['does not apply numeric to null', { a: [{ numeric: ['>', 0] }] }, { a: null }, false],
  ['does not match numeric on a missing field', { b: [{ numeric: ['>', 0] }] }, { a: 1 }, false],
  ['matches negative numbers', { a: [{ numeric: ['>=', -10, '<', 0] }] }, { a: -3.5 }, true],
  ['compares decimals precisely', { a: [{ numeric: ['>', 0.1, '<', 0.3] }] }, { a: 0.2 }, true],
  ['matches six decimal places', { a: [{ numeric: ['=', 0.000001] }] }, { a: 0.000001 }, true],
  ['matches event numbers beyond 5e9', { a: [{ numeric: ['>', 0] }] }, { a: 6e9 }, true],
  ['compares large numbers as doubles', { a: [{ numeric: ['>=', 1e12, '<', 2e12] }] }, { a: 1.5e12 }, true],
  ['matches more than six decimal places', { a: [{ numeric: ['>', 0.0000001] }] }, { a: 0.0000002 }, true],
  ['does not match a non-finite event number', { a: [{ numeric: ['>', 0] }] }, '{"a": 1e400}', false],
  ['matches any element of a numeric array', { a: [{ numeric: ['>', 10] }] }, { a: [1, 2, 30] }, true],
  ['matches exponent-form operands', { a: [{ numeric: ['<', 1e3] }] }, { a: 999 }, true],
  ['matches an exponent-form event value', { a: [{ numeric: ['=', 1000] }] }, '{"a": 1e3}', true],
  ['matches zero and negative zero', { a: [{ numeric: ['=', 0] }] }, '{"a": -0.0}', true],
];

const cidrCases: Case[] = [
  ['matches an IPv4 CIDR', { detail: { 'source-ip': [{ cidr: '10.0.0.0/24' }] } }, EC2_EVENT, true],
  [
    'rejects an address outside the CIDR',
    { detail: { 'source-ip': [{ cidr: '10.0.1.0/24' }] } },
    EC2_EVENT,
    false,
  ],
  ['matches a /8', { detail: { 'source-ip': [{ cidr: '10.0.0.0/8' }] } }, EC2_EVENT, true],
  ['matches the top of the range', { ip: [{ cidr: '10.0.0.0/24' }] }, { ip: '10.0.0.255' }, true],
  ['matches the bottom of the range', { ip: [{ cidr: '10.0.0.0/24' }] }, { ip: '10.0.0.0' }, true],
  ['matches a /0', { ip: [{ cidr: '0.0.0.0/0' }] }, { ip: '255.255.255.255' }, true],
  ['ignores host bits in the CIDR address', { ip: [{ cidr: '10.0.0.5/24' }] }, { ip: '10.0.0.1' }, true],
  ['matches a /31', { ip: [{ cidr: '10.0.0.4/31' }] }, { ip: '10.0.0.5' }, true],
  ['does not match a non-IP string', { ip: [{ cidr: '10.0.0.0/24' }] }, { ip: 'host.example' }, false],
  ['does not match an invalid octet', { ip: [{ cidr: '10.0.0.0/24' }] }, { ip: '10.0.0.256' }, false],
  ['does not match a number', { ip: [{ cidr: '0.0.0.0/0' }] }, { ip: 167772161 }, false],
  ['matches an IPv6 CIDR', { ip: [{ cidr: '2001:db8::/32' }] }, { ip: '2001:db8:1234::5' }, true],
  [
    'rejects an IPv6 address outside the CIDR',
    { ip: [{ cidr: '2001:db8::/32' }] },
    { ip: '2001:db9::1' },
    false,
  ],
  ['does not match an IPv4 address with an IPv6 CIDR', { ip: [{ cidr: '::/0' }] }, { ip: '10.0.0.1' }, false],
  [
    'matches any element of an IP array',
    { ip: [{ cidr: '192.168.0.0/16' }] },
    { ip: ['10.0.0.1', '192.168.3.4'] },
    true,
  ],
  [
    'matches the sourceIPAddress doc example',
    { detail: { sourceIPAddress: [{ cidr: '10.0.0.0/24' }] } },
    { detail: { sourceIPAddress: '10.0.0.7' } },
    true,
  ],
];

const existsCases: Case[] = [
  ['matches exists true', { detail: { state: [{ exists: true }] } }, PENDING_EVENT, true],
  [
    'does not match exists true without the field',
    { detail: { state: [{ exists: true }] } },
    NO_STATE_EVENT,
    false,
  ],
  [
    'matches exists false without the field',
    { detail: { state: [{ exists: false }] } },
    NO_STATE_EVENT,
    true,
  ],
  [
    'does not match exists false with the field',
    { detail: { state: [{ exists: false }] } },
    PENDING_EVENT,
    false,
  ],
  [
    'treats an object-valued field as absent (exists false)',
    { detail: { 'c-count': [{ exists: false }] } },
    NO_STATE_EVENT,
    true,
  ],
  [
    'treats an object-valued field as absent (exists true)',
    { detail: { 'c-count': [{ exists: true }] } },
    NO_STATE_EVENT,
    false,
  ],
  [
    'matches exists false when the parent is missing',
    { nothing: { here: [{ exists: false }] } },
    PENDING_EVENT,
    true,
  ],
  ['matches exists true for an array of values', { resources: [{ exists: true }] }, PENDING_EVENT, true],
  ['matches exists true for a number zero', { a: [{ exists: true }] }, { a: 0 }, true],
  ['matches exists true for false', { a: [{ exists: true }] }, { a: false }, true],
  ['combines exists false with another value as OR', { a: [{ exists: false }, 'x'] }, { a: 'x' }, true],
  ['combines exists false with another value when absent', { a: [{ exists: false }, 'x'] }, { b: 'y' }, true],
  ['fails exists false or x when the value is y', { a: [{ exists: false }, 'x'] }, { a: 'y' }, false],
  [
    'matches exists false together with exact fields',
    { source: ['aws.ec2'], detail: { 'error-code': [{ exists: false }] } },
    PENDING_EVENT,
    true,
  ],
  ['treats an empty object as absent', { detail: { emptyObj: [{ exists: false }] } }, ARRAYS, true],
  ['treats an empty array as absent', { detail: { empty: [{ exists: true }] } }, ARRAYS, false],
];

const arrayCases: Case[] = [
  [
    'matches when the pattern and event arrays intersect',
    {
      resources: [
        'arn:aws:ec2:us-east-1:123456789012:instance/i-b188560f',
        'arn:aws:ec2:us-east-1:111122223333:instance/i-b188560f',
        'arn:aws:ec2:us-east-1:444455556666:instance/i-b188560f',
      ],
    },
    { resources: ARRAYS.detail.resources },
    true,
  ],
  [
    'does not match when the arrays are disjoint',
    { resources: ['arn:aws:ec2:us-east-1:111122223333:instance/i-b188560f'] },
    { resources: ARRAYS.detail.resources },
    false,
  ],
  ['does not match an empty event array', { resources: ['x'] }, NULL_EVENT, false],
  ['matches fields inside arrays of objects', { employees: { firstName: ['Anna'] } }, EMPLOYEES, true],
  [
    'matches two fields of the same element',
    { employees: { firstName: ['Anna'], lastName: ['Smith'] } },
    EMPLOYEES,
    true,
  ],
  [
    'does not match fields from different elements',
    { employees: { firstName: ['Anna'], lastName: ['Jones'] } },
    EMPLOYEES,
    false,
  ],
  ['matches through nested arrays', { employees: { firstName: ['Peter'] } }, NESTED_EMPLOYEES, true],
  [
    'matches the same element through nested arrays',
    { employees: { firstName: ['John'], lastName: ['Doe'] } },
    NESTED_EMPLOYEES,
    true,
  ],
  [
    'does not mix elements of nested arrays',
    { employees: { firstName: ['Anna'], lastName: ['Jones'] } },
    NESTED_EMPLOYEES,
    false,
  ],
  [
    'does not mix elements of the same inner array',
    { employees: { firstName: ['John'], lastName: ['Smith'] } },
    NESTED_EMPLOYEES,
    false,
  ],
  [
    'matches an element with several constraints',
    { detail: { items: { sku: ['b'], qty: [{ numeric: ['>', 2] }] } } },
    ARRAYS,
    true,
  ],
  [
    'does not match constraints split across elements',
    { detail: { items: { sku: ['a'], qty: [{ numeric: ['>', 2] }] } } },
    ARRAYS,
    false,
  ],
  [
    'matches an inner array value of the same element',
    { detail: { items: { sku: ['a'], tags: ['y'] } } },
    ARRAYS,
    true,
  ],
  [
    'does not match an inner array value of another element',
    { detail: { items: { sku: ['a'], tags: ['z'] } } },
    ARRAYS,
    false,
  ],
  [
    'lets fields outside the array combine with any element',
    { source: ['s'], list: { k: ['2'] } },
    { source: 's', list: [{ k: '1' }, { k: '2' }] },
    true,
  ],
  ['matches booleans in arrays', { detail: { flags: [true] } }, ARRAYS, true],
  ['matches empty strings in arrays', { detail: { flags: [''] } }, ARRAYS, true],
  ['matches a number in an array', { detail: { prices: [50] } }, ARRAYS, true],
  ['matches dotted pattern keys against nested events', { 'detail.state': ['running'] }, EC2_EVENT, true],
  [
    'matches nested pattern keys against dotted event keys',
    { detail: { state: { status: ['running'] } } },
    { detail: { 'state.status': 'running' } },
    true,
  ],
  [
    'matches dotted pattern keys against dotted event keys',
    { detail: { 'state.status': ['running'] } },
    { detail: { 'state.status': 'running' } },
    true,
  ],
  [
    'matches a dotted key against a nested event',
    { detail: { 'state.status': ['running'] } },
    { detail: { state: { status: 'running' } } },
    true,
  ],
];

const orCases: Case[] = [
  [
    'matches the first $or alternative',
    {
      source: ['aws.cloudwatch'],
      $or: [{ metricName: ['CPUUtilization', 'ReadLatency'] }, { namespace: ['AWS/ES'] }],
    },
    CLOUDWATCH,
    true,
  ],
  [
    'matches the second $or alternative',
    { source: ['aws.cloudwatch'], $or: [{ metricName: ['Other'] }, { namespace: ['AWS/EC2', 'AWS/ES'] }] },
    CLOUDWATCH,
    true,
  ],
  [
    'fails when no $or alternative matches',
    { source: ['aws.cloudwatch'], $or: [{ metricName: ['Other'] }, { namespace: ['AWS/S3'] }] },
    CLOUDWATCH,
    false,
  ],
  [
    'still ANDs the fields outside $or',
    { source: ['aws.ec2'], $or: [{ metricName: ['CPUUtilization'] }, { namespace: ['AWS/EC2'] }] },
    CLOUDWATCH,
    false,
  ],
  [
    'matches parallel $or groups',
    {
      $or: [{ metricName: ['CPUUtilization'] }, { namespace: ['x'] }],
      detail: { $or: [{ source: ['aws.cloudwatch'] }, { 'detail-type': ['x'] }] },
    },
    CLOUDWATCH,
    true,
  ],
  [
    'fails when one of parallel $or groups fails',
    {
      $or: [{ metricName: ['CPUUtilization'] }, { namespace: ['x'] }],
      detail: { $or: [{ source: ['y'] }, { 'detail-type': ['x'] }] },
    },
    CLOUDWATCH,
    false,
  ],
  [
    'matches an $or alternative with an AND inside',
    {
      source: ['aws.cloudwatch'],
      $or: [
        { metricName: ['x'] },
        { metricType: ['MetricType'], namespace: ['AWS/EC2'] },
        { scope: ['Service'] },
      ],
    },
    CLOUDWATCH,
    true,
  ],
  [
    'fails an AND alternative with one wrong field',
    {
      source: ['aws.cloudwatch'],
      $or: [
        { metricName: ['x'] },
        { metricType: ['MetricType'], namespace: ['AWS/S3'] },
        { scope: ['Service'] },
      ],
    },
    CLOUDWATCH,
    false,
  ],
  [
    'matches nested $or',
    {
      source: ['aws.cloudwatch'],
      $or: [
        { metricName: ['x'] },
        { metricType: ['MetricType'], $or: [{ metricId: [1234] }, { namespace: ['AWS/EC2'] }] },
      ],
    },
    CLOUDWATCH,
    true,
  ],
  [
    'fails nested $or when the inner alternatives fail',
    {
      source: ['aws.cloudwatch'],
      $or: [
        { metricName: ['x'] },
        { metricType: ['MetricType'], $or: [{ metricId: [1234] }, { spaceId: [1000] }] },
      ],
    },
    CLOUDWATCH,
    false,
  ],
  [
    'matches $or of Location or Day',
    { $or: [{ Location: ['New York'] }, { Day: ['Monday'] }] },
    { Location: 'Paris', Day: 'Monday' },
    true,
  ],
  [
    'matches $or with operators',
    { $or: [{ a: [{ numeric: ['>', 10] }] }, { b: [{ prefix: 'x' }] }] },
    { a: 1, b: 'xy' },
    true,
  ],
  ['matches $or with exists false', { $or: [{ a: [{ exists: false }] }, { b: ['x'] }] }, { b: 'y' }, true],
  [
    'matches $or inside nested objects',
    { detail: { $or: [{ a: ['1'] }, { b: ['2'] }] } },
    { detail: { b: '2' } },
    true,
  ],
  [
    'matches $or alternatives with nested objects',
    { $or: [{ detail: { a: ['1'] } }, { detail: { b: ['2'] } }] },
    { detail: { b: '2' } },
    true,
  ],
  [
    'matches $or keeping array consistency',
    { items: { $or: [{ a: ['1'], b: ['2'] }, { c: ['3'] }] } },
    {
      items: [
        { a: '1', b: 'x' },
        { a: 'y', b: '2' },
      ],
    },
    false,
  ],
  ['reads a $or object as an ordinary field name', { $or: { a: ['1'] } }, { $or: { a: '1' } }, true],
  ['does not treat a $or object as alternatives', { $or: { a: ['1'] } }, { a: '1' }, false],
  [
    'reads a $or of operators as an ordinary field',
    { $or: [{ numeric: ['>', 1] }, { prefix: 'abc' }] },
    { $or: 'abcd' },
    true,
  ],
  [
    'lets the later write win between a field and the same field in $or',
    { a: ['1'], $or: [{ a: ['2'] }, { b: ['3'] }] },
    { a: '2' },
    true,
  ],
  [
    'drops the earlier value of a field overwritten in a $or branch',
    { a: ['1'], $or: [{ a: ['2'] }, { b: ['3'] }] },
    { a: '1' },
    false,
  ],
  [
    'adds fields before $or to every branch',
    { a: ['1'], $or: [{ b: ['2'] }, { c: ['3'] }] },
    { a: '1', c: '3' },
    true,
  ],
];

// Outcomes recorded against EventBridge's TestEventPattern (the AWS-validated localstack pattern templates).
const recordedCases: Case[] = [
  ['matches 300.0 in the event with [300] in the pattern', '{"number":[300]}', '{"number":300.0}', true],
  ['matches numeric > 100 against 101.0', { number: [{ numeric: ['>', 100] }] }, '{"number":101.0}', true],
  [
    'matches anything-but a string against null',
    { detail: { state: [{ 'anything-but': 'initializing' }] } },
    { detail: { state: null } },
    true,
  ],
  [
    'matches anything-but a prefix against a number',
    { detail: { state: [{ 'anything-but': { prefix: 'init' } }] } },
    { detail: { state: 12 } },
    true,
  ],
  [
    'matches anything-but an empty wildcard against a path',
    { detail: { FilePath: [{ 'anything-but': { wildcard: '' } }] } },
    { detail: { FilePath: 'dir/init/file' } },
    true,
  ],
  [
    'does not match a cidr against a number',
    { detail: { sourceIPAddress: [{ cidr: '10.0.0.0/24' }] } },
    { detail: { sourceIPAddress: 123 } },
    false,
  ],
  ['does not match [null] against an empty array', { resources: [null] }, { resources: [] }, false],
  [
    'does not look inside a JSON string detail',
    { detail: { 'my-key': ['my-value'] } },
    { detail: '{"my-key": "my-value"}' },
    false,
  ],
  [
    'matches exists true on any element of an array of objects',
    { detail: { automations: { id: [{ exists: true }] } } },
    { detail: { automations: [{ key1: 'value1' }, { id: 'x' }, { key2: 'value2' }] } },
    true,
  ],
  [
    'does not treat an intermediate object as existing',
    { dynamodb: { presentKey: [{ exists: true }] } },
    { dynamodb: { id: { S: 'a' }, presentKey: { S: 'b' } } },
    false,
  ],
  [
    'matches anything-but or exists false when the parent is missing',
    { dynamodb: { NewImage: { homemade: { S: [{ 'anything-but': ['roses'] }, { exists: false }] } } } },
    { dynamodb: { NewImage: { purchased: { N: '789' } } } },
    true,
  ],
  [
    'does not match numeric or anything-but on an excluded string',
    {
      dynamodb: { NewImage: { numericFilter: { N: [{ numeric: ['>', 100] }, { 'anything-but': '101' }] } } },
    },
    { dynamodb: { NewImage: { numericFilter: { N: '101' } } } },
    false,
  ],
  [
    'does not match equals-ignore-case "" against a value',
    { detail: { value: [{ 'equals-ignore-case': '' }] } },
    { detail: { value: 'test-value' } },
    false,
  ],
  [
    'matches anything-but 0 against 789',
    { detail: { 'x-limit': [{ 'anything-but': 0 }] } },
    { detail: { 'x-limit': 789 } },
    true,
  ],
  [
    'does not join a dotted pattern key under another level',
    { detail: { 'state.status': { status: ['running'] } } },
    { detail: { state: { status: 'running' } } },
    false,
  ],
  [
    'does not join a dotted event key under another level',
    { detail: { state: { status: ['running'] } } },
    { detail: { 'state.status': { status: 'running' } } },
    false,
  ],
  [
    'matches a literal star and backslash as exact values',
    String.raw`{"detail": {"escape_star": ["*"], "escape_backslash": ["\\"]}}`,
    String.raw`{"detail": {"escape_star": "*", "escape_backslash": "\\"}}`,
    true,
  ],
  [
    'matches a wildcard with a repeating literal run',
    { FileName: [{ wildcard: '/Users/*/dir/dir/dir/dir/dir/doc.txt' }] },
    { FileName: '/Users/ls_user/dir/dir/dir/dir/dir/doc.txt' },
    true,
  ],
  [
    'does not match the repeating wildcard with another directory',
    { FileName: [{ wildcard: '/Users/*/dir/dir/dir/dir/dir/doc.txt' }] },
    { FileName: '/Users/ls_user/dir/dir/dir/dir/otherdir/doc.txt' },
    false,
  ],
  [
    'matches the many-operator rule',
    {
      source: [{ exists: true }],
      'detail-type': [{ prefix: 'core.app' }],
      detail: {
        amount: [200],
        admins: ['skyli', { prefix: 'hey' }, { prefix: 'ad' }],
        test1: [{ 'anything-but': 200 }],
        test4: [{ 'anything-but': { prefix: 'test4' } }],
        ip: [{ cidr: '10.102.1.0/24' }],
        'num-test7': [{ numeric: ['>=', 200, '<', 500] }],
      },
    },
    {
      source: 'core.update-account-command',
      'detail-type': 'core.app.backend',
      detail: {
        amount: 200,
        admins: 'admin',
        test1: 300,
        test4: 'this test4',
        ip: '10.102.1.100',
        'num-test7': 300,
      },
    },
    true,
  ],
];

describe('matchesEventPattern', () => {
  describe('exact values', () => {
    it.each(exactCases)('%s', (_name, pattern, event, expected) => {
      expect(matchesEventPattern(pattern, event)).toBe(expected);
    });
  });
  describe('null and empty strings', () => {
    it.each(nullCases)('%s', (_name, pattern, event, expected) => {
      expect(matchesEventPattern(pattern, event)).toBe(expected);
    });
  });
  describe('prefix, suffix and equals-ignore-case', () => {
    it.each(prefixSuffixCases)('%s', (_name, pattern, event, expected) => {
      expect(matchesEventPattern(pattern, event)).toBe(expected);
    });
  });
  describe('wildcard', () => {
    it.each(wildcardCases)('%s', (_name, pattern, event, expected) => {
      expect(matchesEventPattern(pattern, event)).toBe(expected);
    });
  });
  describe('anything-but', () => {
    it.each(anythingButCases)('%s', (_name, pattern, event, expected) => {
      expect(matchesEventPattern(pattern, event)).toBe(expected);
    });
  });
  describe('numeric', () => {
    it.each(numericCases)('%s', (_name, pattern, event, expected) => {
      expect(matchesEventPattern(pattern, event)).toBe(expected);
    });
  });
  describe('cidr', () => {
    it.each(cidrCases)('%s', (_name, pattern, event, expected) => {
      expect(matchesEventPattern(pattern, event)).toBe(expected);
    });
  });
  describe('exists', () => {
    it.each(existsCases)('%s', (_name, pattern, event, expected) => {
      expect(matchesEventPattern(pattern, event)).toBe(expected);
    });
  });
  describe('arrays, nesting and dotted keys', () => {
    it.each(arrayCases)('%s', (_name, pattern, event, expected) => {
      expect(matchesEventPattern(pattern, event)).toBe(expected);
    });
  });
  describe('outcomes recorded against EventBridge', () => {
    it.each(recordedCases)('%s', (_name, pattern, event, expected) => {
      expect(matchesEventPattern(pattern, event)).toBe(expected);
    });
  });
  describe('$or', () => {
    it.each(orCases)('%s', (_name, pattern, event, expected) => {
      expect(matchesEventPattern(pattern, event)).toBe(expected);
    });
  });

  it('matches the README complex example', () => {
    const pattern = {
      time: [{ prefix: '2017-10-02' }],
      detail: {
        state: [{ 'anything-but': 'initializing' }],
        'c-count': [{ numeric: ['>', 0, '<=', 5] }],
        'd-count': [{ numeric: ['<', 10] }],
        'x-limit': [{ 'anything-but': [100, 200, 300] }],
        'source-ip': [{ cidr: '10.0.0.0/8' }],
      },
    };
    expect(matchesEventPattern(pattern, EC2_EVENT)).toBe(true);
    expect(matchesEventPattern(pattern, { ...EC2_EVENT, time: '2017-10-03T00:00:00Z' })).toBe(false);
  });

  it('uses the last of duplicate keys in a JSON pattern', () => {
    const pattern = '{"detail":{"location":[{"prefix":"us-"}],"location":[{"anything-but":"us-east"}]}}';
    expect(matchesEventPattern(pattern, { detail: { location: 'eu-west' } })).toBe(true);
    expect(matchesEventPattern(pattern, { detail: { location: 'us-east' } })).toBe(false);
  });

  it('compiles once and matches many events', () => {
    const compiled = compileEventPattern({ source: ['aws.ec2'] });
    expect(compiled.matches(EC2_EVENT)).toBe(true);
    expect(compiled.matches(CLOUDWATCH)).toBe(false);
    expect(compiled.branches).toHaveLength(1);
  });

  it('expands $or into one branch per alternative', () => {
    const compiled = compileEventPattern({
      $or: [{ a: ['1'] }, { b: ['2'] }],
      c: { $or: [{ d: ['3'] }, { e: ['4'] }] },
    });
    expect(compiled.branches).toHaveLength(4);
  });
});

const invalidPatterns: [name: string, pattern: unknown][] = [
  ['a non-object pattern', ['source']],
  ['a string that is not JSON', '{source: [x]}'],
  ['a JSON string of an array', '["a"]'],
  ['null', null],
  ['a number', 5],
  ['an empty pattern', {}],
  ['an empty nested object', { detail: {} }],
  ['a string leaf', { source: 'aws.ec2' }],
  ['a number leaf', { a: 5 }],
  ['a null leaf', { a: null }],
  ['a boolean leaf', { a: true }],
  ['an empty array', { source: [] }],
  ['an array inside the value list', { a: [['x']] }],
  ['an empty operator object', { a: [{}] }],
  ['an unknown operator', { a: [{ contains: 'x' }] }],
  ['two operators in one object', { a: [{ prefix: 'x', suffix: 'y' }] }],
  ['a numeric prefix', { a: [{ prefix: 1 }] }],
  ['a null prefix', { a: [{ prefix: null }] }],
  ['an array prefix', { a: [{ prefix: ['x'] }] }],
  ['prefix with an unknown nested operator', { a: [{ prefix: { suffix: 'x' } }] }],
  ['prefix equals-ignore-case with a number', { a: [{ prefix: { 'equals-ignore-case': 1 } }] }],
  ['prefix with two nested operators', { a: [{ prefix: { 'equals-ignore-case': 'x', other: 'y' } }] }],
  ['a numeric suffix', { a: [{ suffix: 5 }] }],
  ['suffix with an unknown nested operator', { a: [{ suffix: { prefix: 'x' } }] }],
  ['equals-ignore-case with a number', { a: [{ 'equals-ignore-case': 5 }] }],
  ['equals-ignore-case with a list', { a: [{ 'equals-ignore-case': ['x'] }] }],
  ['wildcard with a number', { a: [{ wildcard: 5 }] }],
  ['wildcard with consecutive stars', { a: [{ wildcard: 'a**b' }] }],
  ['wildcard with an invalid escape', { a: [{ wildcard: 'a\\b' }] }],
  ['wildcard with a trailing backslash', { a: [{ wildcard: 'ab\\' }] }],
  [
    'a too complex wildcard (localstack/AWS record)',
    { EventBusArn: [{ wildcard: '*:*:*:*:*:event-bus/*' }] },
  ],
  [
    'too many wildcard alternatives on one field',
    { key: [{ wildcard: '*.bif' }, { wildcard: '*.tiff' }, { wildcard: '*.tif' }, { wildcard: '*.svs' }] },
  ],
  ['exists with a string', { a: [{ exists: 'true' }] }],
  ['exists with a number', { a: [{ exists: 1 }] }],
  ['exists with null', { a: [{ exists: null }] }],
  ['exists with an extra key', { a: [{ exists: true, prefix: 'x' }] }],
  ['numeric with a non-array', { a: [{ numeric: 5 }] }],
  ['numeric with an empty array', { a: [{ numeric: [] }] }],
  ['numeric with an unknown operator', { a: [{ numeric: ['!=', 5] }] }],
  ['numeric with a string operand', { a: [{ numeric: ['>', '5'] }] }],
  ['numeric without an operand', { a: [{ numeric: ['>'] }] }],
  ['numeric with an inverted range', { a: [{ numeric: ['>', 10, '<', 5] }] }],
  ['numeric with an empty range', { a: [{ numeric: ['>=', 5, '<=', 5] }] }],
  ['numeric with two lower bounds', { a: [{ numeric: ['>', 0, '>', 5] }] }],
  ['numeric with upper bound first', { a: [{ numeric: ['<', 10, '>', 5] }] }],
  ['numeric = with extra terms', { a: [{ numeric: ['=', 5, '<', 10] }] }],
  ['numeric with too many terms', { a: [{ numeric: ['>', 0, '<', 5, '<', 6] }] }],
  ['numeric with an infinite operand', '{"a":[{"numeric":[">",1e400]}]}'],
  ['numeric with a boolean operand', { a: [{ numeric: ['=', true] }] }],
  ['numeric with a missing second operand', { a: [{ numeric: ['>', 0, '<'] }] }],
  ['cidr without a mask', { a: [{ cidr: '10.0.0.0' }] }],
  ['cidr with a non-numeric mask', { a: [{ cidr: '10.0.0.0/x' }] }],
  ['cidr with a negative mask', { a: [{ cidr: '10.0.0.0/-1' }] }],
  ['cidr with an IPv4 mask too large', { a: [{ cidr: '10.0.0.0/33' }] }],
  ['cidr with an IPv6 mask too large', { a: [{ cidr: '2001:db8::/129' }] }],
  ['cidr with a bad address', { a: [{ cidr: '10.0.0.300/24' }] }],
  ['cidr with a hostname', { a: [{ cidr: 'example.com/24' }] }],
  ['cidr with a number', { a: [{ cidr: 10 }] }],
  ['cidr with two slashes', { a: [{ cidr: '10.0.0.0/8/8' }] }],
  ['anything-but with an empty list', { a: [{ 'anything-but': [] }] }],
  ['anything-but with null', { a: [{ 'anything-but': null }] }],
  ['anything-but with a boolean', { a: [{ 'anything-but': true }] }],
  ['anything-but with mixed types', { a: [{ 'anything-but': ['a', 1] }] }],
  ['anything-but with null in a list', { a: [{ 'anything-but': ['a', null] }] }],
  ['anything-but with objects in a list', { a: [{ 'anything-but': [{ prefix: 'a' }, { prefix: 'b' }] }] }],
  ['anything-but with a nested list', { a: [{ 'anything-but': [['a']] }] }],
  ['anything-but with an unsupported operator', { a: [{ 'anything-but': { numeric: ['>', 1] } }] }],
  ['anything-but with exists', { a: [{ 'anything-but': { exists: true } }] }],
  ['anything-but with a nested anything-but', { a: [{ 'anything-but': { 'anything-but': 'x' } }] }],
  ['anything-but prefix with a number', { a: [{ 'anything-but': { prefix: 1 } }] }],
  ['anything-but with an empty prefix', { a: [{ 'anything-but': { prefix: '' } }] }],
  ['anything-but with an empty suffix', { a: [{ 'anything-but': { suffix: '' } }] }],
  ['anything-but with two operators', { a: [{ 'anything-but': { prefix: 'a', suffix: 'b' } }] }],
  ['anything-but with an empty object', { a: [{ 'anything-but': {} }] }],
  ['anything-but wildcard with consecutive stars', { a: [{ 'anything-but': { wildcard: '**' } }] }],
  [
    'anything-but equals-ignore-case with a number',
    { a: [{ 'anything-but': { 'equals-ignore-case': [1] } }] },
  ],
  ['anything-but with an infinite number', '{"a":[{"anything-but":[1e400]}]}'],
  ['anything-but with an extra key', { a: [{ 'anything-but': 'x', prefix: 'y' }] }],
  ['$or with one alternative', { $or: [{ a: ['1'] }] }],
  ['$or with no alternatives', { $or: [] }],
  ['$or with a non-object alternative', { $or: [{ a: ['1'] }, ['b']] }],
  ['$or with an empty alternative', { $or: [{ a: ['1'] }, {}] }],
  ['$or using a reserved field name', { $or: [{ numeric: [123] }, { prefix: ['abc'] }] }],
  ['$or with an invalid alternative', { $or: [{ a: 'x' }, { b: ['y'] }] }],
  ['$or nested with a single alternative', { $or: [{ a: ['1'] }, { $or: [{ b: ['2'] }] }] }],
  [
    '$or arrays multiplying out to more than 1000 combinations',
    {
      $or: Array.from({ length: 11 }, (_, i) => ({ [`a${i}`]: ['x'] })),
      detail: { $or: Array.from({ length: 10 }, (_, i) => ({ [`b${i}`]: ['x'] })) },
      more: { $or: Array.from({ length: 10 }, (_, i) => ({ [`c${i}`]: ['x'] })) },
    },
  ],
  ['a pattern longer than 4096 characters', { a: ['x'.repeat(4100)] }],
];

describe('validateEventPattern', () => {
  it.each(invalidPatterns)('rejects %s', (_name, pattern) => {
    expect(() => validateEventPattern(pattern)).toThrow(InvalidEventPatternError);
    expect(() => matchesEventPattern(pattern, EC2_EVENT)).toThrow(InvalidEventPatternError);
  });

  const validPatterns: [name: string, pattern: unknown][] = [
    ['reserved words as plain field names outside $or', { prefix: ['x'], numeric: [1] }],
    ['an empty string value', { a: [''] }],
    ['an empty prefix', { a: [{ prefix: '' }] }],
    ['anything-but prefix lists', { a: [{ 'anything-but': { prefix: ['a', 'b'] } }] }],
    ['anything-but wildcard lists', { a: [{ 'anything-but': { wildcard: ['a*', '*b'] } }] }],
    ['numeric beyond 5e9', { a: [{ numeric: ['>=', -6e9, '<=', 6e11] }] }],
    ['numeric with seven decimals', { a: [{ numeric: ['>', 0.0000001] }] }],
    ['anything-but with a large number', { a: [{ 'anything-but': 6e9 }] }],
    ['an IPv6 cidr', { a: [{ cidr: '::1/64' }] }],
    ['$or with three alternatives', { $or: [{ a: ['1'] }, { b: ['2'] }, { c: ['3'] }] }],
    ['a large number exact value', { a: [123456789012345] }],
    ['exists false', { a: [{ exists: false }] }],
    [
      'a wildcard with a repeating literal run',
      { FileName: [{ wildcard: '/Users/*/dir/dir/dir/dir/dir/doc.txt' }] },
    ],
    ['an ARN wildcard', { EventBusArn: [{ wildcard: 'arn:aws:events:us-east-1:*:event-bus/*' }] }],
    [
      'two path wildcards on one field',
      { key: [{ wildcard: '*/datasync/*.bif' }, { wildcard: '*/datasync/*.tif' }] },
    ],
    ['$or whose value is an object (an ordinary field name then)', { $or: { a: ['1'] } }],
    [
      '$or holding operator objects (an ordinary field name then)',
      { $or: [{ numeric: ['>', 1] }, { prefix: 'abc' }] },
    ],
    [
      '$or arrays multiplying out to exactly 1000',
      {
        $or: Array.from({ length: 10 }, (_, i) => ({ [`a${i}`]: ['x'] })),
        d: { $or: Array.from({ length: 10 }, (_, i) => ({ [`b${i}`]: ['x'] })) },
        e: { $or: Array.from({ length: 10 }, (_, i) => ({ [`c${i}`]: ['x'] })) },
      },
    ],
    ['mixed exact values', { a: ['x', 1, true, null, { prefix: 'y' }] }],
  ];
  it.each(validPatterns)('accepts %s', (_name, pattern) => {
    expect(() => validateEventPattern(pattern)).not.toThrow();
  });

  it('names the path of the problem in the message', () => {
    expect(() => validateEventPattern({ detail: { tags: [{ prefix: 5 }] } })).toThrow(
      /detail\.tags\[0\]\.prefix/,
    );
    try {
      validateEventPattern({ detail: { state: 'x' } });
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(InvalidEventPatternError);
      expect((e as InvalidEventPatternError).name).toBe('InvalidEventPatternError');
      expect((e as InvalidEventPatternError).message).toContain('detail.state');
    }
  });
});
