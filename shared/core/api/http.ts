/**
 * The HTTP edge: API Gateway REST API (Lambda proxy integration) events in, responses out. The same handler runs
 * behind API Gateway (the front door's TOKEN authorizer in front, `shared/core/front-door/authorizer.ts`) and behind
 * the local stack's server, which plays API Gateway's part: it checks the bearer token and passes the caller in
 * `requestContext.authorizer` as the authorizer's context.
 */
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import {
  AUTHORIZER_SUB_KEY,
  AUTHORIZER_WORKSPACES_KEY,
  AuthorizerContextSchema,
  expired,
} from '#shared/core/front-door/authorizer.ts';
import { WORKSPACE_PATTERN } from '#shared/domain/breadcrumb.ts';
import {
  type CrumbsError,
  isCrumbsError,
  MethodNotAllowedError,
  RetriableError,
  TooManyRequestsError,
} from '#shared/domain/errors.ts';

/** A REST API proxy integration's event (payload format 1.0). */
export type HttpEvent = APIGatewayProxyEvent;
export type HttpResult = Omit<APIGatewayProxyResult, 'body' | 'headers'> & {
  statusCode: number;
  headers: Record<string, string>;
  body?: string;
  /**
   * A body sent as it is produced (server-sent events): a response-streaming handler writes each chunk when it
   * comes (`functions/wiring/http-handler.ts`), on AWS and under `crumbs dev` alike.
   */
  bodyStream?: AsyncIterable<string>;
};

/** Who is calling and which workspaces they may use (`'*'` = all). */
export interface Caller {
  principal: string;
  workspaces: '*' | readonly string[];
  /** Why the token's workspace claim grants nothing when it is malformed (the 403 says so). */
  claimProblem?: string;
}

export interface HttpRequest {
  method: string;
  path: string;
  /** Lower-cased header names. */
  headers: Record<string, string>;
  query: Record<string, string>;
  /** Raw body bytes as text (base64 already decoded). */
  body: string | undefined;
  caller: Caller | undefined;
  /** Time left before the function times out (long-polling routes wait only this long). */
  remainingMs?: () => number;
  /** The client's address as API Gateway (or the local server) saw it. */
  sourceIp?: string;
}

export function toHttpRequest(
  event: HttpEvent,
  workspacesClaim: string,
  context?: { getRemainingTimeInMillis(): number },
  now: () => number = Date.now,
): HttpRequest {
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(event.headers ?? {})) if (v !== undefined) headers[k.toLowerCase()] = v;
  // A repeated header arrives whole in `multiValueHeaders`: joined as HTTP joins it.
  for (const [k, v] of Object.entries(event.multiValueHeaders ?? {})) {
    if (v !== undefined && v.length > 1) headers[k.toLowerCase()] = v.join(',');
  }
  const query: Record<string, string> = {};
  for (const [k, v] of Object.entries(event.queryStringParameters ?? {})) if (v !== undefined) query[k] = v;
  for (const [k, v] of Object.entries(event.multiValueQueryStringParameters ?? {})) {
    if (v !== undefined && v.length > 1) query[k] = v.join(',');
  }
  const body =
    event.body === null || event.body === undefined
      ? undefined
      : event.isBase64Encoded
        ? Buffer.from(event.body, 'base64').toString('utf8')
        : event.body;
  return {
    method: event.httpMethod.toUpperCase(),
    path: event.path,
    headers,
    query,
    body,
    caller: callerOfAuthorizer(event.requestContext.authorizer, workspacesClaim, now()),
    ...(context ? { remainingMs: () => context.getRemainingTimeInMillis() } : {}),
    ...(event.requestContext.identity?.sourceIp ? { sourceIp: event.requestContext.identity.sourceIp } : {}),
  };
}

/**
 * The caller the authorizer let in (its context, as API Gateway hands it over), or none: no context (a public
 * route), one that is not the authorizer's, or a token whose `exp` has passed since its Allow was cached.
 */
function callerOfAuthorizer(raw: unknown, workspacesClaim: string, nowMs: number): Caller | undefined {
  const parsed = AuthorizerContextSchema.safeParse(raw);
  if (!parsed.success || expired(parsed.data, nowMs)) return undefined;
  const claims: Record<string, string> = { sub: parsed.data[AUTHORIZER_SUB_KEY] };
  const workspaces = parsed.data[AUTHORIZER_WORKSPACES_KEY];
  if (workspaces !== undefined) claims[workspacesClaim] = workspaces;
  return callerFromClaims(claims, workspacesClaim);
}

/** At most this many workspaces in one token's claim: more is a malformed claim, not a longer scan per request. */
export const MAX_CLAIMED_WORKSPACES = 100;
/** The claim's text is read only up to this size (100 names of 64 characters with separators fit). */
const MAX_CLAIM_CHARS = MAX_CLAIMED_WORKSPACES * 72;

/**
 * The claim a Cognito user pool lists a user's groups in, in ID and access tokens alike, on every feature plan. When
 * it is the workspaces claim (the user pool crumbs creates when no issuer is given), each group is a workspace —
 * and a group whose name is not a workspace name (an operator's own group) is skipped rather than voiding the
 * claim: groups are set only by the pool's administrators, so skipping one grants nothing it did not.
 */
export const COGNITO_GROUPS_CLAIM = 'cognito:groups';

