/**
 * The check point: the one interface every place content crosses a boundary calls (`check(point, pieces)`), for
 * the policies that hold for one agent in one thread. It masks (a stable placeholder per value, `vault.ts`), blocks
 * (the policy's message naming it, never the blocked text) or warns, and keeps every intervention as a finding —
 * types and positions, never text — that `events.ts` writes as `guardrail.event.v1`.
 *
 * Judged checks call a classifier model (denied topics; injected instructions in tool results) through the model
 * client the invocation was handed (so each call is budgeted and metered like every other), and a Bedrock guardrail
 * through `ApplyGuardrail`. A classifier that fails or times out applies the policy's `on_error` (block by default).
 */
import type { Action, Part, Point } from './definition.ts';
import { type CheckName, type CompiledPolicy, type Finding, patternFindings, policyApplies } from './scan.ts';
import type { Placeholders } from './vault.ts';

export interface TopicJudgement {
  readonly model: string;
  readonly timeoutMs: number;
  readonly text: string;
  readonly kind: 'topic' | 'injection';
  readonly topics?: readonly { name: string; definition: string; examples: readonly string[] }[];
  readonly signal?: AbortSignal;
}

/** A classifier model's verdict: the denied topic (or `injection`) the text is about, or nothing. */
export interface Classifier {
  judge(request: TopicJudgement): Promise<{ flagged?: string }>;
}

/** A Bedrock guardrail applied to a text (`ApplyGuardrail`), as `bedrock-guardrail.ts` calls it. */
export interface BedrockGuardrail {
  apply(request: {
    guardrailId: string;
    version: string;
    source: 'INPUT' | 'OUTPUT';
    text: string;
    signal?: AbortSignal;
  }): Promise<{ intervened: boolean; types: string[] }>;
}

export interface GuardDeps {
  /** false: judged checks are not run, only named in `notRun` (a dry run without a model, `guardrails test`). */
  readonly judge?: boolean;
  readonly classifier?: Classifier;
  readonly bedrock?: BedrockGuardrail;
  readonly signal?: AbortSignal;
}

export interface Piece {
  readonly part: Part;
  readonly text: string;
}

/** A finding with where it was: the point, the part and which of the pieces checked. */
export interface GuardFinding extends Finding {
  readonly point: Point;
  readonly part: Part;
  readonly piece: number;
  readonly policyVersion: number;
}

export interface Blocked {
  readonly policy: string;
  readonly message: string;
}

export interface CheckResult {
  /** The pieces' texts as they may go on (masked where a policy masks). */
  readonly texts: string[];
  readonly blocked?: Blocked;
  readonly findings: GuardFinding[];
}

const OUTPUT_POINTS: readonly Point[] = ['model_output', 'tool_args'];

export class Guard {
  readonly findings: GuardFinding[] = [];
  /** Judged checks a dry run left out. */
  readonly notRun = new Set<string>();

  constructor(
    readonly policies: readonly CompiledPolicy[],
    readonly placeholders: Placeholders,
    private readonly deps: GuardDeps = {},
  ) {}

  /** What a `buffer` stream holds back: the longest match any enabled detector can make (plus one boundary char). */
  get holdBack(): number {
    const buffered = this.policies.filter((p) => (p.def.streaming ?? 'buffer') === 'buffer');
    return buffered.length === 0 ? 0 : Math.max(...buffered.map((p) => p.holdBack)) + 1;
  }

  /** Whether any policy streams with `detect` (released at once, cut with a reset when a check fails). */
  get detects(): boolean {
    return this.policies.some((p) => p.def.streaming === 'detect');
  }

  /** Whether the person's answer shows the real values of its placeholders. */
  get unmasksAnswer(): boolean {
    return this.policies.length > 0 && this.policies.every((p) => p.def.unmask.answer);
  }

  /** Whether `tool` receives the real values of the placeholders in its arguments. */
  unmasksInto(tool: string): boolean {
    return this.policies.length > 0 && this.policies.every((p) => p.def.unmask.tools.includes(tool));
  }

  /** Runs every policy that holds at `point` over the pieces, in order; masks, blocks or warns. */
  async check(point: Point, pieces: readonly Piece[]): Promise<CheckResult> {
    const texts = pieces.map((p) => p.text);
    const found: GuardFinding[] = [];
    let blocked: Blocked | undefined;
    for (const policy of this.policies) {
      for (let i = 0; i < pieces.length; i++) {
        const part = (pieces[i] as Piece).part;
        if (!policyApplies(policy, point, part)) continue;
        const text = texts[i] as string;
        const at = (f: Finding): GuardFinding => ({
          ...f,
          point,
          part,
          piece: i,
          policyVersion: policy.version,
        });
        const spans = patternFindings(policy, text).map(at);
        const judged = (await this.judged(policy, point, part, text)).map(at);
        found.push(...spans, ...judged);
        const masks = spans.filter((f) => f.action === 'mask');
        if (masks.length > 0) texts[i] = this.mask(text, masks);
        const block = [...spans, ...judged].find((f) => f.action === 'block');
        if (block !== undefined && blocked === undefined)
          blocked = { policy: policy.id, message: messageOf(policy) };
      }
    }
    this.findings.push(...found);
    return { texts, findings: found, ...(blocked !== undefined ? { blocked } : {}) };
  }

