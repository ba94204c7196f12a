/**
 * Every environment variable name crumbs reads or sets is spelled once, in `ENV` of `shared/topology.ts`: code
 * elsewhere names it as `ENV.<key>`, so a setting cannot be read under one spelling and set under another. Scans
 * the code (string literals, template parts and identifiers; comments may name a variable) of every deployable
 * root for a `CRUMBS_` name.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, normalize } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { ENV } from '#shared/topology.ts';

const ROOT = normalize(join(import.meta.dirname, '../..'));
const ROOTS = ['shared', 'functions', 'local', 'cli', 'infra', 'ui', 'bin'] as const;
const HOME = 'shared/topology.ts';
const CRUMBS_NAME = /\bCRUMBS_[A-Z0-9_]+/g;

function sources(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(join(ROOT, dir))) {
    if (name === 'node_modules' || name === 'dist' || name.startsWith('.')) continue;
    const path = join(dir, name);
    if (statSync(join(ROOT, path)).isDirectory()) out.push(...sources(path));
    else if (/\.(ts|tsx|js|mjs)$/.test(name) && !/\.d\.ts$/.test(name)) out.push(path);
  }
  return out;
}

/** `env.NAME`, `{ NAME: … }`, `const { NAME } = env`: an identifier naming a variable of an environment object. */
function isPropertyName(node: ts.Node): node is ts.Identifier {
  if (!ts.isIdentifier(node)) return false;
  const { parent } = node;
  return (
    (ts.isPropertyAccessExpression(parent) && parent.name === node) ||
    (ts.isPropertyAssignment(parent) && parent.name === node) ||
    ts.isShorthandPropertyAssignment(parent) ||
    (ts.isBindingElement(parent) && ts.isObjectBindingPattern(parent.parent))
  );
}

/** `file:line NAME` for each `CRUMBS_` name in the code of `text`, never in its comments. */
function namesInCode(file: string, text: string): string[] {
  if (!text.includes('CRUMBS_')) return [];
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isStringLiteralLike(node) || ts.isTemplateLiteralToken(node) || isPropertyName(node)) {
      for (const match of node.text.matchAll(CRUMBS_NAME)) {
        const { line } = source.getLineAndCharacterOfPosition(node.getStart(source));
        found.push(`${file}:${line + 1} ${match[0]}`);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

describe('environment variable names', () => {
  it('are spelled only in ENV of the topology', () => {
    const outside = ROOTS.flatMap((root) => sources(root))
      .filter((file) => file !== HOME)
      .flatMap((file) => namesInCode(file, readFileSync(join(ROOT, file), 'utf8')));
    expect(outside).toEqual([]);
  });

  it('are each spelled once in ENV', () => {
    const names = Object.values(ENV);
    expect(names.filter((name, i) => names.indexOf(name) !== i)).toEqual([]);
  });

  it('finds a name read, indexed, templated, set or destructured, and none in a comment or a constant', () => {
    const code = [
      '// CRUMBS_IN_COMMENT',
      '/* CRUMBS_IN_BLOCK */ const CRUMBS_CONSTANT = 1;',
      "const a = env.CRUMBS_READ ?? env['CRUMBS_INDEXED'] ?? `$" + '{x}CRUMBS_TEMPLATE`;',
      'spawn({ env: { CRUMBS_SET: a } });',
      'const { CRUMBS_DESTRUCTURED } = process.env;',
    ].join('\n');
    expect(namesInCode('x.ts', code)).toEqual([
      'x.ts:3 CRUMBS_READ',
      'x.ts:3 CRUMBS_INDEXED',
      'x.ts:3 CRUMBS_TEMPLATE',
      'x.ts:4 CRUMBS_SET',
      'x.ts:5 CRUMBS_DESTRUCTURED',
    ]);
  });
});
