/**
 * Tools by name. Built-ins register through `registerBuiltinTools()` (builtins.ts); tools that live with other
 * features (`llm`, `context.build`) register from their own modules with `registerTool`, so this module imports
 * none of them and each function bundle carries only the tools it wires in.
 */
import type { Tool } from './tool.ts';

const tools = new Map<string, Tool>();

/** Registers (or replaces) a tool under its name. */
export function registerTool(tool: Tool): void {
  tools.set(tool.name, tool);
}

export function getTool(name: string): Tool | undefined {
  return tools.get(name);
}

export function toolNames(): string[] {
  return [...tools.keys()].sort();
}
