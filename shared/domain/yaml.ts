/**
 * YAML text → a plain value, for the `yaml` field of agent definitions (seed 004's agent card, tools and
 * transforms). A syntax error is a ValidationError at the given path whose message names the line and column.
 *
 * Why js-yaml here when the CLI reads manifests with `yaml`: this module is bundled into Lambda functions (the
 * rule manager, which reports a broken definition, and every agent executor, which runs it), where what counts is
 * module load time at cold start (`npm run bench:bundles`), and js-yaml is 46 KB minified against `yaml`'s 115 KB
 * for the one call made here. The CLI runs on a developer's machine, where that does not matter and `yaml`'s
 * multi-document API fits better. Both read YAML 1.2 with the core schema, so a document means the same thing to
 * both.
 */
import { load } from 'js-yaml';
import { ValidationError } from './errors.ts';

/** Parses one YAML document; throws ValidationError(`path`: "line L, column C: reason"). */
export type YamlParser = (text: string, path: string) => unknown;

export const parseYaml: YamlParser = (text, path) => {
  if (text.trim() === '') return {};
  try {
    // Nesting is capped (js-yaml's default 100) and merge keys are off, so a small text cannot expand hugely.
    return load(text, { maxDepth: 64 });
  } catch (error) {
    const { reason, mark } = error as { reason?: unknown; mark?: { line?: number; column?: number } };
    const where =
      typeof mark?.line === 'number' ? `line ${mark.line + 1}, column ${(mark.column ?? 0) + 1}: ` : '';
    const why = typeof reason === 'string' && reason !== '' ? reason : (error as Error).message;
    throw new ValidationError([{ path, message: `not valid YAML: ${where}${why}` }]);
  }
};
