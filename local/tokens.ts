/**
 * The bearer tokens the local API accepts, and which workspaces each may use: what API Gateway's JWT authorizer
 * and the token's `crumbs:workspaces` claim decide on AWS.
 *
 * - `CRUMBS_TOKEN` (or `--token`, or a generated one): one token for every workspace (`sub` = `local`).
 * - `CRUMBS_TOKENS`: scoped tokens, a JSON object mapping token → list of workspaces, or `"*"` for all, e.g.
 *   `{"alice-token":["team-a"],"bob-token":["team-b","shared"]}`. Each token's `sub` is `local-` plus the first
 *   8 hex digits of its SHA-256, so what a scoped caller writes says which token wrote it without printing it.
 *
 * The local API server turns the grant into claims exactly as API Gateway renders a JWT's list claim (`"[a b]"`),
 * so the handler's `callerFromClaims` and its 403 run locally as they do on AWS.
 */
import { createHash } from 'node:crypto';
import { WORKSPACE_PATTERN } from '#shared/domain/breadcrumb.ts';
import * as z from '#shared/domain/zod.ts';
import { ENV } from '#shared/topology.ts';

export type WorkspaceGrant = '*' | readonly string[];

/**
 * The client the local tokens stand for where an audience is checked (the events server's onSubscribe handler,
 * when `crumbs dev --oidc-issuer` makes it check one): never an issuer's client id.
 */
export const LOCAL_TOKEN_CLIENT = 'crumbs-dev-token';

export interface LocalToken {
  readonly token: string;
  /** The JWT `sub` claim the token stands for. */
  readonly sub: string;
  readonly workspaces: WorkspaceGrant;
}

const GrantSchema = z.union(
  [
    z.literal('*'),
    z
      .array(
        z
          .string({ error: 'expected a workspace name' })
          .check(
            z.regex(
              WORKSPACE_PATTERN,
              'expected a workspace name (1-64 letters, digits, "_" or "-") or "*" for all workspaces',
            ),
          ),
        { error: 'expected a list of workspace names or "*"' },
      )
      .check(z.minLength(1, 'a token needs at least one workspace (or "*")')),
  ],
  { error: 'expected a list of workspace names or "*"' },
);

const ScopedTokensSchema = z.record(
  z
    .string()
    .check(
      z.regex(
        /^[\x21-\x7e]{8,512}$/,
        'a token is 8-512 visible ASCII characters (no spaces or quotes needed)',
      ),
    ),
  GrantSchema,
  { error: 'expected a JSON object mapping token → list of workspaces (or "*")' },
);

/** Why `CRUMBS_TOKENS` cannot be used; the message says what to write instead. */
export class ScopedTokensError extends Error {
  constructor(message: string) {
    super(
      `${ENV.localScopedTokens}: ${message}. Expected a JSON object mapping token → list of workspaces or "*", e.g. {"my-token":["team-a"]}`,
    );
    this.name = 'ScopedTokensError';
  }
}

/** Parses `CRUMBS_TOKENS`; an absent or blank value is no scoped tokens. Throws ScopedTokensError. */
export function parseScopedTokens(text: string | undefined): LocalToken[] {
  if (text === undefined || text.trim() === '') return [];
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new ScopedTokensError(`not valid JSON (${(error as Error).message})`);
  }
  const parsed = ScopedTokensSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue && issue.path.length > 0 ? ` at ${issue.path.map(String).join('.')}` : '';
    throw new ScopedTokensError(`${issue?.message ?? 'not valid'}${where}`);
  }
  return Object.entries(parsed.data).map(([token, workspaces]) => ({
    token,
    sub: `local-${createHash('sha256').update(token).digest('hex').slice(0, 8)}`,
    workspaces,
  }));
}

/** The single all-workspaces token followed by the scoped ones; a scoped token equal to it is refused. */
export function localTokens(allWorkspacesToken: string, scoped: readonly LocalToken[]): LocalToken[] {
  if (scoped.some((t) => t.token === allWorkspacesToken)) {
    throw new ScopedTokensError(
      `a scoped token is the same as ${ENV.localToken} (which may use every workspace)`,
    );
  }
  return [{ token: allWorkspacesToken, sub: 'local', workspaces: '*' }, ...scoped];
}

/** The workspaces claim as API Gateway passes a JWT list claim to the handler: `"*"` or `"[a b]"`. */
export function workspacesClaimValue(grant: WorkspaceGrant): string {
  return grant === '*' ? '*' : `[${grant.join(' ')}]`;
}
