#!/usr/bin/env node
import { resolve } from 'node:path';
// Runs a TypeScript entry point with tsx's loader: `node bin/run-ts.js path/to/file.ts [args…]`.
// Used by cdk.json and the bench scripts so nothing needs a build step.
import { pathToFileURL } from 'node:url';
import { register } from 'tsx/esm/api';

register();
const [entry, ...rest] = process.argv.slice(2);
if (!entry) {
  process.stderr.write('usage: node bin/run-ts.js <file.ts> [args…]\n');
  process.exit(2);
}
process.argv = [process.argv[0] ?? 'node', resolve(entry), ...rest];
await import(pathToFileURL(resolve(entry)).href);
