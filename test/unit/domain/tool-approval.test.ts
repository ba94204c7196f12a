/** What a definition says about approving tool calls, and how an answer to an approval is read. */
import { describe, expect, it } from 'vitest';
import { parseDefinition } from '#shared/domain/definitions.ts';
import { ValidationError } from '#shared/domain/errors.ts';
import {
  approvalIdFor,
  approvalPolicy,
  approvalResponseOf,
  expiryResponseId,
  isExpired,
} from '#shared/domain/tool-approval.ts';

function issues(schema: string, context: unknown): { path: string; message: string }[] {
  try {
    parseDefinition(schema, context);
  } catch (error) {
    if (error instanceof ValidationError) return [...error.issues];
    throw error;
  }
  return [];
}

describe('approval fields of definitions', () => {
  it('takes a tool that requires approval, with an expiry, and an agent listing tools', () => {
    expect(
      issues('tool.def.v1', { name: 'pay', approval: 'required', approval_timeout_seconds: 3600 }),
    ).toEqual([]);
    expect(
      issues('agent.def.v1', { agent_id: 'a', approval: { tools: ['pay'], timeout_seconds: 60 } }),
    ).toEqual([]);
  });

  it('names the field of a bad value', () => {
    expect(issues('tool.def.v1', { name: 'pay', approval: 'yes' })).toEqual([
      { path: 'approval', message: 'expected "required" or "none"' },
    ]);
    expect(issues('tool.def.v1', { name: 'pay', approval_timeout_seconds: 1 })).toEqual([
      { path: 'approval_timeout_seconds', message: 'at least 5 seconds' },
    ]);
    expect(issues('agent.def.v1', { agent_id: 'a', approval: { tools: 'pay' } })).toEqual([
      { path: 'approval.tools', message: 'expected an array of tool names' },
    ]);
    expect(
      issues('agent.def.v1', { agent_id: 'a', approval: { tools: [], timeout_seconds: 40 * 86_400 } }),
    ).toEqual([{ path: 'approval.timeout_seconds', message: 'at most 2592000 seconds (30 days)' }]);
    expect(
      issues('agent.def.v1', { agent_id: 'a', approval: { tools: [], until: 3 } }).map((i) => i.path),
    ).toEqual(['approval']);
  });
});

describe('approvalPolicy', () => {
  it('asks when the tool or the agent says so, the agent’s expiry first', () => {
    expect(approvalPolicy({}, 'pay', { approval: 'none' })).toBeUndefined();
    expect(approvalPolicy({}, 'pay', undefined)).toBeUndefined();
    expect(approvalPolicy({}, 'pay', { approval: 'required' })).toEqual({});
    expect(approvalPolicy({}, 'pay', { approval: 'required', approval_timeout_seconds: 60 })).toEqual({
      timeoutSeconds: 60,
    });
    expect(approvalPolicy({ approval: { tools: ['pay'] } }, 'pay', undefined)).toEqual({});
    expect(
      approvalPolicy({ approval: { tools: ['pay'], timeout_seconds: 30 } }, 'pay', {
        approval_timeout_seconds: 60,
      }),
    ).toEqual({ timeoutSeconds: 30 });
    expect(approvalPolicy({ approval: { tools: ['other'] } }, 'pay', {})).toBeUndefined();
    // A tool definition's invalid expiry is ignored, not trusted.
    expect(approvalPolicy({}, 'pay', { approval: 'required', approval_timeout_seconds: -1 })).toEqual({});
  });
});

describe('approvalResponseOf', () => {
  const id = approvalIdFor('req-1');
  it('reads an answer to an approval', () => {
    expect(approvalResponseOf({ request_id: id, decision: 'approve', arguments: { a: 1 } })).toEqual({
      approvalId: id,
      decision: 'approve',
      arguments: { a: 1 },
    });
    expect(approvalResponseOf({ request_id: id, decision: 'reject', reason: 'no' })).toEqual({
      approvalId: id,
      decision: 'reject',
      reason: 'no',
    });
  });
  it('is not one for a human step, a bad decision or bad arguments', () => {
    expect(approvalResponseOf({ request_id: 'attempt-1', decision: 'approve' })).toBeUndefined();
    expect(approvalResponseOf({ request_id: id, decision: 'maybe' })).toBeUndefined();
    expect(approvalResponseOf({ request_id: id, decision: 'approve', arguments: [1] })).toBeUndefined();
    expect(approvalResponseOf(null)).toBeUndefined();
  });
  it('gives the expiry a deterministic id', () => {
    expect(expiryResponseId(id)).toBe(`${id}.expired`);
  });
});

describe('isExpired', () => {
  it('is past the expiry, never without one', () => {
    const at = '2026-01-01T00:00:00.000Z';
    expect(isExpired({ expires_at: at }, new Date('2025-12-31T23:59:59Z'))).toBe(false);
    expect(isExpired({ expires_at: at }, new Date(at))).toBe(true);
    expect(isExpired({}, new Date('2100-01-01'))).toBe(false);
  });
});
