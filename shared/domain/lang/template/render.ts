/**
 * The template renderer: walks a parsed template over the data with Handlebars' scoping (context, @data and block
 * parameter frames), reading own properties only and charging every statement and loop iteration to the limits.
 */
import { TemplateRenderError } from '../../errors.ts';
import {
  BLOCKED_NAMES,
  type BlockStatement,
  type Expression,
  type InlineHelper,
  type PathExpression,
  type Program,
  type RenderLimits,
  TEMPLATE_LIMITS,
  type Template,
} from './ast.ts';
import { parseTemplate } from './parse.ts';

interface ContextFrame {
  readonly value: unknown;
  readonly parent: ContextFrame | undefined;
}
interface DataFrame {
  readonly root: unknown;
  readonly index?: number;
  readonly key?: string | number;
  readonly first?: boolean;
  readonly last?: boolean;
  readonly parent?: DataFrame;
}
interface ParamFrame {
  readonly names: readonly string[];
  readonly values: readonly unknown[];
  readonly parent: ParamFrame | undefined;
}
interface Scope {
  readonly context: ContextFrame;
  readonly data: DataFrame;
  readonly params: ParamFrame | undefined;
}

/**
 * Renders a parsed template (or parses `template` first) against `data`. Throws `TemplateSyntaxError` for a
 * source that does not parse and `TemplateRenderError` when a limit is exceeded.
 */
export function renderTemplate(
  template: Template | string,
  data: unknown,
  limits: Partial<RenderLimits> = {},
): string {
  const parsed = typeof template === 'string' ? parseTemplate(template) : template;
  const renderer = new Renderer({ ...TEMPLATE_LIMITS, ...limits });
  renderer.program(parsed.program, {
    context: { value: data, parent: undefined },
    data: { root: data },
    params: undefined,
  });
  return renderer.output();
}

class Renderer {
  private readonly chunks: string[] = [];
  private length = 0;
  private steps = 0;

  constructor(private readonly limits: RenderLimits) {}

  output(): string {
    return this.chunks.join('');
  }

  program(program: Program, scope: Scope): void {
    for (const statement of program.body) {
      this.step();
      switch (statement.type) {
        case 'content':
          this.append(statement.value);
          break;
        case 'comment':
          break;
        case 'mustache':
          this.append(show(this.evaluate(statement.expression, scope)));
          break;
        case 'block':
          this.block(statement, scope);
          break;
      }
    }
  }

  private block(block: BlockStatement, scope: Scope): void {
    const [param] = block.params;
    switch (block.helper) {
      case 'if':
      case 'unless': {
        const value = this.evaluate(param as Expression, scope);
        const includeZero = block.includeZero && this.evaluate(block.includeZero, scope);
        const truthy = !((!includeZero && !value) || isEmpty(value));
        this.call(
          truthy === (block.helper === 'if') ? block.program : block.inverse,
          scope.context.value,
          scope,
        );
        return;
      }
      case 'with': {
        const value = this.evaluate(param as Expression, scope);
        if (isEmpty(value)) this.call(block.inverse, scope.context.value, scope);
        else this.call(block.program, value, scope, scope.data, [value], block.blockParams);
        return;
      }
      case 'each':
        this.each(block, this.evaluate(param as Expression, scope), scope);
        return;
      case 'section':
        this.section(block, scope);
        return;
    }
  }

  /** Handlebars' blockHelperMissing: `{{#name}}` on a value that is not a helper. */
  private section(block: BlockStatement, scope: Scope): void {
    const value = this.evaluate(block.params[0] as Expression, scope);
    if (value === true) this.call(block.program, scope.context.value, scope);
    else if (value === false || value === null || value === undefined) {
      this.call(block.inverse, scope.context.value, scope);
    } else if (Array.isArray(value)) this.each(block, value, scope);
    else this.call(block.program, value, scope);
  }

  private each(block: BlockStatement, value: unknown, scope: Scope): void {
    let count = 0;
    if (Array.isArray(value)) {
      count = value.length;
      for (let index = 0; index < count; index++) {
        this.iterate(block, scope, value[index], index, index, index === count - 1);
      }
    } else if (value !== null && typeof value === 'object') {
      const record = value as Record<string, unknown>;
      const keys = Object.keys(record).filter((key) => !BLOCKED_NAMES.has(key));
      count = keys.length;
      for (let index = 0; index < count; index++) {
        const key = keys[index] as string;
        this.iterate(block, scope, record[key], key, index, index === count - 1);
      }
    }
    if (count === 0) this.call(block.inverse, scope.context.value, scope);
  }

  private iterate(
    block: BlockStatement,
    scope: Scope,
    item: unknown,
    key: string | number,
    index: number,
    last: boolean,
  ): void {
    this.step();
    // Every frame has the same shape (no spread): this runs once per item of every loop.
    const data: DataFrame = {
      root: scope.data.root,
      key,
      index,
      first: index === 0,
      last,
      parent: scope.data,
    };
    this.call(block.program, item, scope, data, [item, key], block.blockParams);
  }

