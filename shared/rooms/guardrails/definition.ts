/**
 * `guardrail.def.v1`: a policy on what goes into and comes out of models and tools. Only people write or delete it
 * (`write-gate.ts`); it is checked when written (`guardrailIssues`: a pattern that cannot compile or whose matches
 * have no bound is refused naming it). An agent names policies in `guardrails: ["pii", "topics@3"]` (a pin holds a
 * version of the policy, as steps pin agents); a policy with `applies_to` holds for every agent it selects in its
 * workspace.
 *
 * Points (where content crosses a boundary): `input` (the person's message), `model_input` (the prompt after context
 * assembly), `model_output`, `tool_args`, `tool_result`, `memory_write`, `handoff` (a sub-agent's request and
 * answer, an A2A or MCP call in either direction). Parts (which pieces of a model's input a policy reads): `user`,
 * `context`, `tool_result`, `assistant`, `system` and `tools` (scaffolding and tool definitions, off by default).
 */

import { toFieldIssues } from '#shared/domain/breadcrumb.ts';
import { NameSchema } from '#shared/domain/definition-fields.ts';
import { type FieldIssue, ValidationError } from '#shared/domain/errors.ts';
import { linearRegexProblem } from '#shared/domain/lang/linear-regex.ts';
import { GUARDRAIL_DEF_SCHEMA, GUARDRAIL_EVENT_SCHEMA } from '#shared/domain/protocol.ts';
import * as z from '#shared/domain/zod.ts';
import { PII_TYPES } from './detectors.ts';
import { maxMatchLength } from './match-length.ts';

export { GUARDRAIL_DEF_SCHEMA, GUARDRAIL_EVENT_SCHEMA };

export const POINTS = [
  'input',
  'model_input',
  'model_output',
  'tool_args',
  'tool_result',
  'memory_write',
  'handoff',
] as const;
export type Point = (typeof POINTS)[number];

export const PARTS = ['user', 'context', 'tool_result', 'assistant', 'system', 'tools'] as const;
export type Part = (typeof PARTS)[number];
export const DEFAULT_PARTS: readonly Part[] = ['user', 'context', 'tool_result', 'assistant'];

const ACTIONS = ['mask', 'block', 'warn'] as const;
export type Action = (typeof ACTIONS)[number];
const ActionSchema = z.enum(ACTIONS, { error: `expected one of ${ACTIONS.join(', ')}` });
const NoMaskActionSchema = z.enum(['block', 'warn'], { error: 'expected block or warn' });

/** The longest match a custom pattern may make: what a stream would hold back for it. */
export const MAX_PATTERN_MATCH = 512;
const MAX_TERMS = 500;

const ClassifierSchema = z.strictObject(
  {
    model: z.string({ error: 'expected a model id' }).check(z.minLength(1)),
    timeout_ms: z._default(z.number().check(z.int(), z.minimum(100), z.maximum(30_000)), 5_000),
  },
  { error: 'expected { model, timeout_ms? }' },
);

