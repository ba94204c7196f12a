/**
 * JSONata evaluation with limits. Expressions come from definitions and tool inputs (data, not code we wrote),
 * so every evaluation is bounded: JSONata's timeout and stack depth stop loops and recursion between nodes, its
 * sequence limit caps ranges and sequences, and what it cannot interrupt from outside is made short here —
 * regexes run on a linear-time engine with the evaluation's deadline (`linear-regex.ts`), signatures and regexes
 * that could not are refused when compiled (`jsonata-limits.ts`), no value may grow past MAX_STRING characters
 * (a few doublings reach V8's limits, and per-character natives on such a string crash the process),
 * `$pad` is capped, `$distinct` is linear, `$toMillis` parses its picture with the linear engine, and `$eval`
 * checks the text it parses as compiled expressions are checked. JSONata has no access to JavaScript globals, so
 * it is safe to run untrusted.
 */
import jsonata from 'jsonata';
import { NonRetriableError } from '#shared/domain/errors.ts';
import { unboundedJsonataProblem } from '#shared/domain/lang/jsonata-limits.ts';
import { LinearRegExp, withLinearRegExp } from '#shared/domain/lang/linear-regex.ts';

/**
 * An evaluation stopped at its time limit (`timeoutMs`), between two nodes or inside a regular expression: a caller
 * that tried a short slice first may run it again with the full limit elsewhere (`shared/adapters/checks/`).
 */
