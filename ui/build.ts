/**
 * Builds the dashboard (ui/src, Preact with esbuild's JSX) into a folder of static files: index.html, app.js,
 * app.css. `crumbs dev` builds it when the local stack starts (skipped when the sources did not change since the
 * last build), and `cdk synth` builds it for the ui function (infra/stacks/stateless-stack.ts). Nothing built is
 * committed.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildSync } from 'esbuild';

export const UI_ROOT = fileURLToPath(new URL('./', import.meta.url));
const STAMP = '.source-hash';

/** Builds into `outDir` unless it already holds a build of the current sources. Returns `outDir`. */
export function buildDashboard(outDir: string): string {
  const hash = sourceHash();
  const stamp = join(outDir, STAMP);
  if (existsSync(stamp) && readFileSync(stamp, 'utf8') === hash) return outDir;
  mkdirSync(outDir, { recursive: true });
  buildSync({
    entryPoints: { app: join(UI_ROOT, 'src', 'main.tsx') },
    outdir: outDir,
    bundle: true,
    minify: true,
    format: 'esm',
    target: ['chrome120', 'firefox120', 'safari17'],
    jsx: 'automatic',
    jsxImportSource: 'preact',
    loader: { '.css': 'css' },
    legalComments: 'none',
    logLevel: 'error',
  });
  const html = readFileSync(join(UI_ROOT, 'index.html'), 'utf8').replaceAll('%HASH%', hash.slice(0, 12));
  writeFileSync(join(outDir, 'index.html'), html);
  writeFileSync(stamp, hash);
  return outDir;
}

/** Hash of every source file (and the preact version): the build is a function of these. */
function sourceHash(): string {
  const hash = createHash('sha256');
  const walk = (dir: string) => {
    for (const name of readdirSync(dir).sort()) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else hash.update(path.slice(UI_ROOT.length)).update(readFileSync(path));
    }
  };
  walk(join(UI_ROOT, 'src'));
  hash.update(readFileSync(join(UI_ROOT, 'index.html')));
  hash.update(readFileSync(join(UI_ROOT, '..', 'package-lock.json')));
  return hash.digest('hex');
}
