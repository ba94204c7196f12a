/** A field that may be written in two places (seed 004's `yaml`, or beside the transport): one answer to "which". */
import type { FieldIssue } from '../errors.ts';

/** The one of two places that sets a field; both set is an issue at the second. */
export function one<T>(
  issues: FieldIssue[],
  first: [string, T | undefined],
  second: [string, T | undefined],
): T | undefined {
  if (first[1] !== undefined && second[1] !== undefined) {
    issues.push({ path: second[0], message: `also set at ${first[0]}: keep one` });
  }
  return first[1] ?? second[1];
}
