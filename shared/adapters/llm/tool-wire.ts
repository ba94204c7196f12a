/**
 * Tools on the wire, the same for every provider: how names are encoded and how results are written back.
 */
import type { LlmToolResult } from '#shared/ports/llm.ts';

/**
 * crumbs tools are named like `context.build`, but OpenAI-compatible servers and Bedrock
 * accept only `[a-zA-Z0-9_-]{1,64}`; names are encoded per request (`context.build` → `context__build`) and the
 * model's calls decoded with the same table, so callers only ever see crumbs names.
 */
export class ToolNames {
  private readonly toProvider = new Map<string, string>();
  private readonly toCrumbs = new Map<string, string>();

  encode(name: string): string {
    const known = this.toProvider.get(name);
    if (known !== undefined) return known;
    let encoded = name
      .replace(/\./g, '__')
      .replace(/[^a-zA-Z0-9_-]/g, '_')
      .slice(0, 64);
    // Two crumbs names may encode alike (`a.b`, `a__b`): the later one gets a suffix so both stay callable.
    while (this.toCrumbs.has(encoded)) encoded = `${encoded.slice(0, 60)}_${this.toCrumbs.size}`;
    this.toProvider.set(name, encoded);
    this.toCrumbs.set(encoded, name);
    return encoded;
  }

  /** A name the model made up (not offered) comes back as it is; the caller reports it as an unknown tool. */
  decode(encoded: string): string {
    return this.toCrumbs.get(encoded) ?? encoded;
  }
}

/** JSON text for the model; a failed tool is an `{"error": ...}` object so it cannot pass for a result. */
export function toolResultText(result: LlmToolResult): string {
  if (!result.isError) return JSON.stringify(result.output ?? null);
  const error = typeof result.output === 'string' ? result.output : JSON.stringify(result.output);
  return JSON.stringify({ error });
}
