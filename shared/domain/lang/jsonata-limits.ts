/**
 * What makes a JSONata expression from data safe to run, checked where it is compiled: when a definition is
 * accepted (`definition-validation.ts`) and before every evaluation (`shared/domain/lang/jsonata.ts`).
 *
 * JSONata's own timeout is checked between the nodes it evaluates, so it stops loops and recursion, but not a
 * single native call that runs long. Those are closed here:
 * - `/regex/` literals run on the linear-time engine (`linear-regex.ts`, via jsonata's RegexEngine option); one
 *   it cannot run (lookaround, backreferences) is refused with its position.
 * - A lambda's signature (`function($a, $b)<n+n+>`) becomes a backtracking RegExp inside jsonata, matched against
 *   the call's argument types: two repeating parameters take polynomial time in the number of arguments (minutes
 *   for a call with a hundred), so a signature may repeat (`+`) one parameter and make at most 8 optional.
 */
import type jsonata from 'jsonata';
import { linearRegexProblem } from './linear-regex.ts';

export const JSONATA_SIGNATURE_LIMITS = Object.freeze({ repeated: 1, optional: 8 });

/** The first thing in a parsed expression that could not run in bounded time, with its position; or undefined. */
export function unboundedJsonataProblem(expression: jsonata.Expression): string | undefined {
  const seen = new Set<object>();
  const stack: unknown[] = [expression.ast()];
  while (stack.length > 0) {
    const node = stack.pop();
    if (node === null || typeof node !== 'object' || seen.has(node)) continue;
    seen.add(node);
    if (node instanceof RegExp) continue;
    const n = node as { type?: unknown; value?: unknown; position?: unknown; signature?: unknown };
    const at = typeof n.position === 'number' ? ` (at position ${n.position})` : '';
    if (n.type === 'regex' && n.value instanceof RegExp) {
      const problem = linearRegexProblem(n.value.source, n.value.flags.replace('g', ''));
      if (problem !== undefined) return `regular expression /${n.value.source}/${at}: ${problem}`;
    }
    if (n.type === 'lambda' && n.signature !== null && typeof n.signature === 'object') {
      const definition = (n.signature as { definition?: unknown }).definition;
      if (typeof definition === 'string') {
        const problem = signatureProblem(definition);
        if (problem !== undefined) return `function signature ${definition}${at}: ${problem}`;
      }
      continue;
    }
    for (const value of Object.values(node))
      if (value !== null && typeof value === 'object') stack.push(value);
  }
  return undefined;
}

function signatureProblem(definition: string): string | undefined {
  let depth = 0;
  let repeated = 0;
  let optional = 0;
  // Only the top level becomes the regex; `a<n>` and `f<n:n>` subtypes are checked separately by jsonata.
  for (const c of definition.slice(1)) {
    if (c === '<' || c === '(') depth++;
    else if (c === '>' || c === ')') depth--;
    else if (depth === 0 && c === ':') break;
    else if (depth === 0 && c === '+') repeated++;
    else if (depth === 0 && (c === '?' || c === '-')) optional++;
  }
  if (repeated > JSONATA_SIGNATURE_LIMITS.repeated || optional > JSONATA_SIGNATURE_LIMITS.optional) {
    return (
      `at most ${JSONATA_SIGNATURE_LIMITS.repeated} parameter may repeat (+) and at most ` +
      `${JSONATA_SIGNATURE_LIMITS.optional} may be optional (? or -): jsonata matches signatures with a ` +
      'backtracking regular expression whose time grows with each of them'
    );
  }
  return undefined;
}
