/**
 * `npm run openapi`: writes the OpenAPI document generated from the route table (`shared/core/api/contract/`) to
 * `docs/openapi.json`; `--check` only says whether the committed file is the generated one (what CI's test does:
 * `test/unit/core/api/openapi.test.ts`).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openApiDocument } from '#shared/core/api/contract/openapi.ts';

export const OPENAPI_FILE = join(import.meta.dirname, '..', 'docs', 'openapi.json');

/** The document as `docs/openapi.json` holds it (two-space JSON, a final newline). */
export function openApiText(): string {
  return `${JSON.stringify(openApiDocument(), null, 2)}\n`;
}

if (process.argv[1] === import.meta.filename) {
  const text = openApiText();
  if (process.argv.includes('--check')) {
    let committed = '';
    try {
      committed = readFileSync(OPENAPI_FILE, 'utf8');
    } catch {}
    if (committed !== text) {
      process.stderr.write('docs/openapi.json is not the generated document: run npm run openapi\n');
      process.exit(1);
    }
    process.stdout.write('docs/openapi.json is up to date\n');
  } else {
    writeFileSync(OPENAPI_FILE, text);
    process.stdout.write(`wrote ${OPENAPI_FILE}\n`);
  }
}
