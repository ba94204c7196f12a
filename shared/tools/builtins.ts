/**
 * The built-in tools this package ships. The executor handlers that run tools list them (with any tools of their
 * own) in the catalog they pass to their executor (catalog.ts).
 */
import { breadcrumbCreateTool } from './breadcrumb-create.ts';
import { breadcrumbSearchTool } from './breadcrumb-search.ts';
import { calculatorTool } from './calculator.ts';
import { echoTool } from './echo.ts';
import { httpTool } from './http.ts';
import { jsonTransformTool } from './json-transform.ts';
import type { Tool } from './tool.ts';

export const builtinTools: readonly Tool[] = [
  echoTool,
  calculatorTool,
  httpTool,
  breadcrumbSearchTool,
  breadcrumbCreateTool,
  jsonTransformTool,
] as Tool[];
