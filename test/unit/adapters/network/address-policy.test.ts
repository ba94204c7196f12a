/**
 * The address policy held against the IANA special-purpose registries. The tables below are written from the
 * registries' content, not from the implementation:
 * - IPv4: https://www.iana.org/assignments/iana-ipv4-special-registry/ (and 224.0.0.0/4 from
 *   https://www.iana.org/assignments/multicast-addresses/)
 * - IPv6: https://www.iana.org/assignments/iana-ipv6-special-registry/ (and ff00::/8 multicast, fec0::/10
 *   site-local from https://www.iana.org/assignments/ipv6-address-space/, where only 2000::/3 is global unicast)
 * Every address in every entry must be refused, except the two forms judged by the IPv4 address they carry
 * (IPv4-mapped and the NAT64 well-known prefix); the rest of the space must pass, unless it is the host's own.
 */
import { networkInterfaces } from 'node:os';
import fc from 'fast-check';
import ipaddr from 'ipaddr.js';
import { describe, expect, it } from 'vitest';
import { classifyAddress, ownAddressSet } from '#shared/adapters/network/address-policy.ts';

const IPV4_SPECIAL: readonly [cidr: string, name: string][] = [
  ['0.0.0.0/8', '"This network" (RFC 791)'],
  ['0.0.0.0/32', '"This host on this network" (RFC 1122)'],
  ['10.0.0.0/8', 'Private-Use (RFC 1918)'],
  ['100.64.0.0/10', 'Shared Address Space (RFC 6598)'],
  ['127.0.0.0/8', 'Loopback (RFC 1122)'],
  ['169.254.0.0/16', 'Link Local (RFC 3927)'],
  ['172.16.0.0/12', 'Private-Use (RFC 1918)'],
  ['192.0.0.0/24', 'IETF Protocol Assignments (RFC 6890)'],
  ['192.0.0.0/29', 'IPv4 Service Continuity Prefix (RFC 7335)'],
  ['192.0.0.8/32', 'IPv4 dummy address (RFC 7600)'],
  ['192.0.0.9/32', 'Port Control Protocol Anycast (RFC 7723)'],
  ['192.0.0.10/32', 'Traversal Using Relays around NAT Anycast (RFC 8155)'],
  ['192.0.0.170/32', 'NAT64/DNS64 Discovery (RFC 8880)'],
  ['192.0.0.171/32', 'NAT64/DNS64 Discovery (RFC 8880)'],
  ['192.0.2.0/24', 'Documentation (TEST-NET-1) (RFC 5737)'],
  ['192.31.196.0/24', 'AS112-v4 (RFC 7535)'],
  ['192.52.193.0/24', 'AMT (RFC 7450)'],
  ['192.88.99.0/24', 'Deprecated (6to4 Relay Anycast) (RFC 7526)'],
  ['192.168.0.0/16', 'Private-Use (RFC 1918)'],
  ['192.175.48.0/24', 'Direct Delegation AS112 Service (RFC 7534)'],
  ['198.18.0.0/15', 'Benchmarking (RFC 2544)'],
  ['198.51.100.0/24', 'Documentation (TEST-NET-2) (RFC 5737)'],
  ['203.0.113.0/24', 'Documentation (TEST-NET-3) (RFC 5737)'],
  ['240.0.0.0/4', 'Reserved (RFC 1112)'],
  ['255.255.255.255/32', 'Limited Broadcast (RFC 919)'],
  ['224.0.0.0/4', 'Multicast (RFC 5771; multicast registry)'],
];

/** Entries judged by the IPv4 address they embed (see address-policy.ts); every other entry is refused whole. */
const IPV6_EMBEDDING: readonly string[] = ['::ffff:0:0/96', '64:ff9b::/96'];

