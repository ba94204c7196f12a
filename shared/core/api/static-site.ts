/**
 * Serves the dashboard's built files (index.html, app.js, app.css) under `/ui`. The files are read once (per cold
 * start) from a folder; the page is public, and every data call it makes carries the user's token to the API.
 *
 * Headers: a Content-Security-Policy that allows only this origin (the app talks to the API on the same origin and
 * loads nothing else) and, for connections, the delta channel's realtime endpoint and the sign-in issuer's token
 * and revocation endpoints, no caching of index.html (it names the current build), and long caching of the assets,
 * whose URLs carry the build's hash.
 *
 * One file is not built but answered: `sign-in.json`, how people sign in here (`sign-in.ts`), which the page and
 * `crumbs login` read.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { extname, join } from 'node:path';
import type { HttpResult } from './http.ts';
import { SIGN_IN_PATH, type SignInConfig, signInOrigins } from './sign-in.ts';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.map': 'application/json',
};

/** The page's headers; `connect` adds origins the app may connect to besides its own (the delta channel's). */
function securityHeaders(connect: readonly string[]): Record<string, string> {
  return {
    'content-security-policy': `default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src ${["'self'", ...connect].join(' ')}; frame-ancestors 'none'; base-uri 'none'; form-action 'self'`,
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
  };
}

export const UI_PREFIX = '/ui';

export interface StaticSite {
  /** `signIn`: how people sign in here (`sign-in.json`, and the token endpoints the page may call). */
  serve(method: string, path: string, signIn?: SignInConfig): HttpResult;
}

const NO_SIGN_IN: SignInConfig = { available: false, detail: 'this server has no sign-in settings' };

/**
 * The files of `dir` (flat: the build writes no subfolders). A missing folder serves a clear 503 page.
 * `options.realtimeUrl`: the delta channel's WebSocket URL, whose origin the page may connect to (the Chat view
 * streams answers from it).
 */
export function staticSite(dir: string, options: { realtimeUrl?: string | undefined } = {}): StaticSite {
  const realtime = options.realtimeUrl !== undefined ? [new URL(options.realtimeUrl).origin] : [];
  const files = new Map<string, { body: string; type: string }>();
  if (existsSync(dir)) {
    for (const name of readdirSync(dir)) {
      const type = TYPES[extname(name)];
      if (type) files.set(name, { body: readFileSync(join(dir, name), 'utf8'), type });
    }
  }
  return {
    serve(method, path, signIn = NO_SIGN_IN) {
      if (method !== 'GET' && method !== 'HEAD') {
        return text(405, 'method not allowed', { allow: 'GET, HEAD' });
      }
      // `/ui` → `/ui/`, so the page's relative asset URLs resolve under /ui/. A relative Location, so the
      // redirect stays under the stage a REST API's URLs start with (`/prod/ui` → `/prod/ui/`).
      if (path === UI_PREFIX) return { statusCode: 308, headers: { location: 'ui/' }, body: '' };
      const headers = securityHeaders([...realtime, ...signInOrigins(signIn)]);
      if (path === SIGN_IN_PATH) {
        return {
          statusCode: 200,
          // Short: a redeploy that changes the client or the domain reaches open pages and CLIs soon.
          headers: { 'content-type': 'application/json', 'cache-control': 'max-age=60', ...headers },
          body: method === 'HEAD' ? '' : JSON.stringify(signIn),
        };
      }
      const name = path === `${UI_PREFIX}/` ? 'index.html' : path.slice(UI_PREFIX.length + 1);
      const file = files.get(name);
      if (!file) {
        return files.size === 0
          ? text(503, `the dashboard is not built (no files in ${dir})`)
          : text(404, `no file ${name}`);
      }
      return {
        statusCode: 200,
        headers: {
          'content-type': file.type,
          'cache-control': name === 'index.html' ? 'no-cache' : 'public, max-age=31536000, immutable',
          ...headers,
        },
        body: method === 'HEAD' ? '' : file.body,
      };
    },
  };
}

function text(statusCode: number, body: string, headers: Record<string, string> = {}): HttpResult {
  return { statusCode, headers: { 'content-type': 'text/plain; charset=utf-8', ...headers }, body };
}
