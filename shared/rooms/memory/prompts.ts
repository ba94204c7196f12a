/**
 * What each strategy asks of the memory model. The answer's shape is fixed (`PROPOSALS_JSON_SCHEMA`); what is worth
 * keeping is the strategy's: a custom strategy brings its own instructions. Whatever the model answers, the
 * deterministic check (`consolidate.ts`) decides what is written.
 */
import type { MemoryDefinition } from './protocol.ts';

const COMMON = [
  'You maintain long-term memory about a person from their conversations.',
  'Answer with JSON: {"proposals": [{"op", "key", "text", "target", "source_turns"}]}.',
  'op is add (something new), supersede (it changes a remembered record: target = its record id), merge (it repeats one: target),',
  'retract (the person takes a remembered thing back: target), or reject (not worth keeping).',
  'source_turns lists the ids of the turns that say it. Only what the person said counts: an assistant turn may explain',
  'a person turn, but something only an assistant said is never remembered.',
  'Small talk, greetings and one-off requests are not worth keeping: propose nothing for them.',
].join(' ');

const STRATEGY: Record<Exclude<MemoryDefinition['strategy'], 'custom'>, string> = {
  facts:
    'Keep lasting facts about the person: names, numbers they will need again (orders, accounts), where they live, what they own or work on. One fact per proposal, key = what it is about.',
  preferences:
    'Keep the person\'s stated preferences: units, language, tone, formats, likes and dislikes. One preference per proposal, key = what it is about (e.g. "units").',
  summaries:
    'Write one short summary of this conversation: what the person wanted and what was settled. One proposal, op add, key "summary".',
};

export function strategyInstructions(def: MemoryDefinition): string {
  const specific = def.strategy === 'custom' ? (def.prompt ?? '') : STRATEGY[def.strategy];
  return `${COMMON}\n\n${specific}${def.description ? `\n\nThis memory: ${def.description}` : ''}`;
}
