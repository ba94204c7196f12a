/**
 * `crumbs dev --oidc-issuer URL`: the local API and events server take real JWTs of that issuer, checked as API
 * Gateway's JWT authorizer checks them on AWS — the signature against the issuer's JWKS (found through its
 * discovery document), `iss`, `exp` and `nbf`, and the audience rule of `shared/core/api/token-checks.ts` (`aud`,
 * else `client_id`), so both Cognito token shapes work locally as they do deployed. The claims then reach the
 * handlers as API Gateway renders them (`apiGatewayClaims`).
 *
 * The signature and time checks are `aws-jwt-verify`'s (a maintained library made for this); its own fetcher speaks
 * only https, so the JWKS is fetched with `fetch`, which a loopback issuer (`http://127.0.0.1:…`) needs.
 */
import { JwtVerifier } from 'aws-jwt-verify';
import type { Fetcher } from 'aws-jwt-verify/https';
import { SimpleJwksCache } from 'aws-jwt-verify/jwk';
import { apiGatewayClaims, audienceAccepted } from '#shared/core/api/token-checks.ts';

export interface OidcIssuerOptions {
  /** The issuer URL, exactly as the tokens' `iss` names it. */
  readonly issuer: string;
  /** What a token must have been issued to (`aud`, else `client_id`). */
  readonly audiences: readonly string[];
}

export interface JwtAuthorizer {
  readonly issuer: string;
  readonly audiences: readonly string[];
  /**
   * The token's claims as API Gateway passes them to the function (`apiGatewayClaims`), or undefined when it is
   * refused (API Gateway's 401).
   */
  claimsOf(token: string): Promise<Record<string, string> | undefined>;
  /**
   * The token's claims as they are (as AppSync gives them to a handler), with the keys already fetched: the events
   * server's subscribe is synchronous.
   */
  payloadOfSync(token: string): Record<string, unknown> | undefined;
}

const FETCH_TIMEOUT_MS = 5000;

/** `aws-jwt-verify`'s fetcher on `fetch`: http and https alike, with a timeout. */
const fetcher: Fetcher = {
  async fetch(uri) {
    const response = await fetch(uri, { signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) });
    if (!response.ok) throw new Error(`${uri} answered ${response.status}`);
    return response.arrayBuffer();
  },
};

/** Reads the issuer's discovery document and makes the authorizer; throws with a message saying what failed. */
export async function createJwtAuthorizer(options: OidcIssuerOptions): Promise<JwtAuthorizer> {
  if (options.audiences.length === 0) throw new Error('--oidc-issuer needs an audience (--oidc-audience)');
  const discoveryUrl = `${options.issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`;
  let jwksUri: unknown;
  try {
    const response = await fetch(discoveryUrl, { signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) });
    if (!response.ok) throw new Error(`it answered ${response.status}`);
    jwksUri = ((await response.json()) as { jwks_uri?: unknown }).jwks_uri;
  } catch (error) {
    throw new Error(
      `cannot read the issuer's discovery document ${discoveryUrl}: ${(error as Error).message}`,
    );
  }
  if (typeof jwksUri !== 'string') throw new Error(`${discoveryUrl} names no jwks_uri`);
  const audiences = [...options.audiences];
  const verifier = JwtVerifier.create(
    {
      issuer: options.issuer,
      jwksUri,
      // The audience is API Gateway's rule (aud, else client_id), which the library's `aud` check is not.
      audience: null,
    },
    { jwksCache: new SimpleJwksCache({ fetcher }) },
  );
  await verifier.hydrate().catch((error: unknown) => {
    throw new Error(`cannot read the issuer's keys ${jwksUri}: ${(error as Error).message}`);
  });
  const accepted = (payload: Record<string, unknown>) =>
    audienceAccepted(payload, audiences) ? payload : undefined;
  return {
    issuer: options.issuer,
    audiences,
    async claimsOf(token) {
      let payload: Record<string, unknown>;
      try {
        payload = await verifier.verify(token);
      } catch {
        return undefined;
      }
      const ok = accepted(payload);
      return ok ? apiGatewayClaims(ok) : undefined;
    },
    payloadOfSync(token) {
      try {
        return accepted(verifier.verifySync(token));
      } catch {
        return undefined;
      }
    },
  };
}
