/**
 * A `fetch` for calls to addresses a definition names (the `http` tool, MCP servers, APIs, A2A partners): every
 * request, and every redirect hop, passes the network guard (`network-guard.ts`) before it goes out.
 *
 * - Only http and https.
 * - The host must be on `allowedHosts` when a list is given (`*` any, `*.example.com` subdomains).
 * - Private, loopback, link-local (the instance metadata address included), CGNAT and reserved addresses are
 *   refused unless `allowPrivate` says otherwise (see the guard for who may say so).
 * - Redirects are followed by hand, at most `maxRedirects`, each hop checked the same way; a 303 (and a 301/302
 *   answering a POST) continues as a GET without a body, as browsers and undici do.
 *
 * SDK clients (MCP, A2A) get this as their `fetch`, so no request of theirs bypasses the guard.
 */
import {
  type AddressLookup,
  assertHostAllowed,
  assertPublicUrl,
  NetworkGuardError,
} from './network-guard.ts';

export interface GuardedFetchOptions {
  /**
   * Whether private addresses may be reached. A function is asked at each request: handlers pass one that reads
   * `privateNetworkAllowed()` at the first call, not at import (the local stack imports before it sets the switch).
   */
  readonly allowPrivate: boolean | (() => boolean);
  /** Hosts a call may reach; when absent, every public host. */
  readonly allowedHosts?: readonly string[];
  /** Where the limits come from, for error messages (`{ allowedHosts: 'transport.api.allowed_hosts' }`). */
  readonly fields?: { readonly allowedHosts?: string; readonly maxRedirects?: string };
  /** @default 3 */
  readonly maxRedirects?: number;
  readonly lookup?: AddressLookup;
  readonly fetch?: typeof fetch;
}

/** A fetch that checks every request and redirect hop (see the header). */
export function guardedFetch(options: GuardedFetchOptions): typeof fetch {
  const doFetch = options.fetch ?? ((input, init) => fetch(input, init));
  const maxRedirects = options.maxRedirects ?? 3;
  const allowPrivate =
    typeof options.allowPrivate === 'function' ? options.allowPrivate : () => options.allowPrivate as boolean;
  const check = async (url: URL): Promise<void> => {
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new NetworkGuardError(`only http and https URLs may be called, not ${url.protocol}`);
    }
    if (options.allowedHosts !== undefined) {
      assertHostAllowed(url, options.allowedHosts, options.fields?.allowedHosts);
    }
    await assertPublicUrl(url, {
      allowPrivate: allowPrivate(),
      ...(options.lookup ? { lookup: options.lookup } : {}),
    });
  };
  return async (input, init) => {
    let url = new URL(input instanceof Request ? input.url : String(input));
    let requestInit: RequestInit | undefined =
      input instanceof Request ? { ...cloneRequestInit(input), ...init } : init;
    for (let hop = 0; ; hop++) {
      await check(url);
      const response = await doFetch(url, { ...requestInit, redirect: 'manual' });
      const location = response.headers.get('location');
      if (
        response.status < 300 ||
        response.status >= 400 ||
        location === null ||
        init?.redirect === 'manual'
      ) {
        return response;
      }
      await response.body?.cancel();
      if (init?.redirect === 'error' || hop >= maxRedirects) {
        const field = options.fields?.maxRedirects;
        throw new NetworkGuardError(`more than ${maxRedirects} redirects${field ? ` (${field})` : ''}`);
      }
      url = new URL(location, url);
      const method = requestInit?.method?.toUpperCase();
      if (
        response.status === 303 ||
        ((response.status === 301 || response.status === 302) && method === 'POST')
      ) {
        requestInit = { ...requestInit, method: 'GET', body: null };
      }
    }
  };
}

function cloneRequestInit(request: Request): RequestInit {
  return { method: request.method, headers: request.headers, body: request.body, signal: request.signal };
}
