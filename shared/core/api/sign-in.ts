/**
 * How people sign in, as the dashboard and `crumbs login` read it (`GET /ui/sign-in.json`, served by the ui
 * function): OAuth 2.0 authorization code with PKCE (RFC 7636) against the stack's issuer, with its public client.
 *
 * - The stack's own user pool (no `crumbs:jwtIssuer`): the CDK app sets the issuer, the app client and the managed
 *   login domain's endpoints (`infra/constructs/user-pool.ts`).
 * - An operator's issuer with `crumbs:signInClientId`, or `crumbs dev --oidc-issuer`: the endpoints come from the
 *   issuer's discovery document (OpenID Connect Discovery 1.0), read once and kept.
 * - Anything else: `available: false` and why, so the dashboard shows its token form and `crumbs login` says what to
 *   do instead.
 *
 * The config is public (a login page's settings): the issuer, a public client id and endpoints, nothing secret.
 */
import { parseEnv, SignInEnvSchema } from '#shared/config.ts';
import * as z from '#shared/domain/zod.ts';
import { ENV, topology } from '#shared/topology.ts';

const httpUrl = z.url({ protocol: /^https?$/, error: 'expected an http(s) URL' });

export const SignInEndpointsSchema = z.object({
  authorization_endpoint: httpUrl,
  token_endpoint: httpUrl,
  /** RFC 7009: where `crumbs logout` revokes its refresh token. */
  revocation_endpoint: z.optional(httpUrl),
  /** Where a browser ends the issuer's own session (Cognito's `/logout`, OIDC's `end_session_endpoint`). */
  logout_endpoint: z.optional(httpUrl),
});
export type SignInEndpoints = z.infer<typeof SignInEndpointsSchema>;

export const AvailableSignInSchema = z.extend(SignInEndpointsSchema, {
  available: z.literal(true),
  issuer: httpUrl,
  client_id: z.string().check(z.minLength(1)),
  /**
   * How the logout endpoint takes its return address: Cognito's `logout_uri`, or OpenID Connect RP-Initiated
   * Logout's `post_logout_redirect_uri`.
   */
  logout_style: z.enum(['cognito', 'oidc']),
  scopes: z.array(z.string()),
  /** Extra authorization request parameters (`prompt=consent`, which OIDC asks for with `offline_access`). */
  authorization_params: z.record(z.string(), z.string()),
  /** The loopback callback `crumbs login` listens on (registered with the client). */
  cli_redirect_uri: httpUrl,
  /** The claim listing a person's workspaces (the dashboard offers those). */
  workspaces_claim: z.string(),
});
export type AvailableSignIn = z.infer<typeof AvailableSignInSchema>;

export const SignInConfigSchema = z.union([
  AvailableSignInSchema,
  z.object({ available: z.literal(false), detail: z.string() }),
]);
export type SignInConfig = z.infer<typeof SignInConfigSchema>;

/** Where the dashboard and `crumbs login` read the config: a file of the dashboard's public routes. */
export const SIGN_IN_PATH = '/ui/sign-in.json';

const COGNITO_ISSUER_HOST = /^cognito-idp\.[a-z0-9-]+\.amazonaws\.com$/;
/** A discovery document larger than this is not one. */
const MAX_DISCOVERY_BYTES = 256 * 1024;
const DISCOVERY_TIMEOUT_MS = 5000;
/** After a failed discovery, the next request tries again after this long (a flapping issuer is not hammered). */
const RETRY_AFTER_MS = 30_000;

export type FetchLike = (input: string, init: RequestInit) => Promise<Response>;

/** Reads the sign-in config from the environment, resolving the issuer's discovery once (and again after failures). */
export function signInSettings(
  env: NodeJS.ProcessEnv = process.env,
  fetchImpl: FetchLike = (input, init) => globalThis.fetch(input, init),
  now: () => number = Date.now,
): () => Promise<SignInConfig> {
  let kept: SignInConfig | undefined;
  let failedAt = Number.NEGATIVE_INFINITY;
  let lastFailure: SignInConfig | undefined;
  return async () => {
    if (kept) return kept;
    if (lastFailure && now() - failedAt < RETRY_AFTER_MS) return lastFailure;
    const result = await resolveSignIn(env, fetchImpl);
    if (result.resolved) kept = result.config;
    else {
      failedAt = now();
      lastFailure = result.config;
    }
    return result.config;
  };
}

