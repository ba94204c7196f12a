/**
 * The HTTP edge: API Gateway HTTP API (payload format 2.0) events in, responses out. The same handler runs behind
 * API Gateway (JWT authorizer in front) and behind the local stack's server, which plays API Gateway's part:
 * it checks the bearer token and passes the caller's claims in `requestContext.authorizer.jwt.claims`.
 */
import type { APIGatewayProxyEventV2WithJWTAuthorizer, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import {
  type CrumbsError,
  isCrumbsError,
  MethodNotAllowedError,
  RetriableError,
} from '#shared/domain/errors.ts';

export type HttpEvent = Omit<APIGatewayProxyEventV2WithJWTAuthorizer, 'requestContext'> & {
  requestContext: Omit<APIGatewayProxyEventV2WithJWTAuthorizer['requestContext'], 'authorizer'> & {
    authorizer?: APIGatewayProxyEventV2WithJWTAuthorizer['requestContext']['authorizer'];
  };
};
export type HttpResult = APIGatewayProxyStructuredResultV2 & {
  statusCode: number;
  headers: Record<string, string>;
};

/** Who is calling and which workspaces they may use (`'*'` = all). */
export interface Caller {
  principal: string;
  workspaces: '*' | readonly string[];
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
}

export function toHttpRequest(
  event: HttpEvent,
  workspacesClaim: string,
  context?: { getRemainingTimeInMillis(): number },
): HttpRequest {
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(event.headers ?? {})) if (v !== undefined) headers[k.toLowerCase()] = v;
  const query: Record<string, string> = {};
  for (const [k, v] of Object.entries(event.queryStringParameters ?? {})) if (v !== undefined) query[k] = v;
  const body =
    event.body === undefined
      ? undefined
      : event.isBase64Encoded
        ? Buffer.from(event.body, 'base64').toString('utf8')
        : event.body;
  const claims = event.requestContext.authorizer?.jwt?.claims;
  return {
    method: event.requestContext.http.method.toUpperCase(),
    path: event.rawPath,
    headers,
    query,
    body,
    caller: claims ? callerFromClaims(claims, workspacesClaim) : undefined,
    ...(context ? { remainingMs: () => context.getRemainingTimeInMillis() } : {}),
  };
}

/**
 * API Gateway renders JWT claims as strings; a list claim arrives as "[a b]" or "a,b" or a JSON array text.
 * `*` grants every workspace.
 */
export function callerFromClaims(
  claims: Record<string, string | number | boolean | string[]>,
  workspacesClaim: string,
): Caller {
  const sub = String(claims.sub ?? 'anonymous');
  const raw = claims[workspacesClaim];
  let workspaces: string[] = [];
  if (Array.isArray(raw)) workspaces = raw.map(String);
  else if (typeof raw === 'string') {
    const text = raw.trim();
    if (text.startsWith('[') && text.includes('"')) {
      try {
        workspaces = (JSON.parse(text) as unknown[]).map(String);
      } catch {
        workspaces = [];
      }
    } else
      workspaces = text
        .replace(/^\[|\]$/g, '')
        .split(/[\s,]+/)
        .filter(Boolean);
  }
  return { principal: `user:${sub}`, workspaces: workspaces.includes('*') ? '*' : workspaces };
}

const TITLES: Record<number, string> = {
  400: 'Bad request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not found',
  405: 'Method not allowed',
  412: 'Precondition failed',
  413: 'Payload too large',
  415: 'Unsupported media type',
  422: 'Unprocessable content',
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
  return {
    statusCode: error.status,
    headers,
    body: JSON.stringify({
      type: `https://crumbs.dev/problems/${error.code}`,
      title: TITLES[error.status] ?? 'Error',
      status: error.status,
      detail: error.message,
      ...(issues.length > 0 ? { errors: issues } : {}),
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
