/**
 * Signing in, the part the CLI (`crumbs login`) and the dashboard share: OAuth 2.0 authorization code with PKCE
 * (RFC 7636, S256) for a public client, the token requests (RFC 6749 §4.1.3, §6), revocation (RFC 7009) and the
 * logout address, against the settings `/ui/sign-in.json` answers (`shared/core/api/sign-in.ts`).
 *
 * Runs in the browser too: Web Crypto and fetch only, no Node modules. The tokens are read here only to know when
 * they expire and whom they name (a display); the API's authorizer is what verifies them.
 */
import type { AvailableSignIn } from '#shared/core/api/sign-in.ts';

export type { AvailableSignIn, SignInConfig } from '#shared/core/api/sign-in.ts';

/** What a sign-in holds. `expires_at`: epoch ms after which the access token is no longer taken. */
export interface TokenSet {
  readonly access_token: string;
  readonly id_token?: string;
  readonly refresh_token?: string;
  readonly expires_at: number;
}

/** A token request the issuer refused (`error` is OAuth's code: `invalid_grant` = signed out or expired). */
export class SignInError extends Error {
  constructor(
    message: string,
    readonly error: string | undefined,
  ) {
    super(message);
    this.name = 'SignInError';
  }

  /** The refresh token is no good any more (revoked, expired, the user signed out everywhere). */
  get signedOut(): boolean {
    return this.error === 'invalid_grant';
  }
}

export type FetchLike = (input: string, init: RequestInit) => Promise<Response>;

/** A token is renewed this long before it expires, so a request never leaves with one about to lapse. */
export const EXPIRY_MARGIN_MS = 60_000;

function base64url(bytes: Uint8Array): string {
  let binary = '';
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/** 32 random bytes, base64url: a PKCE verifier (43 characters) or a `state`. */
export function randomToken(): string {
  return base64url(crypto.getRandomValues(new Uint8Array(32)));
}

/** A PKCE verifier and its S256 challenge. */
export async function pkcePair(): Promise<{ verifier: string; challenge: string }> {
  const verifier = randomToken();
  return { verifier, challenge: await s256Challenge(verifier) };
}

/** RFC 7636 §4.2: `BASE64URL(SHA256(ASCII(code_verifier)))`. */
export async function s256Challenge(verifier: string): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier));
  return base64url(new Uint8Array(digest));
}

/** Where to send the person: the issuer's authorization endpoint with the client, the PKCE challenge and `state`. */
export function authorizationUrl(
  config: AvailableSignIn,
  request: { redirectUri: string; state: string; challenge: string },
): string {
  const url = new URL(config.authorization_endpoint);
  const params: Record<string, string> = {
    response_type: 'code',
    client_id: config.client_id,
    redirect_uri: request.redirectUri,
    scope: config.scopes.join(' '),
    state: request.state,
    code_challenge: request.challenge,
    code_challenge_method: 'S256',
    ...config.authorization_params,
  };
  for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
  return url.toString();
}

/** Exchanges the authorization code (with the PKCE verifier) for tokens. */
export function exchangeCode(
  config: AvailableSignIn,
  request: { code: string; verifier: string; redirectUri: string },
  fetchImpl: FetchLike = fetchOf(),
  now: () => number = Date.now,
): Promise<TokenSet> {
  return tokenRequest(
    config,
    {
      grant_type: 'authorization_code',
      code: request.code,
      redirect_uri: request.redirectUri,
      code_verifier: request.verifier,
    },
    undefined,
    fetchImpl,
    now,
  );
}

/** New tokens from the refresh token; the refresh token is kept when the issuer does not rotate it. */
export function refreshTokens(
  config: AvailableSignIn,
  refreshToken: string,
  fetchImpl: FetchLike = fetchOf(),
  now: () => number = Date.now,
): Promise<TokenSet> {
  return tokenRequest(
    config,
    { grant_type: 'refresh_token', refresh_token: refreshToken },
    refreshToken,
    fetchImpl,
    now,
  );
}

/** Revokes a refresh token (RFC 7009): nobody can refresh with it again. False when the issuer has no endpoint. */
export async function revokeToken(
  config: AvailableSignIn,
  refreshToken: string,
  fetchImpl: FetchLike = fetchOf(),
): Promise<boolean> {
  if (config.revocation_endpoint === undefined) return false;
  const response = await fetchImpl(config.revocation_endpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      token: refreshToken,
      token_type_hint: 'refresh_token',
      client_id: config.client_id,
    }).toString(),
    signal: AbortSignal.timeout(15_000),
  });
  if (!response.ok) {
    const { error, description } = await oauthError(response);
    throw new SignInError(`the issuer refused to revoke the token: ${description}`, error);
  }
  return true;
}