/** The workspaces claim of an operator's issuer unless the operator names another (`crumbs:workspacesClaim`). */
export const DEFAULT_WORKSPACES_CLAIM = 'crumbs:workspaces';

/**
 * Which workspaces the token grants, from every form an issuer sends its list claim in: a JSON array, a JSON
 * array's text, a space- or comma-separated string, one name — and as API Gateway renders a list claim for the
 * Lambda (`"[a b]"`). `*` grants every workspace. A claim that is absent, too long or names something that is not a
 * workspace grants none, and says why (`claimProblem`) so the 403 tells the caller what to fix — except the
 * `cognito:groups` claim, whose other groups are skipped (`COGNITO_GROUPS_CLAIM`).
 */
export function callerFromClaims(
  claims: Record<string, string | number | boolean | string[]>,
  workspacesClaim: string,
): Caller {
  const principal = `user:${String(claims.sub ?? 'anonymous')}`;
  const parsed = claimedWorkspaces(claims[workspacesClaim], workspacesClaim === COGNITO_GROUPS_CLAIM);
  if (typeof parsed === 'string') {
    return { principal, workspaces: [], claimProblem: `the token's ${workspacesClaim} claim ${parsed}` };
  }
  return { principal, workspaces: parsed.includes('*') ? '*' : parsed };
}

/**
 * The claim's workspace names, or why it names none (a phrase after "the token's <claim> claim"). `groups`: the
 * claim lists groups, of which only those named as workspaces count.
 */
function claimedWorkspaces(raw: unknown, groups = false): string[] | string {
  let names: unknown[];
  if (raw === undefined || raw === null) return 'is missing';
  if (Array.isArray(raw)) names = raw;
  else if (typeof raw === 'string') {
    const text = raw.trim();
    if (text.length > MAX_CLAIM_CHARS) return `is longer than ${MAX_CLAIM_CHARS} characters`;
    if (text.startsWith('[') && text.includes('"')) {
      try {
        const value: unknown = JSON.parse(text);
        if (!Array.isArray(value)) return 'is not a list of workspace names';
        names = value;
      } catch {
        return 'is neither a JSON array nor a space- or comma-separated list of workspace names';
      }
    } else
      names = text
        .replace(/^\[|\]$/g, '')
        .split(/[\s,]+/)
        .filter(Boolean);
  } else return 'is not a list of workspace names';
  if (groups) names = names.filter((name) => name === '*' || isWorkspaceName(name));
  if (names.length === 0) return groups ? 'names no group that is a workspace' : 'names no workspace';
  if (names.length > MAX_CLAIMED_WORKSPACES) {
    return `names ${names.length} workspaces (at most ${MAX_CLAIMED_WORKSPACES})`;
  }
  for (const name of names) {
    if (name !== '*' && !isWorkspaceName(name)) {
      const shown = JSON.stringify(name)?.slice(0, 80) ?? String(name);
      return `names ${shown}, which is not a workspace name (1-64 letters, digits, "_" or "-") or "*"`;
    }
  }
  return names as string[];
}

function isWorkspaceName(name: unknown): name is string {
  return typeof name === 'string' && WORKSPACE_PATTERN.test(name);
}

const TITLES: Record<number, string> = {
  400: 'Bad request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not found',
  405: 'Method not allowed',
  409: 'Conflict',
  410: 'Gone',
  412: 'Precondition failed',
  413: 'Payload too large',
  415: 'Unsupported media type',
  422: 'Unprocessable content',
  429: 'Too many requests',
  500: 'Internal error',
  503: 'Service unavailable',
};

export function json(statusCode: number, body: unknown, headers: Record<string, string> = {}): HttpResult {
  return {
    statusCode,
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  };
}

export function empty(statusCode: number, headers: Record<string, string> = {}): HttpResult {
  return { statusCode, headers, body: '' };
}

/** RFC 9457 problem details; validation errors list every bad field under `errors`. */
export function problem(error: CrumbsError): HttpResult {
  const issues = 'issues' in error ? (error.issues as readonly { path: string; message: string }[]) : [];
  const headers: Record<string, string> = { 'content-type': 'application/problem+json' };
  if (error instanceof MethodNotAllowedError) headers.allow = error.allow.join(', ');
  if (error instanceof RetriableError) headers['retry-after'] = '1';
  if (error instanceof TooManyRequestsError) headers['retry-after'] = String(error.retryAfterSeconds);
  return {
    statusCode: error.status,
    headers,
    body: JSON.stringify({
      type: `https://crumbs.dev/problems/${error.code}`,
      title: TITLES[error.status] ?? 'Error',
      status: error.status,
      detail: error.message,
      ...(issues.length > 0 ? { errors: issues } : {}),
      ...(error instanceof TooManyRequestsError
        ? {
            ...(error.limit !== undefined ? { limit: error.limit } : {}),
            retry_after_seconds: error.retryAfterSeconds,
          }
        : {}),
    }),
  };
}

export function internalProblem(): HttpResult {
  return {
    statusCode: 500,
    headers: { 'content-type': 'application/problem+json' },
    body: JSON.stringify({
      type: 'https://crumbs.dev/problems/internal-error',
      title: TITLES[500],
      status: 500,
      detail: 'an unexpected error occurred; it has been logged',
    }),
  };
}

export { isCrumbsError };
