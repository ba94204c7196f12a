/** The built-in tools this package ships, registered by the executor handlers that run tools. */
import { breadcrumbCreateTool } from './breadcrumb-create.ts';
import { breadcrumbSearchTool } from './breadcrumb-search.ts';
import { calculatorTool } from './calculator.ts';
import { echoTool } from './echo.ts';
import { httpTool } from './http.ts';
import { jsonTransformTool } from './json-transform.ts';
import { registerTool } from './registry.ts';
import type { Tool } from './tool.ts';

export const builtinTools: readonly Tool[] = [
  echoTool,
  calculatorTool,
  httpTool,
  breadcrumbSearchTool,
  breadcrumbCreateTool,
  jsonTransformTool,
] as Tool[];

export function registerBuiltinTools(): void {
  for (const tool of builtinTools) registerTool(tool);
}
