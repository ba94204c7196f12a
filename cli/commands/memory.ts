/**
 * `crumbs memory ls|get|forget [--actor SUB] [--memory ID]`: what the memory room remembers about a person
 * (`GET …/memory`, `GET …/memory/{id}`) and forgetting it (`DELETE …/memory`: the records with their versions and
 * vectors, and the person's own turns they came from). Without --actor, the caller's own memory (the token's `sub`);
 * another person's needs an operator's token.
 */
import type { MemoryItem } from '../api-client.ts';
import { type Command, optString, printJson, UsageError } from '../args.ts';
import { formatTable } from '../format.ts';

export const memoryCommand: Command = {
  name: 'memory',
  summary: "a person's remembered facts, preferences and summaries; forget them",
  usage: `Usage: crumbs memory ls [--actor SUB] [--memory ID]
       crumbs memory get ID [--actor SUB]
       crumbs memory forget [--actor SUB] [--memory ID]

ls prints the person's current memory records (newest first); get prints one; forget removes every record of the
person (of one memory with --memory) with its versions and vectors, and the person's own turns they came from.
Without --actor it is your own memory (your token's sub); another person's needs an operator's token.

Flags:
  --actor SUB     the person (a token's sub)
  --memory ID     one memory.def.v1's records only (its memory_id)`,
  options: {
    actor: { type: 'string' },
    memory: { type: 'string' },
  },
  async run(ctx) {
    const [verb, id, ...rest] = ctx.positionals;
    if (rest.length > 0) throw new UsageError(`unexpected arguments: ${rest.join(' ')}`, true);
    const actor = optString(ctx.values, 'actor');
    const memoryId = optString(ctx.values, 'memory');
    const query = {
      ...(actor !== undefined ? { actor } : {}),
      ...(memoryId !== undefined ? { memory_id: memoryId } : {}),
    };
    const client = ctx.client();
    switch (verb) {
      case 'ls': {
        if (id !== undefined) throw new UsageError('memory ls takes no id', true);
        const list = await client.memory(query);
        if (ctx.global.json) printJson(ctx.io, list);
        else
          ctx.io.stdout(
            `${formatTable<MemoryItem>(
              [
                { header: 'id', value: (r) => r.id, max: 30 },
                { header: 'memory', value: (r) => r.memory_id, max: 24 },
                { header: 'key', value: (r) => r.key, max: 24 },
                { header: 'v', value: (r) => String(r.version) },
                { header: 'text', value: (r) => r.text, max: 70 },
              ],
              list.items,
            )}\n`,
          );
        return 0;
      }
      case 'get': {
        if (id === undefined) throw new UsageError('memory get needs the record id', true);
        printJson(ctx.io, await client.memoryRecord(id, actor !== undefined ? { actor } : {}));
        return 0;
      }
      case 'forget': {
        if (id !== undefined)
          throw new UsageError(
            'memory forget takes no id: it forgets the whole person (--memory to narrow)',
            true,
          );
        const out = await client.forgetMemory(query);
        if (ctx.global.json) printJson(ctx.io, out);
        else
          ctx.io.stdout(
            `forgot ${out.forgotten} records of ${out.actor} and ${out.turns_removed} of their turns\n`,
          );
        return 0;
      }
      default:
        throw new UsageError('expected ls, get or forget', true);
    }
  },
};
