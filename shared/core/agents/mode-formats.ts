/**
 * The formats of plan and build mode: what the model is asked for (`planInstruction`, `buildInstruction`) and how
 * its answer is checked against the agent's configuration (`checkPlan`, `checkDeliverable`):
 *
 *   plan         json, yaml: parses and matches `schema`; markdown: not empty, with every heading of `template`.
 *   deliverable  json: parses and matches `schema`; markdown and html: not empty, with every one of `sections` as
 *                a heading, in order.
 *
 * A check returns the problems as text, which the model is sent back once (`modes.ts`). Another type's output
 * becomes deliverable content in the configured format (`contentOf`).
 */
import type { AgentSpec } from '#shared/domain/agent-spec.ts';
import {
  type FieldIssue,
  InvalidJsonSchemaError,
  NonRetriableError,
  ValidationError,
} from '#shared/domain/errors.ts';
import { formatIssues } from '#shared/domain/lang/json-schema.ts';
import type { YamlParser } from '#shared/domain/yaml.ts';
import type { SchemaCheck } from '#shared/ports/checks.ts';
import type { AgentAnswer } from './contract.ts';

/** A check of a model's answer: its value, or the problems to send back. */
export type Check<T> = (text: string) => Promise<{ ok: true; value: T } | { ok: false; problems: string }>;

/** Validates against a schema: the agent workspace's data checks (`shared/ports/checks.ts`). */
export type Validate = (check: SchemaCheck) => Promise<FieldIssue[]>;

/** The problems of `value` against a configured JSON Schema (`path` names it), or undefined. */
export async function schemaProblems(
  validate: Validate,
  schema: Record<string, unknown> | undefined,
  value: unknown,
  path: string,
): Promise<string | undefined> {
  if (schema === undefined) return undefined;
  let issues: FieldIssue[];
  try {
    issues = await validate({ cacheKey: `${path}:${JSON.stringify(schema)}`, schema, what: path, value });
  } catch (error) {
    if (!(error instanceof InvalidJsonSchemaError)) throw error;
    throw new NonRetriableError(`${path} is not a usable JSON Schema: ${error.problem}`, { cause: error });
  }
  return issues.length > 0 ? formatIssues(issues) : undefined;
}

function parseJson(text: string): { ok: true; value: unknown } | { ok: false; problems: string } {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false, problems: `not JSON: ${text.slice(0, 120)}` };
  }
}

/** A JSON answer: it parses, and matches `schema` when there is one. */
async function checkJson(
  validate: Validate,
  text: string,
  schema: Record<string, unknown> | undefined,
  path: string,
): ReturnType<Check<unknown>> {
  const parsed = parseJson(text);
  if (!parsed.ok) return parsed;
  const problems = await schemaProblems(validate, schema, parsed.value, path);
  return problems === undefined ? parsed : { ok: false, problems };
}

const HEADING = /^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$/gm;

function markdownHeadings(text: string): string[] {
  return [...text.matchAll(HEADING)].map((m) => (m[1] ?? '').trim().toLowerCase());
}

function htmlHeadings(text: string): string[] {
  return [...text.matchAll(/<h[1-6][^>]*>([\s\S]*?)<\/h[1-6]>/gi)].map((m) =>
    (m[1] ?? '')
      .replace(/<[^>]+>/g, '')
      .replace(/&amp;/g, '&')
      .replace(/&lt;/g, '<')
      .replace(/&gt;/g, '>')
      .trim()
      .toLowerCase(),
  );
}

/** The headings missing from `found` (in order: each after the previous). */
function missingSections(wanted: readonly string[], found: readonly string[]): string[] {
  const missing: string[] = [];
  let from = 0;
  for (const section of wanted) {
    const at = found.indexOf(section.trim().toLowerCase(), from);
    if (at < 0) missing.push(section);
    else from = at + 1;
  }
  return missing;
}

