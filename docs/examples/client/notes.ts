/**
 * A small app on crumbs' typed client (`crumbs/client`): writes a note, reads every note back page after page,
 * starts a workflow run and follows it. Run it against `crumbs dev` (which prints the endpoint and a token):
 *
 *   CRUMBS_ENDPOINT=http://127.0.0.1:4710 CRUMBS_TOKEN=… node bin/run-ts.js docs/examples/client/notes.ts
 *
 * `test/unit/client/example-app.test.ts` type-checks this file against the client, so it keeps compiling.
 */
import { ApiProblemError, type Breadcrumb, CrumbsClient } from 'crumbs/client';

const client = new CrumbsClient({
  endpoint: process.env.CRUMBS_ENDPOINT ?? 'http://127.0.0.1:4710',
  token: process.env.CRUMBS_TOKEN,
  workspace: process.env.CRUMBS_WORKSPACE ?? 'default',
});

// A write with an Idempotency-Key: sent again after a 5xx or a 429 (Retry-After honoured), it is written once.
const note: Breadcrumb = await client.create(
  { schema_name: 'note.v1', title: 'from the example', tags: ['example'], context: { text: 'hello' } },
  { idempotencyKey: `example-${new Date().toISOString().slice(0, 10)}` },
);
process.stdout.write(`wrote ${note.id} v${note.version}\n`);

// Cursor iteration: every note, whatever the page size.
let count = 0;
for await (const view of client.items({ schema_name: 'note.v1', tag: 'example', limit: 50 })) {
  count += 1;
  if (count <= 3) process.stdout.write(`- ${view.title} (${view.id})\n`);
}
process.stdout.write(`${count} example notes\n`);

// A problem is an error with the API's fields.
try {
  await client.update(note.id, { title: 'stale' }, { ifMatch: note.version + 1 });
} catch (error) {
  if (!(error instanceof ApiProblemError)) throw error;
  process.stdout.write(`refused as expected: ${error.status} ${error.title}\n`);
}

// Runs, newest first, one at a time.
for await (const run of client.runs({ limit: 10 })) {
  process.stdout.write(`run ${run.run_id}: ${run.status}\n`);
  break;
}
