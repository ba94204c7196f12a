/**
 * A streamed answer under the policies: what reaches the request's delta channel.
 *
 * `buffer` (the default whenever a policy masks or blocks): the stream holds back the last `holdBack` characters —
 * the longest match any enabled detector can make, plus one for its boundary — so a value split across chunks is
 * whole before any of it is released; what is released is masked, and a value found across the held-back edge
 * waits until it is complete. A block stops the stream with a reset (nothing more is released; the answer says it
 * was blocked). The time this adds before the first token is what `bench:guardrails` reports.
 *
 * `detect`: text is released at once and the stream is cut with a reset when a check fails (never with mask:
 * a released value cannot be taken back, so a masking policy cannot stream this way — `definition.ts` refuses it).
 */
import type { GuardableSink } from '#shared/ports/guardrails.ts';
import type { Guard } from './guard.ts';
import { patternFindings } from './scan.ts';

export function guardedSink<S>(sink: GuardableSink<S>, guard: Guard): GuardableSink<S> {
  const holdBack = guard.holdBack;
  const policies = guard.policies.filter((p) => p.def.points.includes('model_output'));
  let held = '';
  let detected = '';
  let stopped = false;

  const stop = (reason: string) => {
    stopped = true;
    held = '';
    sink.reset(reason);
  };

  /** Releases `held` up to `upTo` (masked), keeping the rest. */
  const release = (final: boolean) => {
    let text = held;
    let safe = final ? text.length : Math.max(0, text.length - holdBack);
    const masks = [];
    for (const policy of policies) {
      for (const f of patternFindings(policy, text)) {
        if (f.action === 'block') {
          stop(`blocked by guardrail ${policy.id}`);
          return;
        }
        if ((f.end ?? 0) > safe && (f.start ?? 0) < safe) safe = f.start ?? 0;
        if (f.action === 'mask') masks.push(f);
      }
    }
    if (safe === 0) return;
    const out = masks.filter((m) => (m.end ?? 0) <= safe);
    text = guard.mask(text.slice(0, safe), out);
    held = held.slice(safe);
    if (text !== '') sink.write(text);
  };

  const detect = () => {
    for (const policy of guard.policies) {
      for (const f of patternFindings(policy, detected)) {
        if (f.action === 'block') {
          stop(`blocked by guardrail ${policy.id}`);
          return;
        }
      }
    }
  };

  const buffered = holdBack > 0;
  return {
    write(text) {
      if (stopped) return;
      if (!buffered) {
        detected += text;
        sink.write(text);
        detect();
        return;
      }
      held += text;
      release(false);
    },
    reset(reason) {
      held = '';
      detected = '';
      if (!stopped) sink.reset(reason);
    },
    async final(status, answerId) {
      if (!stopped && buffered) release(true);
      return sink.final(status, answerId);
    },
    async close() {
      // A tool round ends this part: what was held is not the answer (the round's reset dropped it).
      held = '';
      return sink.close();
    },
  };
}
