/**
 * `crumbs login` and `crumbs logout`: signing in to an endpoint as a person, with the sign-in settings it publishes
 * (`/ui/sign-in.json`): OAuth 2.0 authorization code + PKCE for a native app (RFC 8252) — the browser opens the
 * issuer's sign-in page, the issuer sends the code to the fixed loopback callback this command listens on
 * (`cli_redirect_uri`, registered with the client), and the code is exchanged for tokens, kept in the user's config
 * directory with mode 0600 (`cli/credentials.ts`). Every later command sends the session's token, refreshed as it
 * expires. `crumbs logout` revokes the refresh token and forgets the session.
 *
 * The browser is opened through `CliIo.openUrl` (tests drive the sign-in page themselves); the URL is always printed
 * too, for a machine with no browser.
 */

import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import {
  type AvailableSignIn,
  authorizationUrl,
  exchangeCode,
  pkcePair,
  randomToken,
  revokeToken,
  SignInError,
  type TokenSet,
  tokenClaims,
} from '#shared/client/sign-in.ts';
import { callerFromClaims } from '#shared/core/api/http.ts';
import { SIGN_IN_PATH, SignInConfigSchema } from '#shared/core/api/sign-in.ts';
import { ENV } from '#shared/topology.ts';
import { type CliIo, type Command, InputError, noPositionals, optInt, printJson } from '../args.ts';
import { CredentialStore, endpointKey } from '../credentials.ts';

const DEFAULT_TIMEOUT_SECONDS = 300;

export const loginCommand: Command = {
  name: 'login',
  summary:
    'sign in to the endpoint in your browser (authorization code + PKCE); later commands use the session',
  usage: `Usage: crumbs login [--no-browser] [--timeout SECONDS]

Signs you in to the endpoint's issuer (the stack's own user pool, or the OIDC provider it names): opens its
sign-in page in your browser and waits for it to send the sign-in back to this machine (a loopback callback,
http://localhost:4790/callback for a stack's own user pool). The tokens are kept in your config directory
(credentials.json, readable by you only) and refreshed when they expire; --token and ${ENV.localToken} still win.
\`crumbs dev\` signs nobody in unless started with --oidc-issuer: use the token it prints.

Flags:
  --no-browser        only print the sign-in URL (open it on this machine: the callback is its loopback)
  --timeout SECONDS   how long to wait for the sign-in (default ${DEFAULT_TIMEOUT_SECONDS})`,
  options: { 'no-browser': { type: 'boolean' }, timeout: { type: 'string' } },
  async run(ctx) {
    noPositionals(ctx);
    const timeoutMs =
      (optInt(ctx.values, 'timeout', { min: 1, max: 3600 }) ?? DEFAULT_TIMEOUT_SECONDS) * 1000;
    const endpoint = endpointKey(ctx.global.endpoint);
    const config = await readSignIn(endpoint);
    const tokens = await signIn(config, ctx.io, {
      timeoutMs,
      openBrowser: ctx.values['no-browser'] !== true,
    });
    const who = describeTokens(config, tokens);
    const store = CredentialStore.of(ctx.io.env);
    await store.put(endpoint, {
      sign_in: config,
      tokens,
      user: who.user,
      signed_in_at: new Date().toISOString(),
    });
    if (ctx.global.json) {
      printJson(ctx.io, {
        endpoint,
        user: who.user,
        workspaces: who.workspaces,
        expires_at: new Date(tokens.expires_at).toISOString(),
      });
    } else {
      ctx.io.stdout(
        `Signed in to ${endpoint} as ${who.user} (workspaces: ${who.workspaces.length > 0 ? who.workspaces.join(', ') : 'none yet: ask an administrator for `crumbs users grant`'}).\n` +
          `The session is kept in ${store.path} and refreshed as it expires.\n`,
      );
    }
    return 0;
  },
};

