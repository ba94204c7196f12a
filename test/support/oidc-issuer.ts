/**
 * A real OpenID Connect issuer on loopback for the sign-in tests: `oidc-provider` (a certified implementation), with
 * one public client (authorization code + PKCE, refresh tokens, no secret), its development login form (any
 * password; the login name picks the account), and its signing key generated here, so a test can also sign tokens
 * of shapes the provider does not issue (a Cognito access token's `client_id` with no `aud`) that the same JWKS
 * verifies.
 *
 * The issuer must answer before the local stack starts (it reads the discovery document and the keys), and the
 * client's redirect URIs name the stack's API (its dashboard): so the provider starts with the CLI's callback only,
 * and `configure` makes it again (same issuer, same key) once the API's address is known.
 */
import { createPrivateKey, createSign, generateKeyPairSync, type JsonWebKey } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider from 'oidc-provider';
import { topology } from '#shared/topology.ts';

export const OIDC_CLIENT_ID = 'crumbs-test-client';
export const OIDC_KEY_ID = 'crumbs-test-key';

/** The accounts: login name → the workspaces its tokens grant (`crumbs:workspaces`). */
export const OIDC_ACCOUNTS: Readonly<Record<string, readonly string[]>> = {
  alice: ['sign-in-a'],
  bob: ['sign-in-b', 'sign-in-shared'],
};

export interface OidcIssuer {
  readonly issuer: string;
  /** The private signing key (JWK): tests sign tokens of their own with it. */
  readonly privateJwk: JsonWebKey;
  /** Makes the provider, with the client's redirect URIs (the CLI's loopback callback, the dashboard). */
  configure(redirectUris: readonly string[]): void;
  stop(): Promise<void>;
}

export interface OidcIssuerOptions {
  /** The claim the accounts' workspaces go in (`cognito:groups` to play a Cognito user pool). */
  readonly workspacesClaim?: string;
  /** Login name → workspaces. @default OIDC_ACCOUNTS */
  readonly accounts?: Readonly<Record<string, readonly string[]>>;
}

export async function startOidcIssuer(options: OidcIssuerOptions = {}): Promise<OidcIssuer> {
  const claim = options.workspacesClaim ?? 'crumbs:workspaces';
  const accounts = options.accounts ?? OIDC_ACCOUNTS;
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const privateJwk = { ...privateKey.export({ format: 'jwk' }), kid: OIDC_KEY_ID, alg: 'RS256', use: 'sig' };
  let callback: ((req: IncomingMessage, res: ServerResponse) => void) | undefined;
  const server: Server = createServer((req, res) => {
    if (callback) callback(req, res);
    else res.writeHead(503).end('the issuer is not configured yet');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const configure = (redirectUris: readonly string[]) => {
    const provider = new Provider(issuer, {
      clients: [
        {
          client_id: OIDC_CLIENT_ID,
          token_endpoint_auth_method: 'none',
          grant_types: ['authorization_code', 'refresh_token'],
          response_types: ['code'],
          redirect_uris: [...redirectUris],
          post_logout_redirect_uris: [...redirectUris],
        },
      ],
      jwks: { keys: [privateJwk] },
      cookies: { keys: ['crumbs-test-cookie-key'] },
      async findAccount(_ctx, id) {
        return {
          accountId: id,
          claims: async () => ({
            sub: id,
            email: `${id}@example.test`,
            [claim]: [...(accounts[id] ?? [])],
          }),
        };
      },
      claims: { openid: ['sub', claim], email: ['email'], profile: [] },
      // The workspaces claim rides in the ID token (what the API is sent when access tokens are opaque).
      conformIdTokenClaims: false,
      features: { devInteractions: { enabled: true }, revocation: { enabled: true } },
    });
    callback = provider.callback();
  };
  configure([topology.signIn.cliCallbackUrl]);
  return {
    issuer,
    privateJwk,
    configure,
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** An RS256 JWT signed with the issuer's key (for token shapes the provider itself does not issue). */
export function signWith(privateJwk: JsonWebKey, claims: Record<string, unknown>): string {
  const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const body = `${b64({ alg: 'RS256', typ: 'JWT', kid: OIDC_KEY_ID })}.${b64(claims)}`;
  const key = createPrivateKey({ key: privateJwk, format: 'jwk' });
  return `${body}.${createSign('RSA-SHA256').update(body).sign(key).toString('base64url')}`;
}

/**
 * Signs in at the issuer as a person would in its development login form, following the redirects with the
 * cookies they set, from the authorization URL to the redirect URI's address (which it does not fetch): the login
 * page, then the consent page. Returns the URL the browser would be sent to, with `code` and `state`.
 */
export async function signInAt(authorizationUrl: string, login: string): Promise<URL> {
  const cookies = new Map<string, string>();
  const origin = new URL(authorizationUrl).origin;
  let url = authorizationUrl;
  let form: Record<string, string> | undefined;
  for (let step = 0; step < 20; step++) {
    const response = await fetch(url, {
      method: form ? 'POST' : 'GET',
      redirect: 'manual',
      headers: {
        cookie: [...cookies].map(([k, v]) => `${k}=${v}`).join('; '),
        ...(form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
      },
      ...(form ? { body: new URLSearchParams(form).toString() } : {}),
    });
    for (const header of response.headers.getSetCookie()) {
      const [pair] = header.split(';');
      const at = pair?.indexOf('=') ?? -1;
      if (pair && at > 0) cookies.set(pair.slice(0, at), pair.slice(at + 1));
    }
    const location = response.headers.get('location');
    if (response.status >= 300 && response.status < 400 && location) {
      const next = new URL(location, url);
      if (next.origin !== origin) return next;
      url = next.toString();
      form = undefined;
      continue;
    }
    const html = await response.text();
    const action = /<form[^>]*action="([^"]+)"/.exec(html)?.[1];
    if (response.status !== 200 || action === undefined) {
      throw new Error(`the issuer answered ${response.status} at ${url}: ${html.slice(0, 300)}`);
    }
    url = new URL(action.replace(/&amp;/g, '&'), url).toString();
    form = html.includes('name="login"')
      ? { prompt: 'login', login, password: 'any' }
      : { prompt: 'consent' };
  }
  throw new Error('the sign-in did not come back to the client');
}
