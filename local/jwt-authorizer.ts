/**
 * `crumbs dev --oidc-issuer`: the local events server takes real JWTs of that issuer at connect and subscribe, checked
 * as on AWS — the signature against the issuer's JWKS (found through its discovery document), `iss`, `exp` and
 * `nbf`, and the audience rule of `shared/core/api/token-checks.ts` (`aud`, else `client_id`), so both Cognito token
 * shapes work locally as they do deployed. (The local API checks the same tokens with the front door's own
 * authorizer function, `functions/authorizer/handler.ts`, as API Gateway calls it.)
 *
 * The signature and time checks are `aws-jwt-verify`'s (a maintained library made for this); its own fetcher speaks
 * only https, so the JWKS is fetched with `fetch`, which a loopback issuer (`http://127.0.0.1:…`) needs. The keys
 * are read before the stack starts, because a subscribe is checked synchronously.
 */
import { JwtVerifier } from 'aws-jwt-verify';
import type { Fetcher } from 'aws-jwt-verify/https';
import { SimpleJwksCache } from 'aws-jwt-verify/jwk';
import { audienceAccepted } from '#shared/core/api/token-checks.ts';

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
    payloadOfSync(token) {
      try {
        return accepted(verifier.verifySync(token));
      } catch {
        return undefined;
      }
    },
  };
}
