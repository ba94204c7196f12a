/**
 * The operator's ceiling on the time a definition may ask for (`TENANT_LIMITS.timeoutCeilingMs`,
 * `CRUMBS_TIMEOUT_CEILING_MS`): a tool's `timeout_ms` and an agent's transport `timeout_ms` (function code, MCP
 * and HTTP calls, A2A) may be anything up to it; above it the definition is `invalid`, the issue naming the
 * ceiling. The schemas keep their own hard maxima (what the executor's Lambda timeout allows); this is the
 * operator's lower bound on top, so one workspace's definitions cannot hold an executor for longer.
 */
import { ENV } from '#shared/topology.ts';
import type { ValidatedDefinition } from './definition-validation.ts';
import type { FieldIssue } from './errors.ts';

export function timeoutCeilingIssues(parsed: ValidatedDefinition, ceilingMs: number): FieldIssue[] {
  const asked: [string, number | undefined][] = [];
  if (parsed.kind === 'tool') asked.push(['timeout_ms', parsed.definition.timeout_ms]);
  if (parsed.kind === 'agent' && parsed.spec) {
    const spec = parsed.spec;
    if (spec.type === 'function') asked.push(['transport.function.timeout_ms', spec.limits.timeout_ms]);
    if (spec.type === 'tool') asked.push(['transport.mcp.timeout_ms', spec.mcp?.timeout_ms]);
    if (spec.type === 'api') asked.push(['transport.api.timeout_ms', spec.api.timeout_ms]);
    if (spec.type === 'external') asked.push(['transport.external.timeout_ms', spec.external.timeout_ms]);
  }
  return asked
    .filter((a): a is [string, number] => a[1] !== undefined && a[1] > ceilingMs)
    .map(([path, ms]) => ({
      path,
      message: `${ms} ms is above this installation's ceiling of ${ceilingMs} ms (${ENV.timeoutCeilingMs})`,
    }));
}