export const logoutCommand: Command = {
  name: 'logout',
  summary: 'sign out of the endpoint: revoke the session’s refresh token and forget it',
  usage: `Usage: crumbs logout

Revokes the refresh token of your \`crumbs login\` session for the endpoint at its issuer and removes the session
from your config directory. An access token already issued stays valid at the API until it expires (for a stack's
own user pool, at most crumbs:tokenValidityMinutes, 15 minutes by default).`,
  options: {},
  async run(ctx) {
    noPositionals(ctx);
    const endpoint = endpointKey(ctx.global.endpoint);
    const store = CredentialStore.of(ctx.io.env);
    const session = await store.get(endpoint);
    if (session === undefined) {
      ctx.io.stdout(`Not signed in to ${endpoint}.\n`);
      return 0;
    }
    let revoked = false;
    let warning: string | undefined;
    if (session.tokens.refresh_token !== undefined) {
      try {
        revoked = await revokeToken(session.sign_in, session.tokens.refresh_token);
        if (!revoked)
          warning = 'the issuer has no revocation endpoint: the refresh token lives until it expires';
      } catch (error) {
        warning = `could not revoke the refresh token (${(error as Error).message}); it lives until it expires`;
      }
    }
    await store.delete(endpoint);
    if (warning !== undefined) ctx.io.stderr(`crumbs logout: ${warning}\n`);
    const until = new Date(session.tokens.expires_at);
    ctx.io.stdout(
      `Signed out of ${endpoint} (${session.user})${revoked ? ': the refresh token is revoked' : ''}. ` +
        `An access token already issued stays valid until it expires (${until.toISOString()}).\n`,
    );
    return 0;
  },
};

/** The endpoint's sign-in settings, or an InputError saying why there is no sign-in there. */
export async function readSignIn(endpoint: string): Promise<AvailableSignIn> {
  const url = `${endpointKey(endpoint)}${SIGN_IN_PATH}`;
  let response: Response;
  try {
    response = await fetch(url, {
      headers: { accept: 'application/json' },
      signal: AbortSignal.timeout(15_000),
    });
  } catch (error) {
    throw new InputError(`cannot reach ${url}: ${(error as Error).message}`, { cause: error });
  }
  if (!response.ok) {
    throw new InputError(
      `${url} answered ${response.status}: ${endpoint} publishes no sign-in settings (is it a crumbs API of this version?)`,
    );
  }
  const parsed = SignInConfigSchema.safeParse(await response.json().catch(() => undefined));
  if (!parsed.success) throw new InputError(`${url} answered something that is not sign-in settings`);
  if (!parsed.data.available) throw new InputError(`${endpoint} has no sign-in: ${parsed.data.detail}`);
  return parsed.data;
}

/** Runs the browser sign-in: listens on the loopback callback, opens the page, exchanges the code. */
export async function signIn(
  config: AvailableSignIn,
  io: CliIo,
  options: { timeoutMs: number; openBrowser: boolean },
): Promise<TokenSet> {
  const { verifier, challenge } = await pkcePair();
  const state = randomToken();
  const redirectUri = config.cli_redirect_uri;
  const callback = await listenForCode(new URL(redirectUri), state, options.timeoutMs);
  try {
    const url = authorizationUrl(config, { redirectUri, state, challenge });
    io.stderr(
      `${options.openBrowser ? 'Opening your browser to sign in. If it does not open, visit' : 'Sign in at'}:\n  ${url}\n`,
    );
    if (options.openBrowser) await (io.openUrl ?? openInBrowser)(url);
    const code = await callback.code;
    try {
      return await exchangeCode(config, { code, verifier, redirectUri });
    } catch (error) {
      if (error instanceof SignInError) throw new InputError(error.message, { cause: error });
      throw new InputError(
        `cannot exchange the sign-in code at ${config.token_endpoint}: ${(error as Error).message}`,
        {
          cause: error,
        },
      );
    }
  } finally {
    await callback.close();
  }
}

const DONE_PAGE = `<!doctype html><meta charset="utf-8"><title>crumbs</title>
<p>Signed in to crumbs. You can close this tab and go back to the terminal.</p>`;

/**
 * Listens on the redirect URI's loopback port (both 127.0.0.1 and ::1: `localhost` is either, depending on the
 * browser) for the one redirect that carries our `state`; any other request is answered and ignored.
 */
