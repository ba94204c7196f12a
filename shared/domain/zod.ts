/**
 * zod as crumbs uses it: `zod/mini` with English messages. Import it as `import * as z from '#shared/domain/zod.ts'`.
 *
 * Why mini: classic zod hangs every method on every schema, so its whole API (~96 KB minified) lands in each Lambda
 * bundle whatever a function uses; mini's functions tree-shake (~30 KB with the English locale). It is the same
 * engine, so parsing and messages are identical, only spelled `z.optional(x)`, `x.check(z.minLength(1))`.
 *
 * Mini loads no locale (every message would read "Invalid input"), so this module configures English once, before
 * any schema here parses: ES modules evaluate their imports first.
 */
import { config } from 'zod/mini';
import en from 'zod/v4/locales/en.js';

config(en());

export * from 'zod/mini';
