/**
 * Which IP addresses a definition's request may connect to: globally routable unicast only, and never one of this
 * host's own addresses. The special-purpose ranges (the IANA IPv4 and IPv6 Special-Purpose Address Registries:
 * loopback, private, CGNAT, link-local with the metadata address, documentation, benchmarking, AS112, AMT,
 * ORCHID, SRv6 SIDs, multicast, reserved, broadcast, unspecified, …) are named by `ipaddr.js`, whose `range()`
 * is `unicast` only outside all of them; `test/unit/adapters/network/address-policy.test.ts` holds it against a
 * table of the registries. Addresses that embed an IPv4 address (see the README beside this file):
 * - IPv4-mapped `::ffff:a.b.c.d` and NAT64 `64:ff9b::/96` are judged as the IPv4 address they carry (a dual-stack
 *   socket or a NAT64 gateway connects there; IPv6-only VPCs reach IPv4 services through NAT64);
 * - 6to4 `2002::/16`, Teredo `2001::/32`, IPv4-compatible `::a.b.c.d`, IPv4-translated `::ffff:0:a.b.c.d` and
 *   local-use NAT64 `64:ff9b:1::/48` are refused whatever they carry: deprecated or local, and where they lead
 *   depends on relays this host cannot see.
 * IPv6 must also lie in 2000::/3, the only block IANA allocates as global unicast: ipaddr.js calls any address it
 * has no name for `unicast`, including the IETF-reserved rest of the space (`::7f00:1`, `100:0:0:1::`).
 */
import { networkInterfaces } from 'node:os';
import ipaddr from 'ipaddr.js';

export type AddressVerdict =
  | { readonly allowed: true }
  | { readonly allowed: false; readonly reason: string };

export interface AddressPolicyOptions {
  /** This host's own addresses; `os.networkInterfaces()` (every interface, read at most once a second) by default. */
  readonly ownAddresses?: () => ReadonlySet<string>;
}

const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR('2000::/3');
const NAT64_WELL_KNOWN = ipaddr.parseCIDR('64:ff9b::/96');

/** Whether a request may connect to `address` (an IP literal; anything else is refused). */
export function classifyAddress(address: string, options: AddressPolicyOptions = {}): AddressVerdict {
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    parsed = ipaddr.parse(address);
  } catch {
    return { allowed: false, reason: 'not an IP address' };
  }
  const own = (options.ownAddresses ?? hostAddresses)();
  if (parsed.kind() === 'ipv4') return classifyIpv4(parsed as ipaddr.IPv4, own);
  const v6 = parsed as ipaddr.IPv6;
  const range = v6.range();
  if (range === 'ipv4Mapped') return embedded(v6.toIPv4Address(), 'IPv4-mapped', own);
  if (v6.match(NAT64_WELL_KNOWN)) return embedded(lastIpv4(v6), 'NAT64', own);
  if (range !== 'unicast') return { allowed: false, reason: describeRange(range) };
  if (!v6.match(GLOBAL_UNICAST_V6)) {
    return { allowed: false, reason: 'not global unicast (IPv6 outside 2000::/3 is reserved by the IETF)' };
  }
  return own.has(addressKey(v6)) ? OWN : { allowed: true };
}

const OWN: AddressVerdict = { allowed: false, reason: "one of this host's own addresses" };

function classifyIpv4(v4: ipaddr.IPv4, own: ReadonlySet<string>): AddressVerdict {
  const range = v4.range();
  if (range !== 'unicast') return { allowed: false, reason: describeRange(range) };
  return own.has(addressKey(v4)) ? OWN : { allowed: true };
}

function embedded(v4: ipaddr.IPv4, form: string, own: ReadonlySet<string>): AddressVerdict {
  const verdict = classifyIpv4(v4, own);
  return verdict.allowed
    ? verdict
    : { allowed: false, reason: `the ${form} form of ${v4.toString()}, ${verdict.reason}` };
}

function lastIpv4(v6: ipaddr.IPv6): ipaddr.IPv4 {
  const bytes = v6.toByteArray();
  return new ipaddr.IPv4(bytes.slice(12) as [number, number, number, number]);
}

const RANGE_NAMES: Readonly<Record<string, string>> = {
  unspecified: 'unspecified',
  broadcast: 'broadcast',
  multicast: 'multicast',
  linkLocal: 'link-local (the instance metadata address among them)',
  loopback: 'loopback',
  carrierGradeNat: 'shared address space (CGNAT)',
  private: 'private',
  reserved: 'reserved (documentation, benchmarking, future use)',
  as112: 'AS112 (DNS sink)',
  amt: 'AMT relay anycast',
  uniqueLocal: 'unique local (private)',
  deprecatedSiteLocal: 'site-local (deprecated, private)',
  discard: 'discard-only',
  rfc6145: 'IPv4-translated',
  rfc6052: 'local-use NAT64',
  '6to4': '6to4 (deprecated; refused whatever it embeds)',
  teredo: 'Teredo (refused whatever it embeds)',
  benchmarking: 'benchmarking',
  as112v6: 'AS112 (DNS sink)',
  deprecatedOrchid: 'ORCHID (deprecated)',
  orchid2: 'ORCHIDv2',
  droneRemoteIdProtocolEntityTags: 'drone remote ID tags',
  segmentRouting: 'SRv6 SIDs',
};

function describeRange(range: string): string {
  return `a special-purpose address: ${RANGE_NAMES[range] ?? range}`;
}

/** One spelling per address: IPv4 dotted, IPv6 in full without a zone; IPv4-mapped IPv6 as its IPv4 address. */
function addressKey(address: ipaddr.IPv4 | ipaddr.IPv6): string {
  if (address.kind() === 'ipv6') {
    const v6 = address as ipaddr.IPv6;
    if (v6.isIPv4MappedAddress()) return v6.toIPv4Address().toString();
    return new ipaddr.IPv6(v6.parts).toNormalizedString();
  }
  return address.toString();
}

const OWN_ADDRESSES_TTL_MS = 1000;
let cachedOwn: { readonly at: number; readonly addresses: ReadonlySet<string> } | undefined;

/**
 * Every address on every interface of this host (a host's public address answers on it like loopback does), read
 * again after a second so an address added while the process runs is soon refused too.
 */
export function hostAddresses(now = Date.now()): ReadonlySet<string> {
  if (cachedOwn !== undefined && now - cachedOwn.at < OWN_ADDRESSES_TTL_MS) return cachedOwn.addresses;
  const addresses = new Set<string>();
  for (const list of Object.values(networkInterfaces())) {
    for (const info of list ?? []) {
      try {
        addresses.add(addressKey(ipaddr.parse(info.address)));
      } catch {
        // An interface address Node reports but ipaddr.js cannot parse is not one a URL could name either.
      }
    }
  }
  cachedOwn = { at: now, addresses };
  return addresses;
}

/** `hostAddresses`' spelling of `address`, for tests that hand the policy an own-address set. */
export function ownAddressSet(addresses: readonly string[]): ReadonlySet<string> {
  return new Set(addresses.map((a) => addressKey(ipaddr.parse(a))));
}
