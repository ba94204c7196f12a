/**
 * The network guard: what a request made on behalf of a definition (the `http` tool; the MCP, A2A and `api` agent
 * types) may reach. A definition is data anyone allowed into a workspace can write; on Lambda, loopback is the
 * Runtime API (the next invocation's event: another workspace's data), in a VPC private addresses are other
 * systems, 169.254.169.254 is instance metadata, and locally the emulators listen on this host's addresses.
 * `guardedFetch` beside this module is the one fetch those requests use; it calls `resolveChecked` for every hop
 * and connects to the addresses it returned, never resolving the name again.
 *
 * - `resolveChecked(url, { allowPrivate, lookup?, ownAddresses? })` → the host and its checked addresses, or
 *   `PrivateNetworkError`: http/https only; the name is resolved once and every address must pass
 *   `classifyAddress` (`address-policy.ts`: globally routable unicast, not this host's own).
 * - `assertHostAllowed(url, allowedHosts, field?)` → `HostNotAllowedError` unless the host is on the list.
 * - `privateNetworkAllowed(env)` / `responseCeiling(env)`: the operator's switches (`CRUMBS_ALLOW_PRIVATE_NETWORK`,
 *   `crumbs dev --allow-private-network`, never on AWS; `CRUMBS_MAX_RESPONSE_BYTES`). A definition sets neither:
 *   the http tool's `config.allow_private` counts only where the stack allows it, the agent types have no opt-in.
 */
import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { NetworkEnvSchema, parseEnv } from '#shared/config.ts';
import { NonRetriableError, RetriableError } from '#shared/domain/errors.ts';
import { MAX_REDIRECTS } from '#shared/domain/outbound-limits.ts';
import { ENV } from '#shared/topology.ts';
import { type AddressPolicyOptions, classifyAddress } from './address-policy.ts';

/** A request the guard refused: retrying cannot make it pass. */
export class NetworkGuardError extends NonRetriableError {}

/** A request to an address outside the public internet (or an unusable URL) that the guard refused. */
export class PrivateNetworkError extends NetworkGuardError {}

/** A request to a host that is not on the caller's allow-list (or off the origin an MCP/A2A call is bound to). */
export class HostNotAllowedError extends NetworkGuardError {}

/** A redirect the guard does not follow: too many, or from https to http. */
export class RedirectRefusedError extends NetworkGuardError {}

/** A response body larger than the cap of the one who asked (a definition's limit, or the operator's ceiling). */
export class ResponseTooLargeError extends NetworkGuardError {
  constructor(
    message: string,
    readonly limit: number,
  ) {
    super(message);
  }
}

export { MAX_REDIRECTS };

export type AddressLookup = (host: string) => Promise<{ address: string; family: number }[]>;

export interface GuardOptions extends AddressPolicyOptions {
  /** True only when the stack allows it (`privateNetworkAllowed`) and, for the http tool, the definition asks. */
  allowPrivate: boolean;
  /** DNS resolution (tests inject one); the system resolver by default. */
  lookup?: AddressLookup;
}

/** Whether this stack lets definitions reach private addresses: `CRUMBS_ALLOW_PRIVATE_NETWORK=1`. */
export function privateNetworkAllowed(env: NodeJS.ProcessEnv = process.env): boolean {
  return parseEnv(NetworkEnvSchema, env)[ENV.allowPrivateNetwork];
}

/** The operator's ceiling on response bodies (`CRUMBS_MAX_RESPONSE_BYTES`, default 5 MiB). */
export function responseCeiling(env: NodeJS.ProcessEnv = process.env): number {
  return parseEnv(NetworkEnvSchema, env)[ENV.maxResponseBytes];
}

/** How to turn private network access on, for error messages. */
export const ALLOW_PRIVATE_NETWORK_HINT = `only a stack started with \`crumbs dev --allow-private-network\` (${ENV.allowPrivateNetwork}=1) allows it`;

