/**
 * Fuzzes the HTTP API of the local stack with property-based generators (fast-check, `test/support/api-fuzz.ts`):
 * every route, method, header and body shape — valid, boundary and hostile. Asserts what DESIGN.md promises:
 *
 * - nothing a client sends produces a 5xx;
 * - every 4xx is `application/problem+json`; a 400 or 422 lists `errors` with the path of each bad field, any
 *   other 4xx says what is wrong in `detail`;
 * - a refused write changes nothing: the reject workspace's items (heads, versions, tags, idempotency and hints
 *   rows) are identical before and after thousands of refused writes; and in the fuzz workspace, where writes
 *   also succeed, no partial write is left behind (every tag and idempotency row points at a breadcrumb).
 *
 * The run is reproducible: a fixed seed (CRUMBS_FUZZ_SEED overrides it, CRUMBS_FUZZ_RUNS the count) printed with
 * every failure and in the summary line.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { inheritedOf, tagItemTags, toRecord } from '#shared/adapters/dynamodb/items.ts';
import { createApi } from '#shared/core/api/api.ts';
import type { VectorSearchDeps } from '#shared/core/stream/vector-search.ts';
import type { BreadcrumbStore } from '#shared/ports/breadcrumb-store.ts';
import { anyRequest, type FuzzRequest, type FuzzTargets, rejectedWrite } from '../support/api-fuzz.ts';
import { api, localStack, settledItems, uniqueWorkspace } from '../support/local.ts';

const SEED = Number(process.env.CRUMBS_FUZZ_SEED ?? 20_261_123);
const RUNS = Number(process.env.CRUMBS_FUZZ_RUNS ?? 10_000);
/** Share of the runs that are refused writes against the reject workspace. */
const REJECT_SHARE = 0.3;
const CONCURRENCY = 12;
let transportRetries = 0;

interface Outcome {
  request: FuzzRequest;
  index: number;
  status: number;
  contentType: string;
  body: string;
  ms: number;
}

async function send(endpoint: string, request: FuzzRequest): Promise<Omit<Outcome, 'request' | 'index'>> {
  const query = request.query.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&');
  const started = performance.now();
  const res = await fetch(`${endpoint}${request.path}${query ? `?${query}` : ''}`, {
    method: request.method,
    headers: request.headers,
    ...(request.body !== undefined ? { body: request.body } : {}),
    redirect: 'manual',
    signal: AbortSignal.timeout(30_000),
  });
  const body = await res.text();
  return {
    status: res.status,
    contentType: res.headers.get('content-type') ?? '',
    body,
    ms: performance.now() - started,
  };
}

/** Runs `requests` with a fixed number in flight. */
async function runAll(
  endpoint: string,
  requests: readonly FuzzRequest[],
  offset: number,
): Promise<Outcome[]> {
  const outcomes: Outcome[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < requests.length) {
        const index = next++;
        const request = requests[index] as FuzzRequest;
        try {
          let answer: Omit<Outcome, 'request' | 'index'>;
          try {
            answer = await send(endpoint, request);
          } catch (error) {
            // A kept-alive connection the server closed just as it was reused (Node's keep-alive timeout race):
            // the request never arrived. Sent once more; a second failure is the server's.
            if ((error as { cause?: { code?: string } }).cause?.code !== 'UND_ERR_SOCKET') throw error;
            transportRetries++;
            answer = await send(endpoint, request);
          }
          outcomes.push({ request, index: offset + index, ...answer });
        } catch (error) {
          throw new Error(`request #${offset + index} (seed ${SEED}) could not be sent: ${show(request)}`, {
            cause: error,
          });
        }
      }
    }),
  );
  return outcomes.sort((a, b) => a.index - b.index);
}

