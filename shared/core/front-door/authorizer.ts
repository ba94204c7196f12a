/**
 * The front door's token check, in one module that the authorizer function, the local API server, the handlers and
 * the CDK app share. API Gateway's REST API has no JWT authorizer, so a Lambda TOKEN authorizer does what the HTTP
 * API's JWT authorizer did, with `aws-jwt-verify` (a maintained verifier, AWS's own) checking the signature:
 *
 * - the token is a JWT signed by a key of the issuer's JWKS (found by OIDC discovery, as the JWT authorizer does:
 *   `<issuer>/.well-known/openid-configuration` names `jwks_uri`), `iss` is the issuer, `exp` is present and in the
 *   future, `nbf` (if any) has passed;
 * - its audience is one of the configured ones: `aud` when the token has it (ID tokens, most OIDC access tokens),
 *   else `client_id` (Cognito access tokens carry no `aud`) — the JWT authorizer's rule, so both Cognito token
 *   shapes pass.
 *
 * What it passes on is the authorizer's `context`, which API Gateway hands the integration as
 * `requestContext.authorizer` (every value turned into a string): `sub`, the workspaces claim as it came (a list as
 * JSON text, so `callerFromClaims` reads it as it reads any form), and `exp`. The handlers decide the workspace
 * (`callerFromClaims`, the same 403 as before) and refuse a context whose `exp` has passed (`AUTHORIZER_EXP_KEY`).
 *
 * Caching: API Gateway keeps a token's Allow (or Deny) for `AUTHORIZER.ttlSeconds` keyed by the Authorization
 * header, and the policy covers the whole stage (the workspace check is the handler's), so one verification serves
 * every route.
 * What that costs in revocation: a token is accepted as long as its `exp` allows, as with the JWT authorizer (a JWT
 * is not looked up anywhere). The cache adds nothing past `exp`, because the handlers check `exp` from the context;
 * a key removed from the issuer's JWKS still verifies cached tokens for up to the TTL, and the authorizer's JWKS
 * cache (one container's life) until it meets a `kid` it does not know.
 */
import { JwtVerifier } from 'aws-jwt-verify';
import { FetchError } from 'aws-jwt-verify/error';
import type { Fetcher } from 'aws-jwt-verify/https';
import { SimpleJwksCache } from 'aws-jwt-verify/jwk';
import type { JwtPayload } from 'aws-jwt-verify/jwt-model';
import * as z from '#shared/domain/zod.ts';

/** How API Gateway calls the authorizer, and how long it keeps an answer. */
export const AUTHORIZER = {
  /** The TOKEN authorizer's identity source: the cache key too. */
  identitySource: 'method.request.header.Authorization',
  /**
   * API Gateway answers 401 without calling the authorizer when the header does not look like a bearer JWT (three
   * base64url parts), so a flood of junk costs no authorizer invocation.
   */
  validationRegex: '^Bearer [-0-9A-Za-z_=]+\\.[-0-9A-Za-z_=]+\\.[-0-9A-Za-z_=]*$',
  /** An Allow is kept this long per Authorization header (API Gateway's default; at most 3600). */
  ttlSeconds: 300,
} as const;

/** The context keys (besides API Gateway's own `principalId`). */
export const AUTHORIZER_SUB_KEY = 'sub';
export const AUTHORIZER_WORKSPACES_KEY = 'workspaces';
export const AUTHORIZER_EXP_KEY = 'exp';

/** A claim longer than this is cut (the handler then refuses it as too long): contexts are not unbounded. */
const MAX_FORWARDED_CLAIM_CHARS = 8192;
/** Discovery and JWKS documents are small; a larger answer is not one. */
const MAX_DOCUMENT_BYTES = 256 * 1024;
const FETCH_TIMEOUT_MS = 3000;

