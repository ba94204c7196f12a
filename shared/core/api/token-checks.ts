/**
 * The rules of API Gateway's HTTP API JWT authorizer that crumbs applies itself wherever it checks a token without
 * API Gateway in front (the local API under `crumbs dev --oidc-issuer`; the AppSync onSubscribe handler keeps its
 * own copy in the APPSYNC_JS subset, `shared/core/streaming/on-subscribe.appsync.js`, tested against this one):
 *
 * - **audience**: `aud` must name one of the audiences when the token has an `aud` (ID tokens); a token without one
 *   is judged by `client_id` (Cognito access tokens). Both shapes of a Cognito token pass; a token issued to another
 *   client does not.
 * - **claims to the function**: every claim as a string, a list as `[a b]`, an object in Go's map notation — how
 *   the api function receives them in `requestContext.authorizer.jwt.claims` (payload format 2.0).
 */

/** Whether the token was issued to one of `audiences`: its `aud` when it has one, else its `client_id`. */
export function audienceAccepted(claims: Record<string, unknown>, audiences: readonly string[]): boolean {
  const aud = claims.aud;
  if (aud !== undefined && aud !== null) {
    const list = Array.isArray(aud) ? aud : [aud];
    return list.some((a) => typeof a === 'string' && audiences.includes(a));
  }
  return typeof claims.client_id === 'string' && audiences.includes(claims.client_id);
}

/** A JWT's claims as API Gateway's JWT authorizer hands them to the function. */
export function apiGatewayClaims(payload: Record<string, unknown>): Record<string, string> {
  return Object.fromEntries(Object.entries(payload).map(([k, v]) => [k, rendered(v)]));
}

function rendered(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(rendered).join(' ')}]`;
  if (value !== null && typeof value === 'object') {
    return `map[${Object.entries(value)
      .map(([k, v]) => `${k}:${rendered(v)}`)
      .join(' ')}]`;
  }
  return String(value);
}