const systemLookup: AddressLookup = (host) => dnsLookup(host, { all: true, verbatim: true });

export interface CheckedHost {
  /** The host as the guard compares it: lower case, IPv6 without brackets, no trailing dot. */
  readonly host: string;
  /** What to connect to: every address the name resolved to, each checked unless private addresses are allowed. */
  readonly addresses: readonly { address: string; family: number }[];
}

function parseHttpUrl(url: URL | string): URL {
  let parsed: URL;
  try {
    parsed = typeof url === 'string' ? new URL(url) : url;
  } catch {
    throw new PrivateNetworkError(`not a URL: ${JSON.stringify(url)}`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new PrivateNetworkError(`only http and https URLs may be called, not ${parsed.protocol}`);
  }
  return parsed;
}

/**
 * Resolves the host of `url` once and checks every address (see the header); with `allowPrivate` the addresses
 * are not checked, but the connection still goes to them and nowhere else.
 */
export async function resolveChecked(url: URL | string, options: GuardOptions): Promise<CheckedHost> {
  const parsed = parseHttpUrl(url);
  const host = hostOf(parsed);
  let addresses: { address: string; family: number }[];
  if (isIP(host)) {
    addresses = [{ address: host, family: isIP(host) }];
  } else {
    try {
      addresses = await (options.lookup ?? systemLookup)(host);
    } catch (error) {
      // A name that does not exist stays so; a resolver that did not answer (EAI_AGAIN, a timeout) may next time.
      const code = (error as NodeJS.ErrnoException).code;
      const message = `cannot resolve ${host}: ${(error as Error).message}`;
      if (code === 'EAI_AGAIN' || code === 'ETIMEOUT') throw new RetriableError(message, { cause: error });
      throw new PrivateNetworkError(message, { cause: error });
    }
  }
  if (addresses.length === 0) throw new PrivateNetworkError(`${host} resolves to no address`);
  if (options.allowPrivate) return { host, addresses };
  for (const { address } of addresses) {
    const verdict = classifyAddress(address, options);
    if (!verdict.allowed) {
      throw new PrivateNetworkError(
        `${host === address ? host : `${host} resolves to ${address}, which`} is not a public address (${verdict.reason}): private, loopback or link-local addresses, the other special-purpose ranges and this host's own addresses are refused; ${ALLOW_PRIVATE_NETWORK_HINT}`,
      );
    }
  }
  return { host, addresses };
}

/** Throws PrivateNetworkError unless `url` is http(s) and every address its host resolves to is public. */
export async function assertPublicUrl(url: URL | string, options: GuardOptions): Promise<URL> {
  const parsed = parseHttpUrl(url);
  await resolveChecked(parsed, options);
  return parsed;
}

/** True for addresses a definition's request must not reach unless private network access is allowed. */
export function isPrivateAddress(address: string): boolean {
  return !classifyAddress(address).allowed;
}

/** The host of `url` as the guard compares it: lower case, IPv6 without brackets, without a trailing dot. */
export function hostOf(url: URL): string {
  return url.hostname
    .replace(/^\[|\]$/g, '')
    .replace(/\.$/, '')
    .toLowerCase();
}

/**
 * Throws HostNotAllowedError unless the host of `url` is on `allowedHosts`: exact names, `*.example.com` for
 * subdomains, `*` for any host. `field` says where the list comes from (`transport.api.allowed_hosts`).
 */
export function assertHostAllowed(
  url: URL,
  allowedHosts: readonly string[],
  field = 'the allowed hosts',
): void {
  const host = hostOf(url);
  const allowed = allowedHosts.some((raw) => {
    const entry = raw.toLowerCase().replace(/^\[|\]$/g, '');
    return entry === '*' || entry === host || (entry.startsWith('*.') && host.endsWith(entry.slice(1)));
  });
  if (!allowed) throw new HostNotAllowedError(`host ${host} is not in ${field} (${allowedHosts.join(', ')})`);
}
