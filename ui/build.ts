/**
 * Builds the dashboard (ui/src, Preact with esbuild's JSX) into a folder of static files: index.html, app.js,
 * app.css. `crumbs dev` builds it when the local stack starts (once per version of the sources: builds are kept
 * by source hash), and `cdk synth` builds it for the ui function (infra/stacks/stateless-stack.ts). Nothing built is
 * committed.
 */
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildSync } from 'esbuild';

export const UI_ROOT = fileURLToPath(new URL('./', import.meta.url));

/**
 * Builds into `<cacheRoot>/<hash of the sources>` unless that folder exists already, and returns it. The build is
 * written beside it and renamed into place, so processes building at once (tests, synth) never see half a build.
 */
export function buildDashboard(cacheRoot: string): string {
  const hash = sourceHash();
  const outDir = join(cacheRoot, hash.slice(0, 16));
  if (existsSync(join(outDir, 'index.html'))) return outDir;
  const temp = `${outDir}.tmp-${process.pid}-${Date.now()}`;
  mkdirSync(temp, { recursive: true });
  buildSync({
    entryPoints: { app: join(UI_ROOT, 'src', 'main.tsx') },
    outdir: temp,
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
  writeFileSync(join(temp, 'index.html'), html);
  try {
    renameSync(temp, outDir);
  } catch (error) {
    // Another process put the same build in place first.
    rmSync(temp, { recursive: true, force: true });
    if (!existsSync(join(outDir, 'index.html'))) throw error;
  }
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
  // What the dashboard bundles from shared/: the stream subscriber, the channel's events and their schemas.
  for (const shared of ['shared/client', 'shared/core/streaming', 'shared/domain'])
    walk(join(UI_ROOT, '..', shared));
  hash.update(readFileSync(join(UI_ROOT, 'index.html')));
  hash.update(readFileSync(join(UI_ROOT, '..', 'package-lock.json')));
  return hash.digest('hex');
}
