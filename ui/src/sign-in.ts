/**
 * The dashboard's sign-in: the same authorization code + PKCE flow as `crumbs login` (`shared/client/sign-in.ts`),
 * in the browser. "Sign in" sends the page to the issuer's sign-in page (the stack's managed login, or the OIDC
 * provider `crumbs dev --oidc-issuer` names) with this page (`/ui/`) as the redirect URI; it comes back with
 * `?code=…&state=…`, which is exchanged here for tokens, checked against the state and PKCE verifier kept in
 * sessionStorage for that one round trip. The tokens are kept in localStorage (as a pasted token is) and refreshed
 * when about to expire; the page's Content-Security-Policy lets it call only its own origin and the issuer's token
 * and revocation endpoints. "Log out" revokes the refresh token and ends the issuer's session too.
 */
import {
  type AvailableSignIn,
  authorizationUrl,
  bearerToken,
  exchangeCode,
  expiresSoon,
  logoutUrl,
  pkcePair,
  randomToken,
  refreshTokens,
  revokeToken,
  type SignInConfig,
  type TokenSet,
  tokenClaims,
} from '#shared/client/sign-in.ts';

const SIGNED_IN_KEY = 'crumbs.signin';
const PENDING_KEY = 'crumbs.signin.pending';

interface SignedIn {
  readonly config: AvailableSignIn;
  readonly tokens: TokenSet;
}

/** This page's address without query or fragment: the redirect URI registered for the dashboard. */
export function pageUrl(): string {
  return `${location.origin}${location.pathname.replace(/index\.html$/, '')}`;
}

/** How this stack signs people in (`/ui/sign-in.json`). */
export async function signInConfig(): Promise<SignInConfig> {
  try {
    const response = await fetch('./sign-in.json', { headers: { accept: 'application/json' } });
    if (!response.ok) return { available: false, detail: `sign-in.json answered ${response.status}` };
    return (await response.json()) as SignInConfig;
  } catch (error) {
    return { available: false, detail: (error as Error).message };
  }
}

/** Sends the page to the issuer's sign-in page. */
export async function startSignIn(config: AvailableSignIn): Promise<void> {
  const { verifier, challenge } = await pkcePair();
  const state = randomToken();
  sessionStorage.setItem(PENDING_KEY, JSON.stringify({ state, verifier }));
  location.assign(authorizationUrl(config, { redirectUri: pageUrl(), state, challenge }));
}

/** Whether the page was sent back by the issuer (a code or an error in the query). */
export function isSignInReturn(): boolean {
  const query = new URLSearchParams(location.search);
  return query.has('state') && (query.has('code') || query.has('error'));
}

/**
 * Finishes a sign-in the issuer sent back: checks the state, exchanges the code, keeps the tokens and clears the
 * query from the address bar. Throws with the reason when the issuer refused or the state is not ours.
 */
export async function completeSignIn(config: AvailableSignIn): Promise<void> {
  const query = new URLSearchParams(location.search);
  history.replaceState(null, '', `${location.pathname}#/live`);
  const pending = sessionStorage.getItem(PENDING_KEY);
  sessionStorage.removeItem(PENDING_KEY);
  const error = query.get('error');
  if (error !== null) throw new Error(`the sign-in was refused: ${query.get('error_description') ?? error}`);
  const expected = pending ? (JSON.parse(pending) as { state?: string; verifier?: string }) : {};
  if (!expected.state || expected.state !== query.get('state') || !expected.verifier) {
    throw new Error('this sign-in was not started from this page: sign in again');
  }
  const tokens = await exchangeCode(config, {
    code: query.get('code') ?? '',
    verifier: expected.verifier,
    redirectUri: pageUrl(),
  });
  save({ config, tokens });
}

/** The signed-in session, when there is one. */
export function signedIn(): SignedIn | undefined {
  try {
    const raw = localStorage.getItem(SIGNED_IN_KEY);
    return raw ? (JSON.parse(raw) as SignedIn) : undefined;
  } catch {
    return undefined;
  }
}

/** Drops the signed-in session here only (a pasted token replaces it). */
export function forgetSignIn(): void {
  localStorage.removeItem(SIGNED_IN_KEY);
}

function save(session: SignedIn): void {
  localStorage.setItem(SIGNED_IN_KEY, JSON.stringify(session));
}

let refreshing: Promise<string> | undefined;

/** The token to send the API, refreshed first when about to expire (one refresh for calls made meanwhile). */
export async function currentToken(): Promise<string> {
  const session = signedIn();
  if (!session) throw new Error('not signed in');
  if (!expiresSoon(session.tokens)) return bearerToken(session.tokens);
  const refresh = session.tokens.refresh_token;
  if (!refresh) throw new Error('your sign-in expired: sign in again');
  refreshing ??= refreshTokens(session.config, refresh)
    .then((tokens) => {
      save({ ...session, tokens });
      return bearerToken(tokens);
    })
    .finally(() => {
      refreshing = undefined;
    });
  return refreshing;
}

/** Whom the session names and which workspaces its token grants (read for the display; the API checks). */
export function identity(session: SignedIn): { user: string; workspaces: string[] | '*' } {
  const claims = {
    ...tokenClaims(session.tokens.access_token),
    ...(session.tokens.id_token ? tokenClaims(session.tokens.id_token) : {}),
  };
  const user =
    [claims.email, claims['cognito:username'], claims.preferred_username, claims.sub].find(
      (v): v is string => typeof v === 'string' && v !== '',
    ) ?? 'signed in';
  const raw = claims[session.config.workspaces_claim];
  const names = (Array.isArray(raw) ? raw : typeof raw === 'string' ? raw.split(/[\s,]+/) : []).filter(
    (n): n is string => typeof n === 'string' && /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$|^\*$/.test(n),
  );
  return { user, workspaces: names.includes('*') ? '*' : names };
}

/** Forgets the session, revokes its refresh token and ends the issuer's session (the page leaves for it). */
export async function signOut(): Promise<void> {
  const session = signedIn();
  localStorage.removeItem(SIGNED_IN_KEY);
  if (!session) return;
  if (session.tokens.refresh_token) {
    await revokeToken(session.config, session.tokens.refresh_token).catch(() => false);
  }
  const url = logoutUrl(session.config, pageUrl(), session.tokens.id_token);
  if (url) location.assign(url);
}
