/**
 * The audience rule crumbs applies wherever it checks a token — the local events server under
 * `crumbs dev --oidc-issuer` uses this one; the front door's TOKEN authorizer (`shared/core/front-door/authorizer.ts`)
 * applies the same rule in its verifier's check (test/unit/local/jwt-authorizer.test.ts holds the two to the same
 * verdicts), and the AppSync onSubscribe handler keeps its own copy in the APPSYNC_JS subset
 * (`shared/core/streaming/on-subscribe.appsync.js`, tested against this one): `aud` must name one of the audiences
 * when the token has an `aud` (ID tokens); a token without one is judged by `client_id` (Cognito access tokens).
 * Both shapes of a Cognito token pass; a token issued to another client does not.
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
