/**
 * What EventBridge sends to a target: the event, `Input` verbatim, the value at `InputPath`, or an
 * `InputTransformer` rendering, following "Amazon EventBridge input transformation" in the user guide. The template
 * is scanned once. If it is JSON once its placeholders are filled (an object, an array or a quoted string),
 * placeholders are substituted by context: outside quotes a string is written as a JSON string and other values
 * as JSON; inside quotes a string as is (EventBridge does not escape extracted values), numbers and booleans as
 * text, objects and arrays as JSON without their quotes (the documented "Detail is {state:RUNNING}"). Otherwise
 * the template is plain text and every placeholder is substituted as inside quotes. A variable whose path matches
 * nothing is not created; its placeholder renders as nothing inside quotes and as `null` outside (our choice, so a
 * JSON template stays JSON). Placeholders naming neither a variable nor a predefined one are left as they are.
 * Predefined: `aws.events.rule-arn`, `aws.events.rule-name`, `aws.events.event.ingestion-time`, `aws.events.event`
 * (the event without `detail`) and `aws.events.event.json` (the whole event).
 */
import { evaluateJsonPath } from './json-path.ts';

export interface InputTransformer {
  InputPathsMap?: Record<string, string>;
  InputTemplate: string;
}

export interface TargetInputConfig {
  Input?: string;
  InputPath?: string;
  InputTransformer?: InputTransformer;
}

export interface TransformContext {
  ruleArn: string;
  ruleName: string;
  /** ISO 8601. */
  ingestionTime: string;
}

export const RESERVED_VARIABLES = [
  'aws.events.rule-arn',
  'aws.events.rule-name',
  'aws.events.event.ingestion-time',
  'aws.events.event',
  'aws.events.event.json',
] as const;

type Piece = { text: string } | { variable: string; inString: boolean };

const PLACEHOLDER = /^<([A-Za-z0-9_.-]+)>/;

/** Splits a template into text and placeholders, noting which placeholders sit inside a JSON string literal. */
export function scanTemplate(template: string, isVariable: (name: string) => boolean): Piece[] {
  const pieces: Piece[] = [];
  let text = '';
  let inString = false;
  for (let i = 0; i < template.length; i++) {
    const ch = template[i]!;
    if (ch === '<') {
      const m = PLACEHOLDER.exec(template.slice(i));
      if (m !== null && isVariable(m[1]!)) {
        if (text) pieces.push({ text });
        text = '';
        pieces.push({ variable: m[1]!, inString });
        i += m[0].length - 1;
        continue;
      }
    }
    if (inString && ch === '\\' && i + 1 < template.length) {
      text += ch + template[i + 1];
      i++;
      continue;
    }
    if (ch === '"') inString = !inString;
    text += ch;
  }
  if (text) pieces.push({ text });
  return pieces;
}

function isJsonTemplate(pieces: Piece[]): boolean {
  const probe = pieces.map((p) => ('text' in p ? p.text : p.inString ? '' : 'null')).join('');
  try {
    JSON.parse(probe);
    return true;
  } catch {
    return false;
  }
}

function renderValue(found: boolean, value: unknown, inString: boolean): string {
  if (!found) return inString ? '' : 'null';
  if (typeof value === 'string') return inString ? value : JSON.stringify(value);
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (value === null || value === undefined) return 'null';
  const json = JSON.stringify(value);
  return inString ? json.replaceAll('"', '') : json;
}

/** The value of a declared variable whose path matched nothing: the variable "isn't created". */
export const NOT_CREATED: unique symbol = Symbol('not created');

/** Renders an InputTemplate with variables already resolved (`NOT_CREATED` for a path that matched nothing). */
export function renderInputTemplate(template: string, variables: ReadonlyMap<string, unknown>): string {
  const pieces = scanTemplate(template, (name) => variables.has(name) || isReserved(name));
  const json = isJsonTemplate(pieces);
  return pieces
    .map((p) => {
      if ('text' in p) return p.text;
      const value = variables.get(p.variable);
      const found = variables.has(p.variable) && value !== NOT_CREATED;
      return renderValue(found, value, json ? p.inString : true);
    })
    .join('');
}

function isReserved(name: string): boolean {
  return (RESERVED_VARIABLES as readonly string[]).includes(name);
}

/** Resolves an InputTransformer's variables against an event and renders its template. */
export function applyInputTransformer(
  transformer: InputTransformer,
  event: Record<string, unknown>,
  context: TransformContext,
): string {
  const variables = new Map<string, unknown>();
  for (const [name, path] of Object.entries(transformer.InputPathsMap ?? {})) {
    const result = evaluateJsonPath(event, path);
    variables.set(name, result.found ? result.value : NOT_CREATED);
  }
  const { detail: _detail, ...withoutDetail } = event;
  variables.set('aws.events.rule-arn', context.ruleArn);
  variables.set('aws.events.rule-name', context.ruleName);
  variables.set('aws.events.event.ingestion-time', context.ingestionTime);
  variables.set('aws.events.event', withoutDetail);
  variables.set('aws.events.event.json', event);
  return renderInputTemplate(transformer.InputTemplate, variables);
}

/**
 * The text a target receives. `InputPath` selecting nothing yields `null` (our choice; EventBridge does not
 * document it).
 */
export function targetInput(
  target: TargetInputConfig,
  event: Record<string, unknown>,
  context: TransformContext,
): string {
  if (target.Input !== undefined) return target.Input;
  if (target.InputPath !== undefined) {
    const result = evaluateJsonPath(event, target.InputPath);
    return result.found ? JSON.stringify(result.value ?? null) : 'null';
  }
  if (target.InputTransformer !== undefined)
    return applyInputTransformer(target.InputTransformer, event, context);
  return JSON.stringify(event);
}