async function listenForCode(
  redirect: URL,
  state: string,
  timeoutMs: number,
): Promise<{ code: Promise<string>; close: () => Promise<void> }> {
  let settle: { resolve: (code: string) => void; reject: (error: Error) => void } | undefined;
  const code = new Promise<string>((resolve, reject) => {
    settle = { resolve, reject };
  });
  /** Answers one request to the callback; settles the sign-in when it is ours. */
  const handle = (url: URL): { status: number; body: string; html?: boolean } => {
    if (url.pathname !== redirect.pathname) return { status: 404, body: 'not the crumbs sign-in callback' };
    if (url.searchParams.get('state') !== state) {
      return {
        status: 400,
        body: 'this sign-in was not started by the waiting `crumbs login` (state does not match)',
      };
    }
    const error = url.searchParams.get('error');
    if (error !== null) {
      const description = url.searchParams.get('error_description');
      const why = `${error}${description ? `: ${description}` : ''}`;
      settle?.reject(new InputError(`the issuer ended the sign-in: ${why}`));
      return { status: 400, body: `sign-in failed: ${why}` };
    }
    const given = url.searchParams.get('code');
    if (given === null || given === '') return { status: 400, body: 'the callback carries no code' };
    settle?.resolve(given);
    return { status: 200, body: DONE_PAGE, html: true };
  };
  const servers: Server[] = [];
  const port = Number(redirect.port || 80);
  for (const host of ['127.0.0.1', '::1']) {
    const server = createServer((req, res) => {
      const { status, body, html } = handle(new URL(req.url ?? '/', redirect.origin));
      res.writeHead(status, {
        'content-type': html ? 'text/html; charset=utf-8' : 'text/plain; charset=utf-8',
        'cache-control': 'no-store',
      });
      res.end(body);
    });
    try {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => resolve());
      });
      servers.push(server);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      // No IPv6 on this machine is fine; the port taken on the first address is not.
      if (host === '::1' && (code === 'EADDRNOTAVAIL' || code === 'EAFNOSUPPORT')) continue;
      for (const s of servers) s.close();
      throw new InputError(
        code === 'EADDRINUSE'
          ? `cannot listen for the sign-in on ${redirect.origin}: port ${port} is in use (another \`crumbs login\`?)`
          : `cannot listen for the sign-in on ${redirect.origin}: ${(error as Error).message}`,
      );
    }
  }
  const timer = setTimeout(
    () => settle?.reject(new InputError(`no sign-in arrived within ${Math.round(timeoutMs / 1000)} s`)),
    timeoutMs,
  );
  return {
    code,
    close: async () => {
      clearTimeout(timer);
      await Promise.all(
        servers.map(
          (s) =>
            new Promise<void>((resolve) => {
              s.close(() => resolve());
              s.closeAllConnections();
            }),
        ),
      );
    },
  };
}

/** Opens the URL in the desktop's browser; a machine without one just shows the printed URL. */
function openInBrowser(url: string): void {
  const [command, args] =
    process.platform === 'darwin'
      ? ['open', [url]]
      : process.platform === 'win32'
        ? ['rundll32', ['url.dll,FileProtocolHandler', url]]
        : ['xdg-open', [url]];
  try {
    const child = spawn(command, args, { stdio: 'ignore', detached: true });
    child.on('error', () => undefined);
    child.unref();
  } catch {
    // No opener: the URL is printed above.
  }
}

/** Whom the tokens name and the workspaces they grant (read, not verified: the API verifies). */
export function describeTokens(
  config: AvailableSignIn,
  tokens: TokenSet,
): { user: string; workspaces: string[] } {
  const id = tokens.id_token !== undefined ? tokenClaims(tokens.id_token) : undefined;
  const access = tokenClaims(tokens.access_token);
  const claims = { ...access, ...id };
  const user = [
    claims.email,
    claims['cognito:username'],
    claims.preferred_username,
    claims.username,
    claims.sub,
  ].find((v): v is string => typeof v === 'string' && v !== '');
  const caller = callerFromClaims(claims as Record<string, string>, config.workspaces_claim);
  return {
    user: user ?? 'unknown',
    workspaces: caller.workspaces === '*' ? ['*'] : [...caller.workspaces],
  };
}