export const GuardrailDefinitionSchema = z.strictObject({
  guardrail_id: NameSchema,
  description: z.optional(z.string()),
  points: z._default(
    z.array(z.enum(POINTS, { error: `expected one of ${POINTS.join(', ')}` })).check(z.minLength(1)),
    [...POINTS],
  ),
  parts: z._default(
    z.array(z.enum(PARTS, { error: `expected one of ${PARTS.join(', ')}` })).check(z.minLength(1)),
    [...DEFAULT_PARTS],
  ),
  pii: z.optional(
    z.array(
      z.strictObject(
        {
          type: z.enum(PII_TYPES, { error: `expected one of ${PII_TYPES.join(', ')}` }),
          action: ActionSchema,
        },
        { error: 'expected { type, action }' },
      ),
    ),
  ),
  patterns: z.optional(
    z
      .array(
        z.strictObject(
          {
            name: NameSchema,
            pattern: z.string().check(z.minLength(1), z.maxLength(1000)),
            flags: z.optional(z.string().check(z.regex(/^[imsu]*$/, 'expected flags among i, m, s, u'))),
            action: ActionSchema,
          },
          { error: 'expected { name, pattern, flags?, action }' },
        ),
      )
      .check(z.maxLength(50)),
  ),
  words: z.optional(
    z.strictObject(
      {
        terms: z
          .array(z.string().check(z.minLength(1), z.maxLength(100)))
          .check(z.minLength(1), z.maxLength(MAX_TERMS)),
        action: ActionSchema,
      },
      { error: 'expected { terms: [...], action }' },
    ),
  ),
  topics: z.optional(
    z
      .array(
        z.strictObject(
          {
            name: NameSchema,
            definition: z.string().check(z.minLength(1), z.maxLength(1000)),
            examples: z._default(z.array(z.string().check(z.maxLength(500))).check(z.maxLength(20)), []),
            action: z._default(NoMaskActionSchema, 'block'),
          },
          { error: 'expected { name, definition, examples?, action? }' },
        ),
      )
      .check(z.maxLength(20)),
  ),
  /** The model that judges topics (and injections): scripted locally like every model. */
  classifier: z.optional(ClassifierSchema),
  tool_results: z._default(
    z.strictObject({
      /** Tool results are delimited and labelled as data in the prompt. */
      label: z._default(z.boolean(), true),
      injection: z.optional(z.strictObject({ action: z._default(NoMaskActionSchema, 'block') })),
    }),
    { label: true },
  ),
  bedrock: z.optional(
    z.strictObject(
      {
        guardrail_id: z
          .string()
          .check(
            z.regex(/^[a-z0-9]{1,64}$|^arn:aws[a-z-]*:bedrock:/, 'expected a Bedrock guardrail id or ARN'),
          ),
        version: z.string().check(z.regex(/^([1-9][0-9]{0,7}|DRAFT)$/, 'expected a version number or DRAFT')),
        action: z._default(NoMaskActionSchema, 'block'),
      },
      { error: 'expected { guardrail_id, version, action? }' },
    ),
  ),
  /** What a blocked answer or request says; `{policy}` is replaced by the policy's id. */
  message: z._default(
    z.string().check(z.minLength(1), z.maxLength(1000)),
    'This was blocked by the guardrail policy {policy}.',
  ),
  on_error: z._default(NoMaskActionSchema, 'block'),
  streaming: z.optional(z.enum(['buffer', 'detect'], { error: 'expected buffer or detect' })),
  unmask: z._default(
    z.strictObject({
      /** Tools whose arguments receive the real values back (the model only ever sees placeholders). */
      tools: z._default(z.array(NameSchema), []),
      /** Whether the person's answer shows the real values. */
      answer: z._default(z.boolean(), false),
    }),
    { tools: [], answer: false },
  ),
  /** Every agent of the workspace it selects (by id, `*` for all), besides those naming the policy. */
  applies_to: z.optional(
    z.strictObject(
      {
        agents: z
          .array(
            z
              .string()
              .check(
                z.regex(
                  /^(\*|[A-Za-z0-9][A-Za-z0-9._:-]{0,127}\*?)$/,
                  'expected an agent id, a prefix ending in *, or *',
                ),
              ),
          )
          .check(z.minLength(1)),
      },
      { error: 'expected { agents: [ids] }' },
    ),
  ),
});

export type GuardrailDefinition = z.output<typeof GuardrailDefinitionSchema>;
export type GuardrailInput = z.input<typeof GuardrailDefinitionSchema>;

/** Every problem of a written policy, with the field it is in; empty when it can be used. */
export function guardrailIssues(context: unknown): FieldIssue[] {
  const parsed = GuardrailDefinitionSchema.safeParse(context);
  if (!parsed.success)
    return toFieldIssues(parsed.error).map((i) => ({ ...i, path: `context.${i.path}`.replace(/\.$/, '') }));
  const def = parsed.data;
  const issues: FieldIssue[] = [];
  def.patterns?.forEach((p, i) => {
    const problem = linearRegexProblem(p.pattern, p.flags ?? '');
    if (problem !== undefined) {
      issues.push({
        path: `context.patterns[${i}].pattern`,
        message: `pattern ${p.name} cannot compile: ${problem}`,
      });
      return;
    }
    const longest = maxMatchLength(p.pattern);
    if (!Number.isFinite(longest) || longest > MAX_PATTERN_MATCH) {
      issues.push({
        path: `context.patterns[${i}].pattern`,
        message: `pattern ${p.name} is unbounded: its matches may be longer than ${MAX_PATTERN_MATCH} characters (use {n,m} instead of * or +)`,
      });
    }
  });
  if (def.topics?.length && def.classifier === undefined) {
    issues.push({ path: 'context.classifier', message: 'denied topics need a classifier model { model }' });
  }
  if (def.tool_results.injection !== undefined && def.classifier === undefined) {
    issues.push({
      path: 'context.classifier',
      message: 'the injection check needs a classifier model { model }',
    });
  }
  if (def.streaming === 'detect' && usesMask(def)) {
    issues.push({
      path: 'context.streaming',
      message: 'detect releases text at once, so it cannot mask: use buffer',
    });
  }
  return issues;
}

export function usesMask(def: GuardrailDefinition): boolean {
  return (
    (def.pii ?? []).some((p) => p.action === 'mask') ||
    (def.patterns ?? []).some((p) => p.action === 'mask') ||
    def.words?.action === 'mask'
  );
}

/** The policy a written context holds; throws ValidationError naming every problem. */
export function parseGuardrail(context: unknown): GuardrailDefinition {
  const issues = guardrailIssues(context);
  if (issues.length > 0)
    throw new ValidationError(
      issues,
      `invalid ${GUARDRAIL_DEF_SCHEMA}: ${issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`,
    );
  return GuardrailDefinitionSchema.parse(context);
}

/** How a policy streams: `buffer` whenever it masks or blocks, unless it says otherwise. */
export function streamingOf(def: GuardrailDefinition): 'buffer' | 'detect' {
  return def.streaming ?? 'buffer';
}