export function checkPlan(
  spec: AgentSpec,
  parseYaml: YamlParser | undefined,
  validate: Validate,
): Check<unknown> {
  const cfg = spec.plan;
  return async (text) => {
    switch (cfg.format) {
      case 'json':
        return checkJson(validate, text, cfg.schema, 'plan.schema');
      case 'yaml': {
        if (parseYaml === undefined) throw new NonRetriableError('a yaml plan needs the YAML parser');
        let value: unknown;
        try {
          value = parseYaml(text, 'plan');
        } catch (error) {
          if (!(error instanceof ValidationError)) throw error;
          return { ok: false, problems: error.message };
        }
        const problems = await schemaProblems(validate, cfg.schema, value, 'plan.schema');
        return problems === undefined ? { ok: true, value: text } : { ok: false, problems };
      }
      case 'markdown': {
        if (text.trim() === '') return { ok: false, problems: 'the plan is empty' };
        const missing = missingSections(markdownHeadings(cfg.template ?? ''), markdownHeadings(text));
        return missing.length === 0
          ? { ok: true, value: text }
          : { ok: false, problems: `the template's headings are missing: ${missing.join(', ')}` };
      }
    }
  };
}

export function planInstruction(spec: AgentSpec): string {
  const cfg = spec.plan;
  return [
    '# Mode: plan',
    'Write a plan for the request: the steps you would take and what each produces. Do not carry it out.',
    `Format: ${cfg.format}.`,
    ...(cfg.format === 'yaml' && cfg.schema !== undefined
      ? [`The YAML must match this JSON Schema: ${JSON.stringify(cfg.schema)}`]
      : []),
    ...(cfg.template !== undefined ? [`Follow this template, keeping its headings:\n${cfg.template}`] : []),
  ].join('\n');
}

export function checkDeliverable(spec: AgentSpec, validate: Validate): Check<unknown> {
  const cfg = spec.deliverable;
  return async (text) => {
    switch (cfg.format) {
      case 'json':
        return checkJson(validate, text, cfg.schema, 'deliverable.schema');
      case 'markdown':
      case 'html': {
        if (text.trim() === '') return { ok: false, problems: 'the deliverable is empty' };
        const found = cfg.format === 'html' ? htmlHeadings(text) : markdownHeadings(text);
        const missing = missingSections(cfg.sections ?? [], found);
        return missing.length === 0
          ? { ok: true, value: text }
          : { ok: false, problems: `sections missing (each a heading, in order): ${missing.join(', ')}` };
      }
    }
  };
}

export function buildInstruction(spec: AgentSpec): string {
  const cfg = spec.deliverable;
  return [
    '# Mode: build',
    `Produce the deliverable "${cfg.type}" the request asks for, complete and ready to use.`,
    `Format: ${cfg.format}.`,
    ...(cfg.sections !== undefined && cfg.sections.length > 0
      ? [`Sections, each as a heading, in this order: ${cfg.sections.join(', ')}.`]
      : []),
  ].join('\n');
}

/** A non-model type's answer as deliverable content in the configured format. */
export function contentOf(answer: Extract<AgentAnswer, { status: 'success' }>, spec: AgentSpec): unknown {
  const format = spec.deliverable.format;
  const value = answer.output !== undefined ? answer.output : (answer.text ?? null);
  if (format === 'json') {
    if (answer.output === undefined && typeof answer.text === 'string') {
      const parsed = parseJson(answer.text);
      return parsed.ok ? parsed.value : { text: answer.text };
    }
    return value;
  }
  const text = typeof value === 'string' ? value : JSON.stringify(value, null, 2);
  if (format === 'html') {
    const escaped = text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
    return typeof value === 'string'
      ? `<article>\n<p>${escaped}</p>\n</article>\n`
      : `<pre>${escaped}</pre>\n`;
  }
  return typeof value === 'string' ? value : `\`\`\`json\n${text}\n\`\`\`\n`;
}