const IPV6_SPECIAL: readonly [cidr: string, name: string][] = [
  ['::1/128', 'Loopback Address (RFC 4291)'],
  ['::/128', 'Unspecified Address (RFC 4291)'],
  ['::ffff:0:0/96', 'IPv4-mapped Address (RFC 4291)'],
  ['64:ff9b::/96', 'IPv4-IPv6 Translat. (RFC 6052)'],
  ['64:ff9b:1::/48', 'IPv4-IPv6 Translat. (RFC 8215)'],
  ['100::/64', 'Discard-Only Address Block (RFC 6666)'],
  ['100:0:0:1::/64', 'Dummy IPv6 Prefix (RFC 9780)'],
  ['2001::/23', 'IETF Protocol Assignments (RFC 2928)'],
  ['2001::/32', 'TEREDO (RFC 4380)'],
  ['2001:1::1/128', 'Port Control Protocol Anycast (RFC 7723)'],
  ['2001:1::2/128', 'Traversal Using Relays around NAT Anycast (RFC 8155)'],
  ['2001:1::3/128', 'DNS-SD Service Registration Protocol Anycast (RFC 9665)'],
  ['2001:2::/48', 'Benchmarking (RFC 5180)'],
  ['2001:3::/32', 'AMT (RFC 7450)'],
  ['2001:4:112::/48', 'AS112-v6 (RFC 7535)'],
  ['2001:10::/28', 'Deprecated (previously ORCHID) (RFC 4843)'],
  ['2001:20::/28', 'ORCHIDv2 (RFC 7343)'],
  ['2001:30::/28', 'Drone Remote ID Protocol Entity Tags (DETs) Prefix (RFC 9374)'],
  ['2001:db8::/32', 'Documentation (RFC 3849)'],
  ['2002::/16', '6to4 (RFC 3056)'],
  ['2620:4f:8000::/48', 'Direct Delegation AS112 Service (RFC 7534)'],
  ['3fff::/20', 'Documentation (RFC 9637)'],
  ['5f00::/16', 'Segment Routing (SRv6) SIDs (RFC 9602)'],
  ['fc00::/7', 'Unique-Local (RFC 4193)'],
  ['fe80::/10', 'Link-Local Unicast (RFC 4291)'],
  ['fec0::/10', 'Site-local, deprecated (RFC 3879; address space registry)'],
  ['ff00::/8', 'Multicast (RFC 4291; address space registry)'],
];

// Arithmetic of the test's own (BigInt), so the table is checked independently of ipaddr.js' matching.
function toBig(address: string): bigint {
  return ipaddr
    .parse(address)
    .toByteArray()
    .reduce((n, byte) => (n << 8n) | BigInt(byte), 0n);
}

function fromBig(n: bigint, bits: 32 | 128): string {
  const bytes: number[] = [];
  for (let i = 0; i < bits / 8; i++) bytes.unshift(Number((n >> BigInt(8 * i)) & 255n));
  return ipaddr.fromByteArray(bytes).toString();
}

interface Block {
  readonly first: bigint;
  readonly last: bigint;
  readonly bits: 32 | 128;
  readonly cidr: string;
}

function block(cidr: string): Block {
  const [address = '', prefix = ''] = cidr.split('/');
  const bits = address.includes(':') ? 128 : 32;
  const size = 1n << BigInt(bits - Number(prefix));
  const first = toBig(address);
  return { first, last: first + size - 1n, bits, cidr };
}

const v4Blocks = IPV4_SPECIAL.map(([cidr]) => block(cidr));
const v6Blocks = IPV6_SPECIAL.filter(([cidr]) => !IPV6_EMBEDDING.includes(cidr)).map(([cidr]) => block(cidr));
const globalUnicast = block('2000::/3');
const inBlocks = (n: bigint, blocks: readonly Block[]) => blocks.some((b) => n >= b.first && n <= b.last);

const noOwn = (): ReadonlySet<string> => new Set<string>();
const verdict = (address: string, own = noOwn) => classifyAddress(address, { ownAddresses: own }).allowed;

/** The registries' answer: whether a request may go to this IPv4 address. */
function v4Expected(address: string): boolean {
  return !inBlocks(toBig(address), v4Blocks);
}

