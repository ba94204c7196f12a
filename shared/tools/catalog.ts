/**
 * The tools an executor can run, by name: a plain map built from the list its handler passes in
 * (`toolCatalog([...builtinTools, llmTool(llm)])`), never a global registry. So each function bundle carries only
 * the tools its handler names, and a test runs exactly the tools it lists.
 */
import type { Tool } from './tool.ts';

export type ToolCatalog = ReadonlyMap<string, Tool>;

/** Tools by name; a later tool of the same name replaces an earlier one. */
export function toolCatalog(tools: readonly Tool[]): ToolCatalog {
  return new Map(tools.map((tool) => [tool.name, tool]));
}