  /** `text` with its masked spans replaced by their placeholders (the spans come from one scan of `text`). */
  mask(text: string, spans: readonly Finding[]): string {
    let out = '';
    let at = 0;
    for (const span of [...spans].sort((a, b) => (a.start ?? 0) - (b.start ?? 0))) {
      const start = span.start ?? 0;
      const end = span.end ?? 0;
      if (start < at) continue;
      out += text.slice(at, start) + this.placeholders.placeholderFor(span.type, text.slice(start, end));
      at = end;
    }
    return out + text.slice(at);
  }

  private async judged(policy: CompiledPolicy, point: Point, part: Part, text: string): Promise<Finding[]> {
    const def = policy.def;
    const out: Finding[] = [];
    if (this.deps.judge === false) {
      if (def.topics?.length) this.notRun.add('topic');
      if (def.tool_results.injection && point === 'tool_result') this.notRun.add('injection');
      if (def.bedrock) this.notRun.add('bedrock');
      return out;
    }
    const judge = async (check: CheckName, action: Action, run: () => Promise<string | undefined>) => {
      try {
        const flagged = await run();
        if (flagged !== undefined) out.push({ policy: policy.id, check, type: flagged, action });
      } catch (error) {
        out.push({
          policy: policy.id,
          check: 'error',
          type: `${check}: ${errorKind(error)}`,
          action: def.on_error,
        });
      }
    };
    const classifier = this.deps.classifier;
    if (def.topics?.length && def.classifier && text.trim() !== '' && part !== 'tool_result') {
      const { model, timeout_ms } = def.classifier;
      const topics = def.topics;
      await judge('topic', topics[0]?.action ?? 'block', async () => {
        if (classifier === undefined) throw new Error('no classifier');
        const verdict = await classifier.judge({
          model,
          timeoutMs: timeout_ms,
          text,
          kind: 'topic',
          topics,
          ...(this.deps.signal ? { signal: this.deps.signal } : {}),
        });
        const topic = topics.find((t) => t.name === verdict.flagged);
        if (verdict.flagged !== undefined && topic === undefined) return verdict.flagged;
        return topic?.name;
      });
      const flagged = out.find((f) => f.check === 'topic');
      const topic = def.topics.find((t) => t.name === flagged?.type);
      if (flagged !== undefined && topic !== undefined && topic.action !== flagged.action) {
        out[out.indexOf(flagged)] = { ...flagged, action: topic.action };
      }
    }
    if (def.tool_results.injection && def.classifier && (point === 'tool_result' || part === 'tool_result')) {
      const { model, timeout_ms } = def.classifier;
      await judge('injection', def.tool_results.injection.action, async () => {
        if (classifier === undefined) throw new Error('no classifier');
        const verdict = await classifier.judge({
          model,
          timeoutMs: timeout_ms,
          text,
          kind: 'injection',
          ...(this.deps.signal ? { signal: this.deps.signal } : {}),
        });
        return verdict.flagged === undefined ? undefined : 'injection';
      });
    }
    if (def.bedrock && text.trim() !== '') {
      const bedrock = this.deps.bedrock;
      const { guardrail_id, version, action } = def.bedrock;
      await judge('bedrock', action, async () => {
        if (bedrock === undefined) throw new Error('no Bedrock guardrail client');
        const result = await bedrock.apply({
          guardrailId: guardrail_id,
          version,
          source: OUTPUT_POINTS.includes(point) ? 'OUTPUT' : 'INPUT',
          text,
          ...(this.deps.signal ? { signal: this.deps.signal } : {}),
        });
        return result.intervened ? result.types.join(',') || 'intervened' : undefined;
      });
    }
    return out;
  }
}

/** A policy's block message: `{policy}` names it. */
export function messageOf(policy: CompiledPolicy): string {
  return policy.def.message.split('{policy}').join(policy.id);
}

/** What a failure was, never its text (which may quote the content). */
function errorKind(error: unknown): string {
  if (error instanceof Error && (error.name === 'AbortError' || error.name === 'TimeoutError'))
    return 'timeout';
  return error instanceof Error ? error.name : 'failure';
}