  /** Runs a block's program with a new `this`; `../` reaches the previous one only if `this` changed. */
  private call(
    program: Program | undefined,
    context: unknown,
    scope: Scope,
    data: DataFrame = scope.data,
    values: readonly unknown[] = [],
    names: readonly string[] = [],
  ): void {
    if (!program) return;
    const current = scope.context.value;
    const same = context === current || (context == null && current == null);
    this.program(program, {
      context: same ? scope.context : { value: context, parent: scope.context },
      data,
      params: names.length > 0 ? { names, values, parent: scope.params } : scope.params,
    });
  }

  private evaluate(expression: Expression, scope: Scope): unknown {
    switch (expression.kind) {
      case 'literal':
        return expression.value;
      case 'path':
        return resolvePath(expression, scope);
      case 'call': {
        const args = expression.params.map((param) => this.evaluate(param, scope));
        return callHelper(expression.helper, args);
      }
    }
  }

  private append(text: string): void {
    if (!text) return;
    this.length += text.length;
    if (this.length > this.limits.maxOutputLength) {
      throw new TemplateRenderError(`template output exceeds ${this.limits.maxOutputLength} characters`);
    }
    this.chunks.push(text);
  }

  private step(): void {
    if (++this.steps > this.limits.maxSteps) {
      throw new TemplateRenderError(`template rendering exceeds ${this.limits.maxSteps} steps`);
    }
    const budget = this.limits.budget;
    if (budget !== undefined && --budget.left < 0) {
      budget.spent = true;
      throw new TemplateRenderError(
        `${budget.what} exceed their budget of steps; this template was not rendered`,
      );
    }
  }
}

function resolvePath(path: PathExpression, scope: Scope): unknown {
  const { parts } = path;
  let value: unknown;
  let start = 1;
  if (path.data) {
    let frame: DataFrame | undefined = scope.data;
    for (let i = 0; i < path.depth && frame; i++) frame = frame.parent;
    value = frame ? dataVariable(frame, parts[0] as string) : undefined;
  } else if (path.blockParam) {
    value = blockParam(scope.params, parts[0] as string);
  } else {
    let frame: ContextFrame | undefined = scope.context;
    for (let i = 0; i < path.depth && frame; i++) frame = frame.parent;
    value = frame?.value;
    start = 0;
  }
  for (let i = start; i < parts.length; i++) {
    // Handlebars walks a data path (`@root.a.b`) with `&&`: a falsy value on the way (0, "", false) is the
    // result itself, where a context path (`a.b`) gives nothing.
    value = path.data && !value ? value : property(value, parts[i] as string);
  }
  return value;
}

function dataVariable(frame: DataFrame, name: string): unknown {
  switch (name) {
    case 'root':
      return frame.root;
    case 'index':
      return frame.index;
    case 'key':
      return frame.key;
    case 'first':
      return frame.first;
    case 'last':
      return frame.last;
    default:
      return undefined;
  }
}

function blockParam(frame: ParamFrame | undefined, name: string): unknown {
  for (let f = frame; f; f = f.parent) {
    const index = f.names.indexOf(name);
    if (index >= 0) return f.values[index];
  }
  return undefined;
}

/** Own properties only: what JSON put there, never what a prototype provides. */
function property(target: unknown, key: string): unknown {
  if (target === null || target === undefined || BLOCKED_NAMES.has(key)) return undefined;
  if (typeof target !== 'object' && typeof target !== 'string') return undefined;
  const object = Object(target) as Record<string, unknown>;
  return Object.hasOwn(object, key) ? object[key] : undefined;
}

function callHelper(helper: InlineHelper, args: readonly unknown[]): unknown {
  const [first, second] = args;
  switch (helper) {
    case 'lookup':
      // Handlebars returns a falsy target itself (`{{lookup 0 "x"}}` prints 0).
      if (!first) return first;
      return property(first, propertyKey(second));
    case 'json':
      return JSON.stringify(first) ?? '';
    case 'join':
      return Array.isArray(first) ? first.map(show).join(show(second)) : show(first);
  }
}

/**
 * The property name JavaScript makes of a `lookup` key, as Handlebars used it: `[0]` is "0", null is "null".
 * Written out rather than `String(key)`, which would call a `toString` that a JSON object may hold as data.
 */
function propertyKey(key: unknown): string {
  if (Array.isArray(key)) return key.map((item) => (item == null ? '' : propertyKey(item))).join(',');
  if (key !== null && typeof key === 'object') return '[object Object]';
  return String(key);
}

/** Handlebars' isEmpty: what #with and #each treat as nothing. */
function isEmpty(value: unknown): boolean {
  return (!value && value !== 0) || (Array.isArray(value) && value.length === 0);
}

/** How a value prints: as Handlebars (strings as is, arrays comma-joined, null as ""), but objects as JSON. */
function show(value: unknown): string {
  if (value === undefined || value === null) return '';
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) return value.map(show).join(',');
  if (typeof value === 'object') return JSON.stringify(value) ?? '';
  if (typeof value === 'function' || typeof value === 'symbol') return '';
  return String(value);
}