export interface TokenCheckConfig {
  /** The `iss` accepted; an `https://` URL (an `http://` loopback issuer only in tests and `crumbs dev`). */
  readonly issuer: string;
  /** Accepted `aud` values, or `client_id` values of tokens without `aud`. */
  readonly audiences: readonly string[];
  /** The claim listing the caller's workspaces, forwarded as it came. */
  readonly workspacesClaim: string;
  /** How documents are fetched (tests); default: `fetch`, https only but for a loopback issuer. */
  readonly fetcher?: Fetcher;
}

/** What the authorizer hands the integration. Values are strings, as API Gateway delivers them. */
export interface AuthorizerContext {
  readonly [AUTHORIZER_SUB_KEY]: string;
  readonly [AUTHORIZER_WORKSPACES_KEY]?: string;
  /** Seconds since the epoch, as text. */
  readonly [AUTHORIZER_EXP_KEY]: string;
}

export type TokenVerdict =
  | { readonly ok: true; readonly principalId: string; readonly context: AuthorizerContext }
  | { readonly ok: false; readonly reason: string };

/** `verify(authorization header)`: the verdict on a bearer token. Throws only when the issuer cannot be read. */
export function tokenCheck(config: TokenCheckConfig): (authorization: string) => Promise<TokenVerdict> {
  const issuer = config.issuer.replace(/\/+$/, '');
  const fetcher = config.fetcher ?? documentFetcher(issuer);
  const audiences = new Set(config.audiences);
  let verifier: Promise<{ verify(token: string): Promise<JwtPayload> }> | undefined;
  const discover = async () => {
    const document = await fetchJson(fetcher, `${issuer}/.well-known/openid-configuration`);
    const parsed = DiscoverySchema.safeParse(document);
    if (!parsed.success) throw new Error(`${issuer}: the discovery document names no jwks_uri`);
    if (parsed.data.issuer.replace(/\/+$/, '') !== issuer) {
      throw new Error(`${issuer}: the discovery document is for another issuer (${parsed.data.issuer})`);
    }
    return JwtVerifier.create(
      {
        issuer: parsed.data.issuer,
        jwksUri: parsed.data.jwks_uri,
        // Checked below: `aud`, or `client_id` when there is no `aud` (aws-jwt-verify checks `aud` only).
        audience: null,
        customJwtCheck: ({ payload }) => {
          if (typeof payload.exp !== 'number') throw new Error('the token has no exp');
          const aud = payload.aud;
          if (aud !== undefined) {
            const named = Array.isArray(aud) ? aud : [aud];
            if (!named.some((a) => audiences.has(a))) throw new Error('aud names none of the audiences');
          } else if (typeof payload.client_id !== 'string' || !audiences.has(payload.client_id)) {
            throw new Error('a token without aud must have a client_id of one of the audiences');
          }
        },
      },
      { jwksCache: new SimpleJwksCache({ fetcher }) },
    );
  };
  return async (authorization) => {
    const match = /^Bearer\s+(\S+)$/i.exec(authorization.trim());
    if (!match?.[1]) return { ok: false, reason: 'no bearer token' };
    verifier ??= discover().catch((error: unknown) => {
      verifier = undefined;
      throw error;
    });
    const v = await verifier;
    let payload: JwtPayload;
    try {
      payload = await v.verify(match[1]);
    } catch (error) {
      // The JWKS cannot be read: not the token's fault, and not an answer to cache.
      if (error instanceof FetchError) throw error;
      return { ok: false, reason: (error as Error).message };
    }
    const sub = typeof payload.sub === 'string' && payload.sub !== '' ? payload.sub : undefined;
    if (sub === undefined) return { ok: false, reason: 'the token has no sub' };
    const claim = forwardedClaim(payload[config.workspacesClaim]);
    return {
      ok: true,
      principalId: sub,
      context: {
        [AUTHORIZER_SUB_KEY]: sub,
        ...(claim !== undefined ? { [AUTHORIZER_WORKSPACES_KEY]: claim } : {}),
        [AUTHORIZER_EXP_KEY]: String(payload.exp),
      },
    };
  };
}