async function resolveSignIn(
  env: NodeJS.ProcessEnv,
  fetchImpl: FetchLike,
): Promise<{ config: SignInConfig; resolved: boolean }> {
  let parsed: ReturnType<typeof parseEnv<typeof SignInEnvSchema>>;
  try {
    parsed = parseEnv(SignInEnvSchema, env);
  } catch (error) {
    return unavailable(`the sign-in settings are not usable: ${(error as Error).message}`);
  }
  const issuer = parsed[ENV.jwtIssuer];
  const clientId = parsed[ENV.signInClientId];
  if (issuer === undefined) {
    return unavailable(
      'this endpoint signs nobody in: use the token `crumbs dev` printed, or start `crumbs dev --oidc-issuer URL ' +
        '--oidc-client-id ID` to sign in with an OpenID Connect provider',
    );
  }
  if (clientId === undefined) {
    return unavailable(
      `tokens come from ${issuer}, and this stack names no client to sign in with (CDK context crumbs:signInClientId): ` +
        `get a token from your issuer and pass it as --token or ${ENV.localToken}`,
    );
  }
  const cognito = COGNITO_ISSUER_HOST.test(new URL(issuer).host);
  let endpoints: SignInEndpoints;
  let scopesSupported: readonly string[] | undefined;
  const given = parsed[ENV.signInEndpoints];
  if (given !== undefined) {
    const checked = SignInEndpointsSchema.safeParse(given);
    if (!checked.success) {
      return {
        config: unavailableConfig(`${ENV.signInEndpoints}: ${checked.error.issues[0]?.message}`),
        resolved: true,
      };
    }
    endpoints = checked.data;
  } else {
    const discovered = await discover(issuer, fetchImpl);
    if (typeof discovered === 'string') return { config: unavailableConfig(discovered), resolved: false };
    endpoints = discovered.endpoints;
    scopesSupported = discovered.scopesSupported;
  }
  if (cognito) {
    // Cognito's managed login domain serves /logout and /oauth2/revoke beside /oauth2/authorize.
    const domain = new URL(endpoints.authorization_endpoint).origin;
    endpoints = {
      revocation_endpoint: `${domain}/oauth2/revoke`,
      logout_endpoint: `${domain}/logout`,
      ...endpoints,
    };
  }
  // A refresh token: Cognito issues one with every code; OpenID Connect asks for `offline_access` (with consent).
  const offline = !cognito && (scopesSupported?.includes('offline_access') ?? false);
  return {
    config: {
      available: true,
      issuer,
      client_id: clientId,
      ...endpoints,
      logout_style: cognito ? 'cognito' : 'oidc',
      scopes: offline ? [...topology.signIn.scopes, 'offline_access'] : [...topology.signIn.scopes],
      authorization_params: offline ? { prompt: 'consent' } : {},
      cli_redirect_uri: topology.signIn.cliCallbackUrl,
      workspaces_claim: parsed[ENV.workspacesClaim],
    },
    resolved: true,
  };
}

const DiscoverySchema = z.object({
  issuer: z.string(),
  authorization_endpoint: httpUrl,
  token_endpoint: httpUrl,
  revocation_endpoint: z.optional(httpUrl),
  end_session_endpoint: z.optional(httpUrl),
  scopes_supported: z.optional(z.array(z.string())),
});

/** The issuer's discovery document's endpoints, or why it could not be read. */
async function discover(
  issuer: string,
  fetchImpl: FetchLike,
): Promise<{ endpoints: SignInEndpoints; scopesSupported?: readonly string[] } | string> {
  const url = `${issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`;
  let text: string;
  try {
    const response = await fetchImpl(url, {
      headers: { accept: 'application/json' },
      signal: AbortSignal.timeout(DISCOVERY_TIMEOUT_MS),
      redirect: 'error',
    });
    if (!response.ok) return `the issuer's discovery document ${url} answered ${response.status}`;
    text = await response.text();
  } catch (error) {
    return `cannot read the issuer's discovery document ${url}: ${(error as Error).message}`;
  }
  if (text.length > MAX_DISCOVERY_BYTES) return `the issuer's discovery document ${url} is too large`;
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return `the issuer's discovery document ${url} is not JSON`;
  }
  const parsed = DiscoverySchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return `the issuer's discovery document ${url} has no usable ${issue?.path.join('.') || 'endpoints'}`;
  }
  // OpenID Connect Discovery §4.3: the document must name the issuer it was read for.
  if (parsed.data.issuer.replace(/\/+$/, '') !== issuer.replace(/\/+$/, '')) {
    return `the discovery document ${url} names the issuer ${parsed.data.issuer}, not ${issuer}`;
  }
  const d = parsed.data;
  return {
    endpoints: {
      authorization_endpoint: d.authorization_endpoint,
      token_endpoint: d.token_endpoint,
      ...(d.revocation_endpoint !== undefined ? { revocation_endpoint: d.revocation_endpoint } : {}),
      ...(d.end_session_endpoint !== undefined ? { logout_endpoint: d.end_session_endpoint } : {}),
    },
    ...(d.scopes_supported !== undefined ? { scopesSupported: d.scopes_supported } : {}),
  };
}

function unavailableConfig(detail: string): SignInConfig {
  return { available: false, detail };
}

function unavailable(detail: string): { config: SignInConfig; resolved: boolean } {
  return { config: unavailableConfig(detail), resolved: true };
}

/** Origins the dashboard's page must be allowed to call (`connect-src`): the token and revocation endpoints. */
export function signInOrigins(config: SignInConfig): string[] {
  if (!config.available) return [];
  const origins = new Set<string>();
  for (const url of [config.token_endpoint, config.revocation_endpoint]) {
    if (url !== undefined) origins.add(new URL(url).origin);
  }
  return [...origins];
}
