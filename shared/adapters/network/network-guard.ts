/**
 * The network guard: every outbound request crumbs makes on behalf of a definition (the `http` tool; the MCP, A2A
 * and `api` agent types) goes through `assertPublicUrl` first (through `guardedFetch` beside this module, which
 * also checks a host allow-list and every redirect hop), so a definition — which anyone allowed to write
 * definitions in a workspace can write — cannot reach the private network from the shared executor. On Lambda,
 * loopback is the Runtime API (127.0.0.1:9001), which hands out the next invocation's event: another workspace's
 * data. In a VPC, private addresses are other systems; 169.254.169.254 is instance metadata.
 *
 * Exports:
 * - `assertPublicUrl(url, { allowPrivate, lookup? })` → the parsed URL, or throws `PrivateNetworkError`
 *   (non-retriable): http/https only; the host is resolved and every address checked, so `localhost` or a public
 *   name pointing at 127.0.0.1 is refused too. Call it again for each redirect hop.
 * - `isPrivateAddress(ip)`: private, loopback, link-local (incl. metadata), CGNAT, multicast and reserved
 *   addresses, IPv4 and IPv6 (mapped, NAT64 and 6to4 forms included). Anything that is not an IP is "private".
 * - `assertHostAllowed(url, allowedHosts, field?)` → throws `HostNotAllowedError` unless the host is on the list
 *   (`*` any, `*.example.com` subdomains); `field` names where the list comes from in the message.
 * - `privateNetworkAllowed(env)`: whether this stack lets definitions reach private addresses at all —
 *   `CRUMBS_ALLOW_PRIVATE_NETWORK=1` (`crumbs dev --allow-private-network`), parsed once with zod. Never set on
 *   AWS. `allowPrivate` passed to `assertPublicUrl` is never a definition's word alone: the http tool passes this
 *   AND its definition's `config.allow_private`; the agent types (MCP, api, A2A), whose definitions have no such
 *   opt-in, pass this alone (issue 11: a stack started to test against loopback servers).
 * - `NetworkGuardError`: the base of both refusals (non-retriable), for adapters that classify SDK errors.
 *
 * Residual risk: global fetch resolves the name again when it connects, so a name whose DNS answer changes in
 * between (rebinding) is not covered; pinning the address needs an undici dispatcher we do not bundle.
 */