function show(request: FuzzRequest): string {
  const body = request.body === undefined ? '' : ` body=${JSON.stringify(request.body.slice(0, 300))}`;
  const query = request.query.length > 0 ? `?${new URLSearchParams(request.query)}` : '';
  return `${request.method} ${request.path.slice(0, 200)}${query.slice(0, 200)} headers=${JSON.stringify(request.headers)}${body}${request.poison ? ` poison="${request.poison}"` : ''}`;
}

/** What a 4xx must look like; undefined when it does. */
function problemShapeError(o: Outcome): string | undefined {
  if (!o.contentType.startsWith('application/problem+json')) return `content-type is "${o.contentType}"`;
  if (o.request.method === 'HEAD') return undefined;
  let problem: { status?: unknown; type?: unknown; detail?: unknown; errors?: unknown };
  try {
    problem = JSON.parse(o.body) as typeof problem;
  } catch {
    return 'the body is not JSON';
  }
  if (problem.status !== o.status) return `problem.status is ${String(problem.status)}`;
  if (o.status === 400 || (o.status === 422 && String(problem.type).endsWith('/validation-failed'))) {
    const errors = problem.errors;
    if (!Array.isArray(errors) || errors.length === 0) return 'a 400/422 without errors[]';
    for (const e of errors as { path?: unknown; message?: unknown }[]) {
      if (typeof e.path !== 'string' || typeof e.message !== 'string' || e.message === '') {
        return `an error entry without path and message: ${JSON.stringify(e)}`;
      }
    }
    return undefined;
  }
  return typeof problem.detail === 'string' && problem.detail !== '' ? undefined : 'no detail';
}

/** Every tag and idempotency row of a workspace points at something that exists: no partial writes. */
/**
 * What a half-done write would leave: a head whose history has a gap (every superseded version is a version item),
 * a head missing a tag item it needs or a tag item of no head, an idempotency row pointing at nothing.
 */
function partialWrites(items: Record<string, unknown>[]): string[] {
  const heads = new Map(items.filter((i) => i.kind === 'breadcrumb').map((i) => [String(i.id), i]));
  const versions = new Set(
    items.filter((i) => i.kind === 'version').map((i) => `${String(i.ref)}@${Number(i.version)}`),
  );
  const tagRows = new Set(items.filter((i) => i.kind === 'tag').map((i) => String(i.id)));
  const problems: string[] = [];
  for (const head of heads.values()) {
    for (let v = 1; v < Number(head.version); v++) {
      if (!versions.has(`${String(head.id)}@${v}`))
        problems.push(`head ${String(head.id)} v${Number(head.version)} has no version item for v${v}`);
    }
    for (const tag of tagItemTags(toRecord(head), inheritedOf(head))) {
      if (!tagRows.has(`${String(head.id)}#t#${tag}`))
        problems.push(`head ${String(head.id)} has no tag row for ${tag}`);
    }
  }
  for (const item of items) {
    if (item.kind === 'tag') {
      const head = heads.get(String(item.ref));
      const tag = String(item.id).slice(String(item.ref).length + 3);
      if (!head || !(head.tags as string[]).includes(tag))
        problems.push(`tag row ${String(item.id)} has no head`);
    }
    const created = String(item.created_id);
    if (item.kind === 'idempotency' && !heads.has(created) && !versions.has(`${created}@1`)) {
      problems.push(`idempotency row ${String(item.id)} points at nothing`);
    }
  }
  return problems;
}

