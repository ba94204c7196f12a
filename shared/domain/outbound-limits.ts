/**
 * Limits on what a definition's outbound requests may ask for, checked where a definition is written
 * (`definition-validation.ts`) and again where it runs (`shared/tools/http.ts`, `shared/adapters/network/`):
 * at most `MAX_REDIRECTS` redirects, and no response body larger than the operator's ceiling
 * (`CRUMBS_MAX_RESPONSE_BYTES`), which a definition may lower but never raise.
 */
import { ENV } from '#shared/topology.ts';

/** The most a response body may be when the operator sets no `CRUMBS_MAX_RESPONSE_BYTES`. */
export const DEFAULT_MAX_RESPONSE_BYTES = 5 * 1024 * 1024;

/** No definition may ask for more redirects than this. */
export const MAX_REDIRECTS = 5;

export interface LimitProblem {
  readonly path: string;
  readonly message: string;
}

/** What is wrong with the limits of an `http` tool's `config` (paths from the definition's context). */
export function httpConfigProblems(config: Record<string, unknown>, ceiling: number): LimitProblem[] {
  const problems: LimitProblem[] = [];
  const bytes = config.max_response_bytes;
  if (bytes !== undefined && (typeof bytes !== 'number' || !Number.isInteger(bytes) || bytes < 1)) {
    problems.push({
      path: 'config.max_response_bytes',
      message: 'expected a whole number of bytes, at least 1',
    });
  } else if (typeof bytes === 'number' && bytes > ceiling) {
    problems.push({
      path: 'config.max_response_bytes',
      message: `at most ${ceiling} bytes (${ENV.maxResponseBytes}, the operator's ceiling), got ${bytes}`,
    });
  }
  const redirects = config.max_redirects;
  if (
    redirects !== undefined &&
    (typeof redirects !== 'number' ||
      !Number.isInteger(redirects) ||
      redirects < 0 ||
      redirects > MAX_REDIRECTS)
  ) {
    problems.push({
      path: 'config.max_redirects',
      message: `expected a whole number from 0 to ${MAX_REDIRECTS}, got ${JSON.stringify(redirects)}`,
    });
  }
  return problems;
}

/** What is wrong with an api agent's `max_response_bytes` (its schema allows 5 MiB; the operator may allow less). */
export function responseLimitProblem(path: string, bytes: number, ceiling: number): LimitProblem | undefined {
  return bytes > ceiling
    ? {
        path,
        message: `at most ${ceiling} bytes (${ENV.maxResponseBytes}, the operator's ceiling), got ${bytes}`,
      }
    : undefined;
}
