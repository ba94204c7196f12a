/**
 * The one OpenID Connect issuer on loopback that every test uses: `oidc-provider` (a certified implementation), with
 * one public client (authorization code + PKCE, refresh tokens, no secret), its development login form (any
 * password; the login name picks the account), and signing keys generated here, so a test can also sign tokens of
 * any shape with the same JWKS — the two a Cognito user pool issues (`idToken`: `aud` is the app client,
 * `token_use: id`; `accessToken`: `client_id`, no `aud`, `token_use: access`), or any claims, header and key
 * (`sign`). `rotate()` adds a signing key (the JWKS then lists both), as an issuer rotating keys does; `requests`
 * lists the paths it was asked for.
 *
 * The issuer must answer before the local stack starts (it reads the discovery document and the keys), and the
 * client's redirect URIs name the stack's API (its dashboard): so the provider starts with the CLI's callback only,
 * and `configure` makes it again (same issuer, same keys) once the API's address is known.
 */
import {
  createPrivateKey,
  createSign,
  generateKeyPairSync,
  type JsonWebKey,
  type KeyObject,
} from 'node:crypto';
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
  /** The first private signing key (JWK, kid `OIDC_KEY_ID`): tests sign tokens of their own with it (`signWith`). */
  readonly privateJwk: JsonWebKey;
  /** Paths the issuer was asked for, in order. */
  readonly requests: string[];
  /** Makes the provider, with the client's redirect URIs (the CLI's loopback callback, the dashboard). */
  configure(redirectUris: readonly string[]): void;
  /**
   * An RS256 JWT with these claims over the defaults (`iss`, `sub: ann`, `iat`, `exp` in 5 minutes), signed with the
   * newest key; `kid`, `alg` and `key` replace the header's and the key (forged tokens).
   */
  sign(claims: Record<string, unknown>, options?: { kid?: string; key?: KeyObject; alg?: string }): string;
  /** A Cognito-shaped ID token: `aud` is the client. */
  idToken(clientId: string, claims?: Record<string, unknown>): string;
  /** A Cognito-shaped access token: `client_id`, no `aud`. */
  accessToken(clientId: string, claims?: Record<string, unknown>): string;
  /** Signs with a new key from now on; the JWKS lists it too. */
  rotate(): void;
  stop(): Promise<void>;
}

export interface OidcIssuerOptions {
  /** The claim the accounts' workspaces go in (`cognito:groups` to play a Cognito user pool). */
  readonly workspacesClaim?: string;
  /** Login name → workspaces. @default OIDC_ACCOUNTS */
  readonly accounts?: Readonly<Record<string, readonly string[]>>;
  /** The `issuer` its discovery document names, when a test needs one that is not its own. */
  readonly discoveryIssuer?: string;
}

interface SigningKey {
  readonly kid: string;
  readonly privateKey: KeyObject;
  readonly privateJwk: JsonWebKey;
}

function newKey(kid: string): SigningKey {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return {
    kid,
    privateKey,
    privateJwk: { ...privateKey.export({ format: 'jwk' }), kid, alg: 'RS256', use: 'sig' },
  };
}

const b64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

export async function startOidcIssuer(options: OidcIssuerOptions = {}): Promise<OidcIssuer> {
  const claim = options.workspacesClaim ?? 'crumbs:workspaces';
  const accounts = options.accounts ?? OIDC_ACCOUNTS;
  const keys: SigningKey[] = [newKey(OIDC_KEY_ID)];
  const requests: string[] = [];
  let redirects: readonly string[] = [topology.signIn.cliCallbackUrl];
  let callback: ((req: IncomingMessage, res: ServerResponse) => void) | undefined;
  const server: Server = createServer((req, res) => {
    requests.push(req.url ?? '');
    if (options.discoveryIssuer !== undefined && req.url === '/.well-known/openid-configuration') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ issuer: options.discoveryIssuer, jwks_uri: `${issuer}/jwks.json` }));
    } else if (callback) callback(req, res);
    else res.writeHead(503).end('the issuer is not configured yet');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const configure = (redirectUris: readonly string[]) => {
    redirects = redirectUris;
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
      jwks: { keys: keys.map((k) => k.privateJwk) },
      routes: { jwks: '/jwks.json' },
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
  configure(redirects);
  const sign: OidcIssuer['sign'] = (claims, opts = {}) => {
    const current = keys[keys.length - 1] as SigningKey;
    const now = Math.floor(Date.now() / 1000);
    const header = { alg: opts.alg ?? 'RS256', typ: 'JWT', kid: opts.kid ?? current.kid };
    const body = `${b64url(header)}.${b64url({ iss: issuer, sub: 'ann', iat: now, exp: now + 300, ...claims })}`;
    const signature = createSign('RSA-SHA256')
      .update(body)
      .sign(opts.key ?? current.privateKey)
      .toString('base64url');
    return `${body}.${signature}`;
  };
  return {
    issuer,
    privateJwk: (keys[0] as SigningKey).privateJwk,
    requests,
    configure,
    sign,
    idToken: (clientId, claims = {}) =>
      sign({
        aud: clientId,
        token_use: 'id',
        'cognito:username': 'ann',
        email: 'ann@example.com',
        ...claims,
      }),
    accessToken: (clientId, claims = {}) =>
      sign({ client_id: clientId, token_use: 'access', scope: 'openid email', username: 'ann', ...claims }),
    rotate: () => {
      keys.push(newKey(`${OIDC_KEY_ID}-${keys.length + 1}`));
      configure(redirects);
    },
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