import { lookup as dnsLookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';
import { NetworkEnvSchema, parseEnv } from '#shared/config.ts';
import { NonRetriableError } from '#shared/domain/errors.ts';
import { ENV } from '#shared/topology.ts';

/** A request the guard refused: retrying cannot make it pass. */
export class NetworkGuardError extends NonRetriableError {}

/** A request to a private, loopback or link-local address (or an unusable URL) that the guard refused. */
export class PrivateNetworkError extends NetworkGuardError {}

/** A request to a host that is not on the caller's allow-list. */
export class HostNotAllowedError extends NetworkGuardError {}

export type AddressLookup = (host: string) => Promise<{ address: string; family: number }[]>;

export interface GuardOptions {
  /** True only when the stack allows it (`privateNetworkAllowed`) and the definition asks for it. */
  allowPrivate: boolean;
  /** DNS resolution (tests inject one); the system resolver by default. */
  lookup?: AddressLookup;
}

/** Whether this stack lets definitions reach private addresses: `CRUMBS_ALLOW_PRIVATE_NETWORK=1`. */
export function privateNetworkAllowed(env: NodeJS.ProcessEnv = process.env): boolean {
  return parseEnv(NetworkEnvSchema, env)[ENV.allowPrivateNetwork];
}

/** How to turn private network access on, for error messages. */
export const ALLOW_PRIVATE_NETWORK_HINT =
  'only a stack started with `crumbs dev --allow-private-network` (CRUMBS_ALLOW_PRIVATE_NETWORK=1) allows it';

const systemLookup: AddressLookup = (host) => dnsLookup(host, { all: true, verbatim: true });

/** Throws PrivateNetworkError unless `url` is http(s) and every address its host resolves to is public. */
export async function assertPublicUrl(url: URL | string, options: GuardOptions): Promise<URL> {
  let parsed: URL;
  try {
    parsed = typeof url === 'string' ? new URL(url) : url;
  } catch {
    throw new PrivateNetworkError(`not a URL: ${JSON.stringify(url)}`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new PrivateNetworkError(`only http and https URLs are allowed, not ${parsed.protocol}`);
  }
  if (options.allowPrivate) return parsed;
  const host = hostOf(parsed);
  let addresses: string[];
  if (isIP(host)) {
    addresses = [host];
  } else {
    try {
      addresses = (await (options.lookup ?? systemLookup)(host)).map((a) => a.address);
    } catch (error) {
      throw new PrivateNetworkError(`cannot resolve ${host}: ${(error as Error).message}`);
    }
  }
  const bad = addresses.find(isPrivateAddress);
  if (bad !== undefined || addresses.length === 0) {
    throw new PrivateNetworkError(
      `${host} resolves to ${bad ?? 'no address'}, a private, loopback or link-local address; ${ALLOW_PRIVATE_NETWORK_HINT}`,
    );
  }
  return parsed;
}

/** The host of `url` as the guard compares it: lower case, IPv6 without brackets. */
function hostOf(url: URL): string {
  return url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
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
    const entry = raw.toLowerCase();
    return entry === '*' || entry === host || (entry.startsWith('*.') && host.endsWith(entry.slice(1)));
  });
  if (!allowed) throw new HostNotAllowedError(`host ${host} is not in ${field} (${allowedHosts.join(', ')})`);
}

const blocked = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  blocked.addSubnet(net, prefix, 'ipv4');
}
for (const [net, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
] as const) {
  blocked.addSubnet(net, prefix, 'ipv6');
}

/** True for addresses a definition's request must not reach unless private network access is allowed. */
export function isPrivateAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return blocked.check(address, 'ipv4');
  if (family !== 6) return true;
  const embedded = embeddedIpv4(address);
  if (embedded !== undefined) return blocked.check(embedded, 'ipv4');
  return blocked.check(address, 'ipv6');
}

/** The IPv4 address inside an IPv4-mapped (::ffff:a.b.c.d), NAT64 (64:ff9b::/96) or 6to4 (2002::/16) address. */
function embeddedIpv4(address: string): string | undefined {
  const groups = expandIpv6(address);
  if (!groups) return undefined;
  const v4 = (hi: number, lo: number) => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  const [g0, g1, g2, g3, g4, g5, g6, g7] = groups as [
    number,
    number,
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  if (g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0 && g4 === 0 && (g5 === 0xffff || g5 === 0)) {
    // ::ffff:a.b.c.d (mapped) and the deprecated ::a.b.c.d (compatible); :: and ::1 stay IPv6.
    if (g5 === 0xffff || g6 !== 0) return v4(g6, g7);
    return undefined;
  }
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0) return v4(g6, g7);
  if (g0 === 0x2002) return v4(g1, g2);
  return undefined;
}

function expandIpv6(address: string): number[] | undefined {
  let text = address.split('%')[0] ?? '';
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted?.[1]) {
    const parts = dotted[1].split('.').map(Number) as [number, number, number, number];
    text = `${text.slice(0, -dotted[1].length)}${((parts[0] << 8) | parts[1]).toString(16)}:${((parts[2] << 8) | parts[3]).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const missing = 8 - left.length - right.length;
  if (tail === undefined ? left.length !== 8 : missing < 0) return undefined;
  const groups = [...left, ...Array<string>(tail === undefined ? 0 : missing).fill('0'), ...right].map((g) =>
    Number.parseInt(g, 16),
  );
  return groups.length === 8 && groups.every((g) => Number.isInteger(g) && g >= 0 && g <= 0xffff)
    ? groups
    : undefined;
}
