import { describe, expect, it } from 'vitest';
import {
  AGENT_DEF_SCHEMA,
  correlationTags,
  incoming,
  PROTOCOL_SCHEMAS,
  protocolRefusal,
  REQUESTS,
  replyToTag,
  requestIdOf,
  requestTag,
  runTag,
  stepTag,
  tagValue,
  threadTag,
  toolRequestIdOf,
} from '#shared/domain/protocol.ts';
import { DEFINITION_SCHEMAS } from '#shared/topology.ts';

describe('the wire protocol', () => {
  it('copies exactly the run:, step: and reply-to: tags of a request onto its answer', () => {
    const tags = [
      'run:run-1',
      'step:lookup',
      'reply-to:workflow:orders',
      'request:r1',
      'thread:t1',
      'user:message',
      'runner:x',
    ];
    expect(correlationTags(tags)).toEqual(['run:run-1', 'step:lookup', 'reply-to:workflow:orders']);
    expect(correlationTags([])).toEqual([]);
  });

  it('builds the tags it routes by from one prefix each, and reads them back', () => {
    const tags = [
      runTag('run-1'),
      stepTag('a'),
      replyToTag('agent:helper'),
      requestTag('r1'),
      threadTag('t1'),
    ];
    expect(tags).toEqual(['run:run-1', 'step:a', 'reply-to:agent:helper', 'request:r1', 'thread:t1']);
    expect(tagValue(tags, 'run:')).toBe('run-1');
    expect(tagValue(tags, 'reply-to:')).toBe('agent:helper');
    expect(tagValue(tags, 'missing:')).toBeUndefined();
    // What an agent may not write follows the same prefixes.
    for (const tag of tags.slice(0, 4)) expect(protocolRefusal('agent.note.v1', [tag]), tag).toBeDefined();
  });

  it("takes a request's id from request_id, else the breadcrumb's id; a tool request's from requestId first", () => {
    expect(requestIdOf({ id: 'b1', context: { request_id: 'r1' } })).toBe('r1');
    expect(requestIdOf({ id: 'b1', context: { request_id: '' } })).toBe('b1');
    expect(requestIdOf({ id: 'b1', context: { request_id: 7 } })).toBe('b1');
    expect(requestIdOf({ id: 'b1', context: null })).toBe('b1');
    expect(requestIdOf({ id: 'b1', context: ['request_id'] })).toBe('b1');
    expect(toolRequestIdOf({ id: 'b1', context: { requestId: 'c1', request_id: 'r1' } })).toBe('c1');
    expect(toolRequestIdOf({ id: 'b1', context: { requestId: '', request_id: 'r1' } })).toBe('r1');
    expect(toolRequestIdOf({ id: 'b1', context: {} })).toBe('b1');
  });

  it('reads a breadcrumb for a run with what caused it, and nothing else', () => {
    const read = incoming({
      id: 'b1',
      schema_name: 'workflow.control.v1',
      tags: ['run:run-1'],
      context: { run_id: 'run-1', action: 'pause' },
      created_by: 'user:ann',
      causation: { caused_by: 'm1@1', thread: 'm1', hop: 1 },
      workspace: 'ws',
    } as Parameters<typeof incoming>[0]);
    expect(read).toEqual({
      id: 'b1',
      schema_name: 'workflow.control.v1',
      tags: ['run:run-1'],
      context: { run_id: 'run-1', action: 'pause' },
      created_by: 'user:ann',
      caused_by: 'm1@1',
    });
    expect(
      incoming({ id: 'b2', schema_name: 'x.y.v1', tags: [], context: {}, created_by: 'user:ann' }).caused_by,
    ).toBeUndefined();
  });

  it('keeps its schema names apart: requests are not among what only crumbs writes, definitions are the topology’s', () => {
    for (const request of Object.keys(REQUESTS)) expect(PROTOCOL_SCHEMAS.has(request), request).toBe(false);
    expect(Object.keys(DEFINITION_SCHEMAS)).toContain(AGENT_DEF_SCHEMA);
  });
});
