/**
 * `secret_ref`: the name of a credential that belongs to the definition's own workspace. A workspace's secrets are
 * a flat namespace of its own — `crumbs/agents/<workspace>/<name>` in Secrets Manager on AWS, the workspace's entry
 * of the local mapping in `crumbs dev` (`shared/adapters/secrets/secret-source.ts`) — so a name is one plain word:
 * no `/` (a path into another namespace), no `..`, no ARN, nothing a definition could use to name a credential it
 * was not given. The shape is checked where a definition is written (a field issue with its path, so the rule
 * manager calls the definition `invalid` and `crumbs apply` refuses it), the secret's existence in the workspace by
 * the rule manager, and both again by the secret source at call time.
 */
import type { ParsedDefinition } from './definitions.ts';
import * as z from './zod.ts';

/** Like a workspace name: a plain word, so `<prefix><workspace>/<name>` can only ever name this workspace's secret. */
export const SECRET_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/;

const EXPECTED =
  'expected the name of a secret of this workspace: 1-128 letters, digits, "_" or "-", starting with a letter ' +
  'or digit (not a path, an ARN or the credential itself)';

export const SecretRefSchema = z
  .string({ error: EXPECTED })
  .check(z.refine((name) => SECRET_NAME_PATTERN.test(name), { error: (issue) => problemOf(issue.input) }));

function problemOf(input: unknown): string {
  return typeof input === 'string' ? (secretNameProblem(input) ?? EXPECTED) : EXPECTED;
}

/** Why `name` cannot be a secret of a workspace, or undefined when it can. */
export function secretNameProblem(name: string): string | undefined {
  if (SECRET_NAME_PATTERN.test(name)) return undefined;
  const shown = JSON.stringify(name.length > 80 ? `${name.slice(0, 80)}…` : name);
  if (name.startsWith('arn:')) return `${shown} is an ARN: ${EXPECTED}`;
  if (name.includes('/') || name.includes('..'))
    return `${shown} is a path: a secret_ref names a secret inside the definition's own workspace; ${EXPECTED}`;
  return `${shown}: ${EXPECTED}`;
}

/** A `secret_ref` in a definition, with the path of the field that holds it (relative to `context`). */
export interface SecretRefUse {
  readonly path: string;
  readonly name: string;
}

interface Credentials {
  readonly headers?: Readonly<Record<string, string | { secret_ref: string }>> | undefined;
  readonly authentication?: { readonly secret_ref?: string | undefined } | undefined;
}

function refsIn(at: string, source: Credentials | undefined): SecretRefUse[] {
  if (source === undefined) return [];
  const refs: SecretRefUse[] = [];
  for (const [header, value] of Object.entries(source.headers ?? {})) {
    if (typeof value !== 'string')
      refs.push({ path: `${at}.headers.${header}.secret_ref`, name: value.secret_ref });
  }
  const auth = source.authentication?.secret_ref;
  if (auth !== undefined) refs.push({ path: `${at}.authentication.secret_ref`, name: auth });
  return refs;
}

/**
 * Every `secret_ref` a definition names: an agent's transport (mcp, api, external), an MCP tool's `mcp`, an http
 * tool's `config`.
 */
export function secretRefsOf(parsed: ParsedDefinition): SecretRefUse[] {
  switch (parsed.kind) {
    case 'agent': {
      const transport = parsed.definition.transport;
      if (transport === undefined) return [];
      switch (transport.kind) {
        case 'mcp':
          return refsIn('transport.mcp', transport.mcp);
        case 'api':
          return refsIn('transport.api', transport.api);
        case 'external':
          return refsIn('transport.external', transport.external);
        case 'function':
          return [];
      }
      return [];
    }
    case 'tool':
      return parsed.definition.implementation === 'http'
        ? // A parsed http tool's config.headers and authentication have their checked shape (definitions.ts); read
          // here without parsing again, which would import definitions.ts into the module it imports.
          refsIn('config', parsed.definition.config as Credentials)
        : refsIn('mcp', parsed.definition.mcp);
    default:
      return [];
  }
}