/** A claim value as text: a list as its JSON, a string as it is. */
function forwardedClaim(value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return text.slice(0, MAX_FORWARDED_CLAIM_CHARS);
}

/**
 * The TOKEN authorizer's answer: Allow on every method and path of the stage the request came to (the answer is
 * cached for the token and serves its next requests to any route), with the context.
 */
export function allowResponse(methodArn: string, verdict: Extract<TokenVerdict, { ok: true }>) {
  const [arn = '', stage = ''] = methodArn.split('/');
  return {
    principalId: verdict.principalId,
    policyDocument: {
      Version: '2012-10-17',
      Statement: [{ Action: 'execute-api:Invoke', Effect: 'Allow', Resource: `${arn}/${stage}/*` }],
    },
    context: { ...verdict.context },
  };
}

/**
 * The TOKEN authorizer's refusal: Deny on the whole stage. A Deny, not a thrown `Unauthorized`, so a bad token is
 * no function error (the function's error alarm stays for an issuer that cannot be read) and its answer is cached
 * like an Allow; the front door answers it (API Gateway's ACCESS_DENIED) with the same 401 as a missing token.
 */
export function denyResponse(methodArn: string) {
  const [arn = '', stage = ''] = methodArn.split('/');
  return {
    principalId: 'anonymous',
    policyDocument: {
      Version: '2012-10-17',
      Statement: [{ Action: 'execute-api:Invoke', Effect: 'Deny', Resource: `${arn}/${stage}/*` }],
    },
  };
}

/** The context API Gateway hands the integration (strings, and its own `principalId` and `integrationLatency`). */
export const AuthorizerContextSchema = z.object({
  [AUTHORIZER_SUB_KEY]: z.string().check(z.minLength(1)),
  [AUTHORIZER_WORKSPACES_KEY]: z.optional(z.string()),
  [AUTHORIZER_EXP_KEY]: z.optional(z.coerce.number()),
});

/** Whether a context's token has expired (`exp` in seconds): a cached Allow never outlives its token. */
export function expired(context: z.output<typeof AuthorizerContextSchema>, nowMs: number): boolean {
  const exp = context[AUTHORIZER_EXP_KEY];
  return exp !== undefined && exp * 1000 <= nowMs;
}

const DiscoverySchema = z.object({ issuer: z.string(), jwks_uri: z.url() });

/**
 * Fetches the issuer's documents with `fetch`: https, or http for a loopback issuer (a test's or `crumbs dev`'s
 * own), never a document of another scheme than the issuer's; bounded in time and size.
 */
function documentFetcher(issuer: string): Fetcher {
  const issuerUrl = new URL(issuer);
  const loopback = ['127.0.0.1', 'localhost', '[::1]'].includes(issuerUrl.hostname);
  return {
    async fetch(uri) {
      const url = new URL(uri);
      if (
        url.protocol !== 'https:' &&
        !(loopback && url.protocol === 'http:' && url.host === issuerUrl.host)
      ) {
        throw new FetchError(uri, "an issuer's documents are read over https only");
      }
      const response = await fetch(url, {
        signal: AbortSignal.timeout(FETCH_TIMEOUT_MS),
        redirect: 'error',
      }).catch((error: unknown) => {
        throw new FetchError(uri, (error as Error).message);
      });
      if (response.status !== 200) throw new FetchError(uri, `status ${response.status}, expected 200`);
      const body = await response.arrayBuffer();
      if (body.byteLength > MAX_DOCUMENT_BYTES) {
        throw new FetchError(uri, `larger than ${MAX_DOCUMENT_BYTES} bytes`);
      }
      return body;
    },
  };
}

async function fetchJson(fetcher: Fetcher, uri: string): Promise<unknown> {
  return JSON.parse(new TextDecoder().decode(await fetcher.fetch(uri)));
}
