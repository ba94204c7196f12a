/**
 * `crumbs apply -f <file|dir>…`: validates every definition first (nothing is written if any is invalid), writes
 * them with stable ids (PUT: re-applying an unchanged file writes nothing), then waits for the rule manager's
 * `definition.status.v1` of each written version and prints it: state, rule, errors, and for agents the provider
 * and model that will run (a bare model id runs on the stack's default provider). Fields crumbs does not know are
 * printed as warnings on stderr (the definition is written and runs without them).
 */

import { readdir, readFile, stat } from 'node:fs/promises';
import { extname, join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import type { Breadcrumb, CrumbsClient } from '#shared/client/crumbs-client.ts';
import { definitionLimits } from '#shared/config.ts';
import { BREADCRUMB_ID_PATTERN, CreateBreadcrumbSchema, toFieldIssues } from '#shared/domain/breadcrumb.ts';
import { validateDefinition, validateScheduleDefinition } from '#shared/domain/definition-validation.ts';
import { definitionName } from '#shared/domain/definitions.ts';
import { isCrumbsError } from '#shared/domain/errors.ts';
import { STATUS_SCHEMA } from '#shared/domain/protocol.ts';
import { definitionWarnings } from '#shared/domain/unknown-fields.ts';
import { DEFINITION_SCHEMAS, SCHEDULE_DEFINITION_SCHEMA } from '#shared/topology.ts';
import {
  type Command,
  InputError,
  isPlainObject,
  optInt,
  printJson,
  printWarnings,
  strings,
  UsageError,
} from '../args.ts';
import { formatTable } from '../format.ts';

interface Candidate {
  source: string;
  id: string;
  body: { schema_name: string; title?: string; tags?: string[]; context: Record<string, unknown> };
}

export const applyCommand: Command = {
  name: 'apply',
  summary: 'validate and write definitions from JSON/YAML files; print each one’s status',
  usage: `Usage: crumbs apply -f <file|dir> [-f …] [--wait-seconds N]

Each file (.json, .yaml, .yml; a directory is read recursively) holds one definition or several (a JSON array or
YAML documents): {schema_name, title?, tags?, context, id?}. Definitions are agent.def.v1, tool.def.v1,
workflow.def.v1, context.config.v1 (and the older agent.definition.v1). Every definition is validated before
anything is written; the id defaults to <kind>-<name> so re-applying a file updates in place.

Flags:
  -f, --file F        a file or directory (repeatable)
  --wait-seconds N    how long to wait for each definition's status (default 15; 0 = do not wait)`,
  options: { file: { type: 'string', short: 'f', multiple: true }, 'wait-seconds': { type: 'string' } },
  async run(ctx) {
    const files = strings(ctx.values, 'file');
    if (files.length === 0) throw new UsageError('give at least one -f <file|dir>', true);
    const waitSeconds = optInt(ctx.values, 'wait-seconds', { min: 0 }) ?? 15;

    const candidates: Candidate[] = [];
    const problems: string[] = [];
    for (const path of await expand(files)) {
      for (const [i, doc] of (await readDefinitions(path)).entries()) {
        const source = `${path}#${i + 1}`;
        const checked = validate(doc, source);
        if ('errors' in checked) problems.push(...checked.errors.map((e) => `${source}: ${e}`));
        else candidates.push(checked);
      }
    }
    const seen = new Map<string, string>();
    for (const c of candidates) {
      const other = seen.get(c.id);
      if (other) problems.push(`${c.source}: id ${c.id} is also used by ${other}`);
      seen.set(c.id, c.source);
    }
    if (problems.length > 0) {
      ctx.io.stderr(`nothing was written; fix these first:\n${problems.map((p) => `  ${p}`).join('\n')}\n`);
      return 1;
    }
    if (candidates.length === 0) throw new InputError('no definitions found in the given files');

    const client = ctx.client();
    const written: Breadcrumb[] = [];
    for (const c of candidates) written.push(await client.put(c.id, c.body));
    const rows = await Promise.all(written.map((w) => statusOf(client, w, waitSeconds)));
    if (ctx.global.json) printJson(ctx.io, rows);
    else {
      ctx.io.stdout(
        formatTable(
          [
            { header: 'id', value: (r: StatusRow) => r.id, max: 40 },
            { header: 'schema', value: (r: StatusRow) => r.schema_name },
            { header: 'version', value: (r: StatusRow) => r.version, align: 'right' },
            { header: 'state', value: (r: StatusRow) => r.state },
            {
              header: 'model',
              value: (r: StatusRow) => (r.llm ? `${r.llm.provider}/${r.llm.model}` : ''),
              max: 48,
            },
            { header: 'rule', value: (r: StatusRow) => r.rule_name ?? '', max: 64 },
            { header: 'bus', value: (r: StatusRow) => r.event_bus ?? '' },
            { header: 'errors', value: (r: StatusRow) => r.errors.join('; '), max: 80 },
          ],
          rows,
        ),
      );
      ctx.io.stdout('\n');
    }
    for (const r of rows) printWarnings(ctx.io, r.id, r.warnings);
    return rows.some((r) => r.state !== 'active') ? 1 : 0;
  },
};

interface StatusRow {
  id: string;
  schema_name: string;
  version: number;
  state: string;
  rule_name: string | null;
  /** The bus of the pool that holds the rule. */
  event_bus: string | null;
  errors: string[];
  /** Fields crumbs does not know and ignores (the definition is active without them). */
  warnings: { path: string; message: string }[];
  /** For agents: the provider and model their calls go to. */
  llm: { provider: string; model: string } | null;
}

/** Waits for the status breadcrumb of exactly this version of the definition. */
export async function statusOf(
  client: CrumbsClient,
  definition: Breadcrumb,
  waitSeconds: number,
): Promise<StatusRow> {
  const deadline = Date.now() + waitSeconds * 1000;
  for (;;) {
    const page = await client.listFirst(
      { view: 'full', schema_name: STATUS_SCHEMA, tag: `definition:${definition.id}` },
      1,
    );
    const status = page.items[0]?.context as
      | {
          definition_version?: number;
          state?: string;
          rule_name?: string | null;
          event_bus?: string | null;
          errors?: { path: string; message: string }[];
          warnings?: { path: string; message: string }[];
          llm?: { provider: string; model: string } | null;
        }
      | undefined;
    if (status && (status.definition_version ?? 0) >= definition.version) {
      return {
        id: definition.id,
        schema_name: definition.schema_name,
        version: definition.version,
        state: status.state ?? 'unknown',
        rule_name: status.rule_name ?? null,
        event_bus: status.rule_name ? (status.event_bus ?? null) : null,
        errors: (status.errors ?? []).map((e) => `${e.path}: ${e.message}`),
        warnings: status.warnings ?? definitionWarnings(definition.schema_name, definition.context),
        llm: status.llm ?? null,
      };
    }
    if (Date.now() >= deadline) {
      return {
        id: definition.id,
        schema_name: definition.schema_name,
        version: definition.version,
        state: 'pending',
        rule_name: null,
        event_bus: null,
        llm: null,
        warnings: definitionWarnings(definition.schema_name, definition.context),
        errors: [
          waitSeconds > 0
            ? `no status after ${waitSeconds} s: is the rule manager running?`
            : 'not waited for',
        ],
      };
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

function validate(doc: unknown, source: string): Candidate | { errors: string[] } {
  if (!isPlainObject(doc)) return { errors: ['expected an object {schema_name, context, …}'] };
  const { id: rawId, ...rest } = doc;
  const parsed = CreateBreadcrumbSchema.safeParse(rest);
  if (!parsed.success) return { errors: toFieldIssues(parsed.error).map((i) => `${i.path}: ${i.message}`) };
  const body = parsed.data;
  const isSchedule = body.schema_name === SCHEDULE_DEFINITION_SCHEMA;
  if (!(body.schema_name in DEFINITION_SCHEMAS) && !isSchedule) {
    return {
      errors: [
        `schema_name: ${body.schema_name} is not a definition schema (${[...Object.keys(DEFINITION_SCHEMAS), SCHEDULE_DEFINITION_SCHEMA].join(', ')})`,
      ],
    };
  }
  try {
    let defaultId: string;
    if (isSchedule) {
      defaultId = `schedule-${validateScheduleDefinition(body.context).schedule_id}`;
    } else {
      const { kind, definition } = validateDefinition(body.schema_name, body.context, definitionLimits());
      defaultId = `${kind}-${definitionName(definition)}`;
    }
    const id = typeof rawId === 'string' ? rawId : defaultId.replace(/[^A-Za-z0-9._:-]/g, '-');
    if (!BREADCRUMB_ID_PATTERN.test(id))
      return { errors: [`id: ${JSON.stringify(id)} is not a valid breadcrumb id`] };
    return {
      source,
      id,
      body: {
        schema_name: body.schema_name,
        title: body.title || id,
        tags: body.tags,
        context: body.context,
      },
    };
  } catch (error) {
    if (isCrumbsError(error) && 'issues' in error) {
      return {
        errors: (error.issues as { path: string; message: string }[]).map(
          (i) => `context.${i.path}: ${i.message}`,
        ),
      };
    }
    throw error;
  }
}

async function expand(paths: readonly string[]): Promise<string[]> {
  const out: string[] = [];
  for (const path of paths) {
    let info: Awaited<ReturnType<typeof stat>>;
    try {
      info = await stat(path);
    } catch {
      throw new InputError(`cannot read ${path}`);
    }
    if (info.isDirectory()) {
      const entries = (await readdir(path)).sort();
      out.push(
        ...(await expand(entries.map((e) => join(path, e)))).filter((p) => /\.(json|ya?ml)$/i.test(p)),
      );
    } else out.push(path);
  }
  return out;
}

async function readDefinitions(path: string): Promise<unknown[]> {
  const text = await readFile(path, 'utf8');
  try {
    if (extname(path).toLowerCase() === '.json') {
      const value: unknown = JSON.parse(text);
      return Array.isArray(value) ? value : [value];
    }
    const docs = parseAllDocuments(text);
    const out: unknown[] = [];
    for (const doc of Array.isArray(docs) ? docs : [docs]) {
      if (doc.errors.length > 0) throw new Error(doc.errors[0]?.message);
      const value: unknown = doc.toJS();
      if (Array.isArray(value)) out.push(...value);
      else if (value !== null && value !== undefined) out.push(value);
    }
    return out;
  } catch (error) {
    throw new InputError(
      `${path} is not valid ${extname(path) === '.json' ? 'JSON' : 'YAML'}: ${(error as Error).message}`,
    );
  }
}
