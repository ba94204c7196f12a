// The check pool's worker run from the repository's TypeScript sources (`crumbs dev`, tests, benchmarks): tsx's
// loader, then the worker itself. A Lambda bundle has `check-worker.mjs` built from check-worker.ts beside it
// instead, which the pool finds at the same relative URL.
import { register } from 'tsx/esm/api';

register();
await import('./check-worker.ts');
