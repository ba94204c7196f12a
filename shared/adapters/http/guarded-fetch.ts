/**
 * A `fetch` for calls to addresses a definition names (MCP servers, APIs, A2A partners): every request, and every
 * redirect hop, is checked before it goes out.
 *
 * - Only http and https.
 * - The host must be on the allow-list when one is given (`*` any, `*.example.com` subdomains).
 * - Private, loopback, link-local (the instance metadata address included), CGNAT and reserved addresses are
 *   refused unless the *stack* allows them (`allowPrivate`, from `CRUMBS_ALLOW_PRIVATE_NETWORK=1` /
 *   `crumbs dev --allow-private-network`) — never because a definition says so. Host names are resolved and
 *   every address checked, so `localhost` or a public name pointing inside is refused too.
 *
 * The address test is the http tool's (`#shared/tools/http.ts`) for now: the API/local-stack work is moving it
 * into a reusable guard, and this module will call that one instead.
 */
import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { NonRetriableError } from '#shared/domain/errors.ts';
import { isPrivateAddress } from '#shared/tools/http.ts';

export const ALLOW_PRIVATE_NETWORK_ENV = 'CRUMBS_ALLOW_PRIVATE_NETWORK';

export interface NetworkPolicy {
  /** The stack allows loopback and private addresses (local development and tests). */
  readonly allowPrivate: boolean;
}

/** The stack's policy, from its environment. */
export function networkPolicyFromEnv(env: NodeJS.ProcessEnv = process.env): NetworkPolicy {
  const value = env[ALLOW_PRIVATE_NETWORK_ENV];
  return { allowPrivate: value === '1' || value === 'true' };
}

export type Lookup = (host: string) => Promise<{ address: string; family: number }[]>;

export interface GuardOptions {
  /** Hosts a call may reach; absent: any public host. */
  readonly allowedHosts?: readonly string[];
  readonly maxRedirects?: number;
  readonly lookup?: Lookup;
  readonly fetch?: typeof fetch;
}

export class NetworkGuardError extends NonRetriableError {}

const defaultLookup: Lookup = (host) => dnsLookup(host, { all: true, verbatim: true });

function hostAllowed(host: string, allowed: readonly string[]): boolean {
  return allowed.some(
    (entry) => entry === '*' || entry === host || (entry.startsWith('*.') && host.endsWith(entry.slice(1))),
  );
}

/** Throws NetworkGuardError when `url` may not be called under `policy` and `options`. */
export async function checkUrl(url: URL, policy: NetworkPolicy, options: GuardOptions = {}): Promise<void> {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new NetworkGuardError(`only http and https URLs may be called, not ${url.protocol}`);
  }
  const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (
    options.allowedHosts !== undefined &&
    !hostAllowed(
      host,
      options.allowedHosts.map((h) => h.toLowerCase()),
    )
  ) {
    throw new NetworkGuardError(
      `host ${host} is not in the allowed hosts (${options.allowedHosts.join(', ')})`,
    );
  }
  if (policy.allowPrivate) return;
  let addresses: string[];
  if (isIP(host)) addresses = [host];
  else {
    try {
      addresses = (await (options.lookup ?? defaultLookup)(host)).map((a) => a.address);
    } catch (error) {
      throw new NetworkGuardError(`cannot resolve ${host}: ${(error as Error).message}`, { cause: error });
    }
  }
  const bad = addresses.find(isPrivateAddress);
  if (bad !== undefined || addresses.length === 0) {
    throw new NetworkGuardError(
      `${host} resolves to ${bad ?? 'no address'}, a private, loopback or link-local address; ` +
        `only a stack started with ${ALLOW_PRIVATE_NETWORK_ENV}=1 (crumbs dev --allow-private-network) calls those`,
    );
  }
}

/** A fetch that checks every request and redirect hop (see the header). */
export function guardedFetch(policy: NetworkPolicy, options: GuardOptions = {}): typeof fetch {
  const doFetch = options.fetch ?? ((input, init) => fetch(input, init));
  const maxRedirects = options.maxRedirects ?? 3;
  return async (input, init) => {
    let url = new URL(input instanceof Request ? input.url : String(input));
    let requestInit: RequestInit | undefined =
      input instanceof Request ? { ...cloneRequestInit(input), ...init } : init;
    for (let hop = 0; ; hop++) {
      await checkUrl(url, policy, options);
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
        throw new NetworkGuardError(`${url.host} redirected more than ${maxRedirects} times`);
      }
      url = new URL(location, url);
      if (
        response.status === 303 ||
        ((response.status === 301 || response.status === 302) && requestInit?.method === 'POST')
      ) {
        requestInit = { ...requestInit, method: 'GET', body: null };
      }
    }
  };
}

function cloneRequestInit(request: Request): RequestInit {
  return { method: request.method, headers: request.headers, body: request.body, signal: request.signal };
}
