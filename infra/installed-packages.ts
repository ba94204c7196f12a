/**
 * Packages a function ships beside its bundle (`bundling.nodeModules` in the topology: WebAssembly that esbuild
 * cannot inline, the tokenizer's rank tables that only load on first need), copied from the repository's
 * `node_modules` with everything they depend on, at the paths package-lock.json gives them.
 *
 * Why not `NodejsFunction`'s own `nodeModules` option: it runs `npm ci` in the asset folder, which asks the
 * registry for package metadata, so `cdk synth` would need the network. `npm ci` of the repository has already
 * put exactly the locked versions in `node_modules`; copying them gives the same files offline (the bundle test
 * checks the versions against the lock).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

interface LockEntry {
  readonly version?: string;
  readonly dependencies?: Readonly<Record<string, string>>;
  readonly optionalDependencies?: Readonly<Record<string, string>>;
  readonly dev?: boolean;
}

type Lock = Readonly<Record<string, LockEntry>>;

function readLock(repoRoot: string): Lock {
  const parsed = JSON.parse(readFileSync(join(repoRoot, 'package-lock.json'), 'utf8')) as {
    packages?: Lock;
  };
  return parsed.packages ?? {};
}

/** Where Node finds `name` from the package at lock path `from`: its own node_modules, then each parent's. */
function resolve(lock: Lock, from: string, name: string): string | undefined {
  let base = from;
  for (;;) {
    const candidate = `${base === '' ? '' : `${base}/`}node_modules/${name}`;
    if (lock[candidate]) return candidate;
    if (base === '') return undefined;
    const at = base.lastIndexOf('/node_modules/');
    base = at < 0 ? '' : base.slice(0, at);
  }
}

/**
 * Lock paths (`node_modules/quickjs-emscripten-core`, …) of `names` and of everything they depend on, in a stable
 * order. Throws for a package the lock does not have, so a typo fails the synth instead of the first invocation.
 */
export function installedPackagePaths(names: readonly string[], repoRoot: string): string[] {
  const lock = readLock(repoRoot);
  const found = new Set<string>();
  const visit = (path: string): void => {
    if (found.has(path)) return;
    found.add(path);
    const entry = lock[path] ?? {};
    for (const dependency of Object.keys({ ...entry.dependencies, ...entry.optionalDependencies })) {
      const resolved = resolve(lock, path, dependency);
      // An optional dependency for another platform is not installed; a missing required one is a broken lock.
      if (resolved) visit(resolved);
      else if (entry.dependencies?.[dependency] !== undefined) {
        throw new Error(`package-lock.json: ${path} depends on ${dependency}, which it does not list`);
      }
    }
  };
  for (const name of names) {
    const path = resolve(lock, '', name);
    if (!path)
      throw new Error(`package-lock.json does not list ${name}: run npm install --save-exact ${name}`);
    visit(path);
  }
  return [...found].sort();
}

/** Shell commands copying those packages from `inputDir` (the repository) into `outputDir` (the asset). */
export function copyInstalledPackages(
  names: readonly string[],
  repoRoot: string,
  inputDir: string,
  outputDir: string,
): string[] {
  const paths = installedPackagePaths(names, repoRoot);
  // A package nested in another one's node_modules comes along with it.
  const outermost = paths.filter((path) => !paths.some((other) => path.startsWith(`${other}/`)));
  return outermost.map((path) => {
    const target = join(outputDir, path);
    return `mkdir -p ${JSON.stringify(join(target, '..'))} && cp -R ${JSON.stringify(join(inputDir, path))} ${JSON.stringify(target)}`;
  });
}
