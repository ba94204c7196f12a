/**
 * One policy compiled into the checks it runs on a text: pattern checks (built-in detectors, custom patterns, word
 * lists) that find spans, and judged checks (denied topics, injected instructions, a Bedrock guardrail) that a
 * classifier answers for the whole text. Pure: the classifier and the Bedrock call come in as ports.
 */
import { type Action, type GuardrailDefinition, type Part, type Point, streamingOf } from './definition.ts';
import {
  BUILT_IN_DETECTORS,
  type Detector,
  detectorMaxLength,
  resolveOverlaps,
  runDetector,
  type Span,
} from './detectors.ts';
import { maxMatchLength } from './match-length.ts';

export type CheckName = 'pii' | 'pattern' | 'words' | 'topic' | 'injection' | 'bedrock' | 'error';

/** What a check found: the type and position, never the text. */
export interface Finding {
  readonly policy: string;
  readonly check: CheckName;
  readonly type: string;
  readonly action: Action;
  readonly start?: number;
  readonly end?: number;
}

interface PatternCheck {
  readonly check: 'pii' | 'pattern' | 'words';
  readonly detector: Detector;
  readonly action: Action;
}

export interface CompiledPolicy {
  readonly id: string;
  /** The stored breadcrumb's version the policy was read at. */
  readonly version: number;
  readonly def: GuardrailDefinition;
  readonly patterns: readonly PatternCheck[];
  /** The longest match any of its pattern checks can make (what a `buffer` stream holds back). */
  readonly holdBack: number;
}

const escapeRegex = (s: string) => s.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');

export function compilePolicy(id: string, version: number, def: GuardrailDefinition): CompiledPolicy {
  const patterns: PatternCheck[] = [];
  for (const { type, action } of def.pii ?? []) {
    for (const detector of BUILT_IN_DETECTORS[type]) patterns.push({ check: 'pii', detector, action });
  }
  for (const p of def.patterns ?? []) {
    patterns.push({
      check: 'pattern',
      detector: { type: `custom:${p.name}`, pattern: p.pattern, ...(p.flags ? { flags: p.flags } : {}) },
      action: p.action,
    });
  }
  if (def.words !== undefined) {
    const alternation = def.words.terms.map(escapeRegex).join('|');
    patterns.push({
      check: 'words',
      detector: { type: 'word', pattern: `(?:${alternation})`, flags: 'i', bounded: true },
      action: def.words.action,
    });
  }
  const holdBack = Math.max(
    0,
    ...patterns.map((p) =>
      p.check === 'pii' ? detectorMaxLength(p.detector) : maxMatchLength(p.detector.pattern),
    ),
  );
  return { id, version, def, patterns, holdBack };
}

/** Whether the policy checks `part` of the content at `point`. */
export function policyApplies(policy: CompiledPolicy, point: Point, part: Part): boolean {
  if (!policy.def.points.includes(point)) return false;
  if (point !== 'model_input') return true;
  // The person's words are checked at `input` by a policy that holds there; once is enough.
  if (part === 'user' && policy.def.points.includes('input')) return false;
  return policy.def.parts.includes(part);
}

/** The spans the policy's pattern checks find, overlaps resolved (the longest wins). */
export function patternFindings(policy: CompiledPolicy, text: string): Finding[] {
  const found: (Span & { check: PatternCheck })[] = [];
  for (const check of policy.patterns) {
    for (const span of runDetector(check.detector, text)) found.push({ ...span, check });
  }
  const kept = resolveOverlaps(found) as (Span & { check: PatternCheck })[];
  return kept.map((s) => ({
    policy: policy.id,
    check: s.check.check,
    type: s.type,
    action: s.check.action,
    start: s.start,
    end: s.end,
  }));
}

export function streamsBuffered(policy: CompiledPolicy): boolean {
  return streamingOf(policy.def) === 'buffer';
}
