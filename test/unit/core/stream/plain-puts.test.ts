/**
 * A plain put's writer: only a person (`user:…`) can be named by whoever writes the table. `system:`, `agent:`,
 * `tool:` and any other kind of principal are crumbs' own writers; a claim to one is replaced by `user:plain-put`
 * and kept as `claimed_by`.
 */
import { describe, expect, it } from 'vitest';
import { classifyPlainPut, PLAIN_PUT_PRINCIPAL, parsePlainPut } from '#shared/core/stream/plain-puts.ts';

const item = (createdBy?: unknown) => ({
  id: 'planted',
  workspace: 'team-a',
  schema_name: 'definition.status.v1',
  context: { definition_id: 'x', state: 'active' },
  ...(createdBy !== undefined ? { created_by: createdBy } : {}),
});

function writer(createdBy?: unknown) {
  const parsed = parsePlainPut(item(createdBy));
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  return { created_by: parsed.value.created_by, claimed_by: parsed.value.claimed_by };
}

describe('plain put writers', () => {
  it('takes a person named in created_by', () => {
    expect(writer('user:alice')).toEqual({ created_by: 'user:alice', claimed_by: undefined });
  });

  it('names user:plain-put when no writer is given', () => {
    expect(writer()).toEqual({ created_by: PLAIN_PUT_PRINCIPAL, claimed_by: undefined });
    expect(PLAIN_PUT_PRINCIPAL).toBe('user:plain-put');
  });

  it.each([
    'system:rule-manager',
    'system:workflow',
    'system:plain-put',
    'agent:x',
    'tool:echo',
    'workflow:w',
  ])('replaces a claim to crumbs’ own writer %s and notes it', (claimed) => {
    expect(writer(claimed)).toEqual({ created_by: PLAIN_PUT_PRINCIPAL, claimed_by: claimed });
  });

  it('treats a console edit that leaves crumbs’ created_by in place alike', () => {
    const old = { ...item('system:rule-manager'), kind: 'breadcrumb', write_id: 'w1', version: 1 };
    const edited = { ...old, context: { definition_id: 'x', state: 'invalid' } };
    const outcome = classifyPlainPut(edited, old);
    expect(outcome.kind).toBe('adopt');
    if (outcome.kind !== 'adopt') return;
    expect(outcome.input.created_by).toBe(PLAIN_PUT_PRINCIPAL);
    expect(outcome.input.claimed_by).toBe('system:rule-manager');
  });

  it('still refuses a created_by that is no principal at all', () => {
    const parsed = parsePlainPut(item('Not A Principal'));
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect(parsed.errors.map((e) => e.path)).toContain('created_by');
  });
});