describe('classifyAddress against the IANA special-purpose registries', () => {
  it.each(IPV4_SPECIAL)('refuses all of %s, %s', (cidr) => {
    const { first, last } = block(cidr);
    for (const n of [first, last, first + (last - first) / 2n]) {
      expect(verdict(fromBig(n, 32)), fromBig(n, 32)).toBe(false);
    }
  });

  it.each(IPV6_SPECIAL.filter(([cidr]) => !IPV6_EMBEDDING.includes(cidr)))(
    'refuses all of %s, %s',
    (cidr) => {
      const { first, last } = block(cidr);
      for (const n of [first, last, first + (last - first) / 2n]) {
        expect(verdict(fromBig(n, 128)), fromBig(n, 128)).toBe(false);
      }
    },
  );

  it('lets globally routable unicast through, IPv4 and IPv6', () => {
    for (const a of ['8.8.8.8', '1.1.1.1', '93.184.216.34', '172.32.0.1', '100.128.0.1', '198.20.0.1']) {
      expect(verdict(a), a).toBe(true);
    }
    for (const a of ['2001:4860:4860::8888', '2a00:1450:4001::200e', '2606:4700::1111', '2001:200::1']) {
      expect(verdict(a), a).toBe(true);
    }
  });

  it('judges any IPv4 address as the registries do (property)', () => {
    fc.assert(
      fc.property(fc.ipV4(), (address) => {
        expect(verdict(address), address).toBe(v4Expected(address));
      }),
      { numRuns: 2000 },
    );
  });

  it('judges any IPv6 address as the registries and the address space do (property)', () => {
    fc.assert(
      fc.property(fc.ipV6(), (address) => {
        const n = toBig(address);
        const mapped = n >> 32n === 0xffffn;
        const nat64 = n >> 32n === toBig('64:ff9b::') >> 32n;
        const expected =
          mapped || nat64
            ? v4Expected(fromBig(n & 0xffffffffn, 32))
            : n >= globalUnicast.first && n <= globalUnicast.last && !inBlocks(n, v6Blocks);
        expect(verdict(address), address).toBe(expected);
      }),
      { numRuns: 2000 },
    );
  });

  it('judges the IPv4-mapped and NAT64 forms of an address as the address itself (property)', () => {
    fc.assert(
      fc.property(fc.ipV4(), (address) => {
        const hex = ipaddr.IPv4.parse(address).toIPv4MappedAddress().toNormalizedString().split(':').slice(6);
        expect(verdict(`::ffff:${address}`), `::ffff:${address}`).toBe(verdict(address));
        expect(verdict(`64:ff9b::${hex.join(':')}`), `64:ff9b::${hex.join(':')}`).toBe(verdict(address));
      }),
      { numRuns: 1000 },
    );
  });

  it('refuses 6to4, Teredo, IPv4-compatible and local-use NAT64 forms whatever they carry', () => {
    // 8.8.8.8 in each form: the embedded address is public, the form is still refused.
    for (const a of [
      '2002:808:808::1',
      '2001:0:4136:e378:8000:63bf:f7f7:f7f7',
      '::808:808',
      '64:ff9b:1::808:808',
    ]) {
      expect(verdict(a), a).toBe(false);
    }
  });
});

describe("classifyAddress and this host's own addresses", () => {
  it("refuses every address on this host's interfaces", () => {
    for (const info of Object.values(networkInterfaces()).flat()) {
      if (info === undefined) continue;
      expect(classifyAddress(info.address).allowed, info.address).toBe(false);
    }
  });

  it('refuses a public address once it is an own address, in any spelling (property)', () => {
    fc.assert(
      fc.property(
        fc.ipV4().filter((a) => v4Expected(a)),
        (address) => {
          const own = () => ownAddressSet([address]);
          expect(verdict(address, own)).toBe(false);
          expect(verdict(`::ffff:${address}`, own)).toBe(false);
        },
      ),
      { numRuns: 200 },
    );
    const own = () => ownAddressSet(['2a01:4f8::10']);
    expect(verdict('2a01:4f8:0:0::10', own)).toBe(false);
    expect(verdict('2a01:4f8::11', own)).toBe(true);
  });

  it('refuses what is not an IP address', () => {
    expect(classifyAddress('localhost')).toEqual({ allowed: false, reason: 'not an IP address' });
  });
});