export class JsonataTimeoutError extends NonRetriableError {
  constructor(
    message: string,
    readonly timeoutMs: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/**
 * An evaluation stopped after `maxNodes` expression nodes: the budget of a slice a caller tries on its own thread
 * before it runs the evaluation elsewhere in full (`shared/adapters/checks/`). Counting nodes, unlike the clock,
 * gives the same answer on a busy machine.
 */
export class JsonataWorkLimitError extends NonRetriableError {
  constructor(
    message: string,
    readonly maxNodes: number,
  ) {
    super(message);
  }
}

export interface JsonataLimits {
  /** Milliseconds of evaluation. */
  timeoutMs?: number;
  /** Maximum evaluation stack depth. */
  stack?: number;
  /** Expression nodes evaluated, at most (JsonataWorkLimitError past it); default no count. */
  maxNodes?: number;
}

/** Characters of any string an expression produces: above the largest breadcrumb (400 KB) with room to spare. */
export const MAX_STRING = 1_000_000;
/** Items of any sequence or range: above the values of the largest context (fewer than 200,000). */
export const MAX_SEQUENCE = 1_000_000;
/** Characters of strings and items of arrays one evaluation may produce in all (~100 MB at most). */
export const MAX_PRODUCED = 20_000_000;

interface Compiled {
  readonly expression: jsonata.Expression;
  /** The options object jsonata keeps: its RegexEngine is read when an evaluation starts. */
  readonly options: { RegexEngine?: RegExpConstructor };
}
const cache = new Map<string, Compiled>();
/** Characters and items each running evaluation has produced (see `guard`). */
const produced = new WeakMap<object, number>();

function compile(expression: string, limits: JsonataLimits): Compiled {
  const key = `${limits.timeoutMs ?? 1000}:${limits.stack ?? 500}:${expression}`;
  let compiled = cache.get(key);
  if (!compiled) {
    const options = {
      timeout: limits.timeoutMs ?? 1000,
      stack: limits.stack ?? 500,
      sequence: MAX_SEQUENCE,
      RegexEngine: LinearRegExp as unknown as RegExpConstructor,
    };
    let parsed: jsonata.Expression;
    try {
      parsed = jsonata(expression, options);
    } catch (error) {
      throw new NonRetriableError(
        `invalid JSONata expression ${JSON.stringify(expression)}: ${describe(error)}`,
        {
          cause: error,
        },
      );
    }
    const problem = unboundedJsonataProblem(parsed);
    if (problem !== undefined) {
      throw new NonRetriableError(`invalid JSONata expression ${JSON.stringify(expression)}: ${problem}`);
    }
    guard(parsed);
    compiled = { expression: parsed, options };
    if (cache.size > 500) cache.clear();
    cache.set(key, compiled);
  }
  return compiled;
}

/** Evaluates `expression` over `data`; errors name the expression and JSONata's message. */
export async function evaluateJsonata(
  expression: string,
  data: unknown,
  bindings: Record<string, unknown> = {},
  limits: JsonataLimits = {},
): Promise<unknown> {
  const compiled = compile(expression, limits);
  await builtins;
  try {
    // jsonata reads RegexEngine synchronously as the evaluation starts, so this evaluation's engine (carrying its
    // deadline) is its own even when evaluations of the same expression overlap. A regex that one native call
    // applies over and over ($match, $replace over a long text) stops at the deadline as the evaluation does.
    compiled.options.RegexEngine = deadlineEngine(
      Date.now() + (limits.timeoutMs ?? 1000),
      limits.maxNodes ?? Number.POSITIVE_INFINITY,
    );
    const running = compiled.expression.evaluate(data, bindings);
    compiled.options.RegexEngine = LinearRegExp as unknown as RegExpConstructor;
    const result: unknown = await running;
    // JSONata marks result sequences with extra properties; a JSON round trip gives plain values.
    return result === undefined ? null : (JSON.parse(JSON.stringify(result)) as unknown);
  } catch (error) {
    if (error instanceof Error && error.message === NODES_SPENT) {
      throw new JsonataWorkLimitError(
        `JSONata expression ${JSON.stringify(expression)} evaluated more than ${limits.maxNodes} nodes`,
        limits.maxNodes ?? 0,
      );
    }
    const message = `JSONata expression ${JSON.stringify(expression)} failed: ${describe(error)}`;
    if (isTimeout(error)) throw new JsonataTimeoutError(message, limits.timeoutMs ?? 1000, { cause: error });
    throw new NonRetriableError(message, { cause: error });
  }
}

function isTimeout(error: unknown): boolean {
  if (error === null || typeof error !== 'object') return false;
  if ((error as { code?: unknown }).code === 'D1012') return true;
  return error instanceof Error && error.message === REGEX_OUT_OF_TIME;
}

const REGEX_OUT_OF_TIME = 'the evaluation ran out of time inside a regular expression';

// ---------------------------------------------------------------------------------------------------------------
// Guards inside an evaluation

/**
 * The evaluation's own regex engine: it carries the evaluation's deadline, and its count of nodes (`nodes`, read
 * by the exit hook in `guard` from the evaluation's frame, where jsonata keeps the engine).
 */
function deadlineEngine(deadline: number, maxNodes: number): RegExpConstructor {
  return class extends LinearRegExp {
    static nodes = { left: maxNodes };
    override exec(input: string): RegExpExecArray | null {
      if (Date.now() > deadline) throw new Error(REGEX_OUT_OF_TIME);
      return super.exec(input);
    }
  } as unknown as RegExpConstructor;
}

const NODES_SPENT = 'the evaluation used up its count of nodes';

/** A JSONata error (jsonata throws plain objects with a message), for limits JSONata itself does not have. */
function limitError(message: string): Error {
  return new Error(message);
}

/** JSONata's own implementations of the functions wrapped below, read once from its static frame. */
const builtins: Promise<{ toMillis: Builtin; pad: Builtin; eval: Builtin }> = (async () => {
  const read = async (name: string) =>
    (await jsonata(`$${name}`).evaluate({})) as { implementation: (...args: unknown[]) => unknown };
  return {
    toMillis: (await read('toMillis')).implementation,
    pad: (await read('pad')).implementation,
    eval: (await read('eval')).implementation,
  };
})();
type Builtin = (this: unknown, ...args: unknown[]) => unknown;
let resolved: Awaited<typeof builtins> | undefined;
void builtins.then((b) => {
  resolved = b;
});

function guard(expression: jsonata.Expression): void {
  // Every node's result passes here: a string past MAX_STRING stops the evaluation before anything iterates it,
  // and what the evaluation has produced in all (characters of strings, items of arrays, counted at each node
  // that yields them) is charged to it, so a loop cannot fill the heap within its time budget.
  expression.assign(Symbol.for('jsonata.__evaluate_exit') as unknown as string, (...args: unknown[]) => {
    // `environment.base` is the frame jsonata creates for each evaluation; it holds the evaluation's engine.
    const evaluation = (args[2] as { base?: { RegexEngine?: { nodes?: { left: number } } } } | undefined)
      ?.base;
    const nodes = evaluation?.RegexEngine?.nodes;
    if (nodes !== undefined && --nodes.left < 0) throw limitError(NODES_SPENT);
    const result = args[3];
    const size = typeof result === 'string' ? result.length : Array.isArray(result) ? result.length : 0;
    if (size === 0) return;
    if (typeof result === 'string' && size > MAX_STRING) {
      throw limitError(`a string of more than ${MAX_STRING} characters was produced`);
    }
    if (evaluation === undefined) return;
    const total = (produced.get(evaluation) ?? 0) + size;
    if (total > MAX_PRODUCED) {
      throw limitError(`the evaluation produced more than ${MAX_PRODUCED} characters and items in all`);
    }
    produced.set(evaluation, total);
  });
  expression.registerFunction(
    'toMillis',
    function (this: unknown, ...args: unknown[]) {
      // The picture becomes a RegExp built with the global constructor inside jsonata (see withLinearRegExp).
      return withLinearRegExp(() => (resolved as Awaited<typeof builtins>).toMillis.apply(this, args));
    },
    '<s-s?:n>',
  );
  expression.registerFunction(
    'pad',
    function (this: unknown, ...args: unknown[]) {
      const width = args[1];
      if (typeof width === 'number' && Math.abs(width) > MAX_STRING) {
        throw limitError(`$pad cannot make a string of more than ${MAX_STRING} characters`);
      }
      return (resolved as Awaited<typeof builtins>).pad.apply(this, args);
    },
    '<s-ns?:s>',
  );
  expression.registerFunction('distinct', distinct, '<x:x>');
  expression.registerFunction(
    'eval',
    function (this: unknown, ...args: unknown[]) {
      // `$eval` parses text made at run time: it gets the same compile-time checks as the expression itself.
      if (typeof args[0] === 'string') {
        let parsed: jsonata.Expression | undefined;
        try {
          parsed = jsonata(args[0]);
        } catch {
          // A syntax error: jsonata's own $eval reports it.
        }
        const problem = parsed === undefined ? undefined : unboundedJsonataProblem(parsed);
        if (problem !== undefined) throw limitError(`$eval: ${problem}`);
      }
      return (resolved as Awaited<typeof builtins>).eval.apply(this, args);
    },
    '<sx?:x>',
  );
}

/**
 * `$distinct` in linear time: jsonata compares every item with every kept one (quadratic, and one native call).
 * Items are told apart by a canonical text (object keys sorted, as jsonata's deep equality ignores their order);
 * functions are only equal to themselves.
 */
function distinct(this: unknown, arr: unknown): unknown {
  if (!Array.isArray(arr) || arr.length <= 1) return arr;
  const functions = new Map<object, number>();
  const canonical = (value: unknown): string => {
    if (value === undefined) return 'u';
    if (value === null || typeof value !== 'object') {
      if (typeof value === 'function') return identity(value);
      return JSON.stringify(value) ?? 'u';
    }
    if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
    if ('_jsonata_lambda' in value || '_jsonata_function' in value) return identity(value);
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  };
  const identity = (value: object): string => {
    let id = functions.get(value);
    if (id === undefined) {
      id = functions.size;
      functions.set(value, id);
    }
    return `f${id}`;
  };
  const seen = new Set<string>();
  const kept: unknown[] = [];
  for (const item of arr) {
    const key = canonical(item);
    if (seen.has(key)) continue;
    seen.add(key);
    kept.push(item);
  }
  // A JSONata sequence stays one (single-item results unwrap as jsonata's own $distinct does).
  if ((arr as { sequence?: unknown }).sequence === true)
    Object.defineProperty(kept, 'sequence', { value: true });
  return kept;
}

function describe(error: unknown): string {
  if (error !== null && typeof error === 'object' && 'message' in error) {
    const e = error as { message: unknown; position?: unknown };
    return `${String(e.message)}${typeof e.position === 'number' ? ` (at position ${e.position})` : ''}`;
  }
  return String(error);
}
