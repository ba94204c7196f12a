/**
 * Templates for `llm_hints` `template` rules: the part of the Handlebars language that context views need, parsed
 * into a small AST (`template/lex.ts`, `template/parse.ts`) and rendered by walking it (`template/render.ts`).
 * Nothing is compiled or evaluated, lookups see own properties only, and output, work and nesting are bounded
 * (TEMPLATE_LIMITS), so a template written by one user cannot read prototypes or stall a Lambda on someone else's
 * read. What is supported and the deliberate differences from Handlebars: `template/README.md`.
 */
export { type RenderLimits, type StepBudget, TEMPLATE_LIMITS, type Template } from './template/ast.ts';
export { parseTemplate } from './template/parse.ts';
export { renderTemplate } from './template/render.ts';