/** Where a browser ends the issuer's own session and comes back to `returnTo`. */
export function logoutUrl(config: AvailableSignIn, returnTo: string, idToken?: string): string | undefined {
  if (config.logout_endpoint === undefined) return undefined;
  const url = new URL(config.logout_endpoint);
  url.searchParams.set('client_id', config.client_id);
  if (config.logout_style === 'cognito') url.searchParams.set('logout_uri', returnTo);
  else {
    url.searchParams.set('post_logout_redirect_uri', returnTo);
    if (idToken !== undefined) url.searchParams.set('id_token_hint', idToken);
  }
  return url.toString();
}

/**
 * The token to send the API: the access token when it is a JWT (Cognito's: `client_id`, no `aud`), else the ID
 * token (an OpenID Connect issuer's access tokens may be opaque; its ID token is always a JWT with the client as
 * `aud`). The API's authorizer takes either shape.
 */
export function bearerToken(tokens: TokenSet): string {
  return tokenClaims(tokens.access_token) !== undefined || tokens.id_token === undefined
    ? tokens.access_token
    : tokens.id_token;
}

/** A JWT's claims, unverified (for a display and the expiry), or undefined when it is not a JWT. */
export function tokenClaims(token: string): Record<string, unknown> | undefined {
  const parts = token.split('.');
  if (parts.length !== 3 || parts[1] === undefined) return undefined;
  try {
    const padded = parts[1].replace(/-/g, '+').replace(/_/g, '/');
    const json = new TextDecoder().decode(
      Uint8Array.from(atob(padded + '='.repeat((4 - (padded.length % 4)) % 4)), (c) => c.charCodeAt(0)),
    );
    const value: unknown = JSON.parse(json);
    return value !== null && typeof value === 'object' && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/** Whether the tokens must be refreshed before use. */
export function expiresSoon(tokens: TokenSet, now: number = Date.now()): boolean {
  return tokens.expires_at - EXPIRY_MARGIN_MS <= now;
}

function fetchOf(): FetchLike {
  return (input, init) => globalThis.fetch(input, init);
}

async function tokenRequest(
  config: AvailableSignIn,
  params: Record<string, string>,
  keptRefreshToken: string | undefined,
  fetchImpl: FetchLike,
  now: () => number,
): Promise<TokenSet> {
  const response = await fetchImpl(config.token_endpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
    body: new URLSearchParams({ ...params, client_id: config.client_id }).toString(),
    signal: AbortSignal.timeout(15_000),
  });
  if (!response.ok) {
    const { error, description } = await oauthError(response);
    throw new SignInError(`the issuer refused the ${params.grant_type} request: ${description}`, error);
  }
  let body: Record<string, unknown>;
  try {
    body = (await response.json()) as Record<string, unknown>;
  } catch {
    throw new SignInError('the issuer answered the token request with something that is not JSON', undefined);
  }
  const access = body.access_token;
  if (typeof access !== 'string' || access === '') {
    throw new SignInError('the issuer answered the token request without an access_token', undefined);
  }
  const idToken = typeof body.id_token === 'string' ? body.id_token : undefined;
  const refresh = typeof body.refresh_token === 'string' ? body.refresh_token : keptRefreshToken;
  const tokens = { access_token: access, ...(idToken !== undefined ? { id_token: idToken } : {}) };
  // The API checks the `exp` of the token it is sent; `expires_in` speaks of the access token, which may not be it.
  const bearerExp = tokenClaims(bearerToken({ ...tokens, expires_at: 0 }))?.exp;
  const expiresAt =
    typeof bearerExp === 'number'
      ? bearerExp * 1000
      : typeof body.expires_in === 'number'
        ? now() + body.expires_in * 1000
        : now() + 5 * 60_000;
  return { ...tokens, ...(refresh !== undefined ? { refresh_token: refresh } : {}), expires_at: expiresAt };
}

async function oauthError(response: Response): Promise<{ error: string | undefined; description: string }> {
  const text = await response.text().catch(() => '');
  try {
    const body = JSON.parse(text) as { error?: unknown; error_description?: unknown };
    const error = typeof body.error === 'string' ? body.error : undefined;
    const detail = typeof body.error_description === 'string' ? body.error_description : undefined;
    return {
      error,
      description: [error, detail].filter(Boolean).join(': ') || `HTTP ${response.status}`,
    };
  } catch {
    return { error: undefined, description: `HTTP ${response.status} ${text.slice(0, 120)}`.trim() };
  }
}