describe('HTTP API fuzz', () => {
  it(`answers ${RUNS} generated requests without a 5xx, with problem+json naming the field, and changes nothing it refuses`, async () => {
    const stack = localStack();
    const workspace = uniqueWorkspace('fuzz');
    const rejectWorkspace = uniqueWorkspace('fuzz-reject');
    const seed = async (ws: string, n: number) => {
      const ids: string[] = [];
      for (let i = 0; i < n; i++) {
        const res = await api(ws).call('PUT', `/seed-${i}`, {
          // A schema without embeddings: nothing (the indexer) writes beside the seeds while the run goes on.
          schema_name: 'fuzz.seed.v1',
          title: `seed ${i}`,
          tags: ['seed', `n:${i}`],
          context: { a: i, secret: 's3cr3t', list: [1, 2, 3] },
          llm_hints: { exclude: ['secret'] },
        });
        expect(res.status).toBe(201);
        ids.push(String(res.body.id));
      }
      return ids;
    };
    const targets: FuzzTargets = {
      workspace,
      rejectWorkspace,
      ids: await seed(workspace, 5),
      rejectIds: await seed(rejectWorkspace, 5),
      token: stack.token,
      scopedToken: stack.scopedToken,
      scopedWorkspace: stack.scopedWorkspace,
      routes: createApi({ store: {} as BreadcrumbStore, vectorSearch: {} as VectorSearchDeps }).routes,
    };
    const before = await settledItems(rejectWorkspace);

    const rejected = Math.round(RUNS * REJECT_SHARE);
    // A DELETE of the fuzz workspace itself is a deletion a person may ask for: it empties the workspace over several
    // calls, which this run's checks of the workspace would read as half-done writes. It goes to an empty workspace
    // of its own (`workspace-export-delete.test.ts` tests the deletion).
    const doomed = uniqueWorkspace('fuzz-doomed');
    const workspaceItself = new RegExp(`^/v1/workspaces/${workspace}/?$`);
    const requests = [
      ...fc.sample(anyRequest(targets), { seed: SEED, numRuns: RUNS - rejected }),
      ...fc.sample(rejectedWrite(targets), { seed: SEED + 1, numRuns: rejected }),
    ].map((r) =>
      r.method === 'DELETE' && workspaceItself.test(r.path) ? { ...r, path: `/v1/workspaces/${doomed}` } : r,
    );
    const started = Date.now();
    const outcomes = await runAll(stack.api, requests, 0);
    const seconds = (Date.now() - started) / 1000;

    const statuses = new Map<number, number>();
    const ms = new Map<number, number>();
    for (const o of outcomes) {
      statuses.set(o.status, (statuses.get(o.status) ?? 0) + 1);
      ms.set(o.status, (ms.get(o.status) ?? 0) + o.ms);
    }
    const serverErrors = outcomes.filter((o) => o.status >= 500);
    const counts = [...statuses]
      .sort((a, b) => a[0] - b[0])
      .map(
        ([s, n]) =>
          `${s}×${n}${process.env.CRUMBS_FUZZ_TIMES ? ` (${Math.round((ms.get(s) ?? 0) / n)} ms)` : ''}`,
      );
    console.log(
      `api fuzz: seed ${SEED}, ${outcomes.length} requests in ${seconds.toFixed(1)} s (${Math.round(outcomes.length / seconds)}/s), ` +
        `statuses ${counts.join(' ')}, 5xx ${serverErrors.length}, ${rejected} refused writes checked, ` +
        `${transportRetries} resent after a closed keep-alive connection`,
    );

    const failures: string[] = [];
    for (const o of serverErrors.slice(0, 10))
      failures.push(`#${o.index} → ${o.status} ${o.body.slice(0, 200)}: ${show(o.request)}`);
    for (const o of outcomes.filter((x) => x.status >= 400 && x.status < 500)) {
      const wrong = problemShapeError(o);
      if (wrong && failures.length < 20)
        failures.push(`#${o.index} → ${o.status} ${wrong}: ${show(o.request)}`);
    }
    for (const o of outcomes.filter(
      (x) => x.request.poison !== undefined && (x.status < 400 || x.status >= 500),
    )) {
      if (failures.length < 30)
        failures.push(`#${o.index} refused write answered ${o.status}: ${show(o.request)}`);
    }
    expect(failures, `seed ${SEED}`).toEqual([]);

    expect(await settledItems(rejectWorkspace), `seed ${SEED}: the reject workspace changed`).toEqual(before);
    expect(partialWrites(await settledItems(workspace)), `seed ${SEED}`).toEqual([]);
  }, 240_000);
});
