/**
 * Bundles a function the way `NodejsFunction` does with `CrumbsFunction`'s bundling options, with esbuild's
 * metafile, for the bundle test and the bundle benchmark: what they measure is what `cdk synth` would ship.
 * (CDK runs the esbuild CLI with these same settings; `cdk synth` itself is too slow to run per measurement.)
 */
import { mkdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { BundlingOptions } from 'aws-cdk-lib/aws-lambda-nodejs';
import { build, type Metafile } from 'esbuild';
import { REPO_ROOT } from './constructs/bundling-options.ts';

export interface BundleResult {
  readonly outfile: string;
  readonly bytes: number;
  /** Bytes in the output per package (`zod`, `@cfworker/json-schema`) or per repository folder (`shared/core`). */
  readonly bytesBySource: ReadonlyMap<string, number>;
  /** Every input file inlined, relative to the repository root (`node_modules/@aws-sdk/client-sqs/dist-es/…`). */
  readonly inputs: readonly string[];
  /** What the bundle still imports at run time (`node:fs`, or a package left external). */
  readonly externalImports: readonly string[];
  readonly metafile: Metafile;
}

/** Bundles `entry` (relative to the repository root) into `outfile` with `options`. */
export async function bundleFunction(
  entry: string,
  outfile: string,
  options: BundlingOptions,
): Promise<BundleResult> {
  mkdirSync(dirname(outfile), { recursive: true });
  const result = await build({
    entryPoints: [join(REPO_ROOT, entry)],
    outfile,
    bundle: true,
    platform: 'node',
    format: options.format === 'cjs' ? 'cjs' : 'esm',
    minify: options.minify ?? false,
    sourcemap: options.sourceMap ?? false,
    // NodejsFunction's default, like its externals below.
    sourcesContent: options.sourcesContent ?? true,
    target: options.target,
    mainFields: options.mainFields ? [...options.mainFields] : undefined,
    banner: options.banner ? { js: options.banner } : undefined,
    external: [...(options.externalModules ?? (options.bundleAwsSDK ? [] : ['@aws-sdk/*']))],
    alias: aliasesOf(options),
    metafile: true,
    logLevel: 'error',
  });
  const output = Object.values(result.metafile.outputs).find((o) => o.entryPoint !== undefined);
  const bytesBySource = new Map<string, number>();
  for (const [input, { bytesInOutput }] of Object.entries(output?.inputs ?? {})) {
    const source = sourceOf(input);
    bytesBySource.set(source, (bytesBySource.get(source) ?? 0) + bytesInOutput);
  }
  return {
    outfile,
    bytes: statSync(outfile).size,
    bytesBySource,
    inputs: Object.keys(output?.inputs ?? {}),
    externalImports: [...new Set((output?.imports ?? []).filter((i) => i.external).map((i) => i.path))],
    metafile: result.metafile,
  };
}

/** `esbuildArgs: { '--alias': ['ajv=./x.ts'] }` (as NodejsFunction passes it) → esbuild's `alias`, from the root. */
function aliasesOf(options: BundlingOptions): Record<string, string> | undefined {
  const raw = options.esbuildArgs?.['--alias'];
  const entries = typeof raw === 'string' ? [raw] : Array.isArray(raw) ? raw : [];
  if (entries.length === 0) return undefined;
  return Object.fromEntries(
    entries.map((entry) => {
      const at = entry.indexOf('=');
      return [entry.slice(0, at), join(REPO_ROOT, entry.slice(at + 1))];
    }),
  );
}

/** `node_modules/@scope/pkg/x.js` → `@scope/pkg`; `node_modules/pkg/x.js` → `pkg`; `shared/core/x.ts` → `shared/core`. */
export function sourceOf(input: string): string {
  const inModules = input.lastIndexOf('node_modules/');
  if (inModules >= 0) {
    const parts = input.slice(inModules + 'node_modules/'.length).split('/');
    return (parts[0]?.startsWith('@') ? parts.slice(0, 2) : parts.slice(0, 1)).join('/');
  }
  return input.split('/').slice(0, 2).join('/');
}
