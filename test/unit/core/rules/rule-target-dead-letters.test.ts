import type { SQSRecord } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { processSqsBatch } from '#shared/adapters/sqs/sqs-batch.ts';
import {
  handleDeadLetterRecord,
  handleRuleTargetDeadLetter,
  isRuleTargetDeadLetter,
  ruleNameOf,
} from '#shared/core/rules/rule-target-dead-letters.ts';
import { RetriableError } from '#shared/domain/errors.ts';
import type { ExecutorStore } from '#shared/ports/executor-store.ts';
import { silentLog } from '#shared/ports/log.ts';

const RULE_ARN = 'arn:aws:events:us-east-1:000000000000:rule/crumbs/crumbs-def-ws-agent-abc123';

function record(body: unknown, attributes: Record<string, string> = { RULE_ARN }): SQSRecord {
  return {
    messageId: 'm1',
    body: typeof body === 'string' ? body : JSON.stringify(body),
    messageAttributes: Object.fromEntries(
      Object.entries(attributes).map(([k, v]) => [
        k,
        { stringValue: v, dataType: 'String', stringListValues: [], binaryListValues: [] },
      ]),
    ),
  } as unknown as SQSRecord;
}

const EVENT = {
  source: 'crumbs',
  'detail-type': 'Breadcrumb Created',
  detail: {
    workspace: 'ws',
    id: 'b1',
    version: 1,
    schema_name: 'user.message.v1',
    title: '',
    tags: [],
    tag_map: {},
    created_by: 'user:a',
    updated_by: 'user:a',
    updated_at: '2026-01-01T00:00:00.000Z',
    causation: null,
    context: {},
    context_omitted: false,
    checksum: 'c',
  },
};

function storeListing(items: unknown[] | Error): ExecutorStore {
  return {
    async list() {
      if (items instanceof Error) throw items;
      return { items, next_cursor: null };
    },
  } as unknown as ExecutorStore;
}

describe('rule target dead letters', () => {
  it('reads the rule name from a rule ARN on a custom or the default bus', () => {
    expect(ruleNameOf(RULE_ARN)).toBe('crumbs-def-ws-agent-abc123');
    expect(ruleNameOf('arn:aws:events:us-east-1:000000000000:rule/plain')).toBe('plain');
    expect(ruleNameOf('not an arn')).toBeUndefined();
  });

  it('tells EventBridge dead letters (RULE_ARN attribute) from SQS redrives', () => {
    expect(isRuleTargetDeadLetter(record(EVENT))).toBe(true);
    expect(isRuleTargetDeadLetter(record(EVENT, {}))).toBe(false);
  });

  it('drops what it cannot answer: a body that is not a change event, a rule no definition has any more', async () => {
    const none = { store: storeListing([]) };
    expect(await handleRuleTargetDeadLetter(record('not json'), none)).toMatchObject({ status: 'dropped' });
    expect(await handleRuleTargetDeadLetter(record({ hello: 1 }), none)).toMatchObject({ status: 'dropped' });
    expect(await handleRuleTargetDeadLetter(record(EVENT), none)).toEqual({
      status: 'dropped',
      reason: 'no definition has this rule any more',
    });
  });

  it('reports a store failure back for another try', async () => {
    const deps = { store: storeListing(new RetriableError('throttled')) };
    const out = await processSqsBatch([record(EVENT)], (r) => handleDeadLetterRecord(r, deps), {
      log: silentLog,
    });
    expect(out.batchItemFailures).toEqual([{ itemIdentifier: 'm1' }]);
  });
});
