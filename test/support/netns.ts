/**
 * The network namespace the tests run in. `npm test` runs vitest inside a namespace of its own (`unshare -n`,
 * `test/netns-run.ts`): loopback only, nothing can leave the machine even if crumbs' network guard fails, and the
 * addresses the adversarial suite attacks live on that namespace's `lo`, so a server bound to one of them is what a
 * tool defined as data would reach if the guard let it.
 *
 * Each address stands for a class the guard must refuse; `ownPublic*` are globally routable addresses that are the
 * host's own (on its interface), which only the interface check refuses.
 */
export const NETNS_ADDRESSES = {
  /** RFC 5737 documentation (TEST-NET-1), the class the first review reached. */
  documentation: '192.0.2.10',
  /** RFC 1918 private. */
  private10: '10.20.30.40',
  /** RFC 6598 shared address space (CGNAT). */
  cgnat: '100.64.7.7',
  /** RFC 2544 benchmarking. */
  benchmarking: '198.18.0.5',
  /** Link-local: the instance metadata address. */
  metadata: '169.254.169.254',
  /** A globally routable address held by this host: refused only because it is the host's own. */
  ownPublic: '1.2.3.4',
  /** IPv6 documentation (RFC 3849). */
  documentation6: '2001:db8::10',
  /** IPv6 unique local (RFC 4193). */
  ula6: 'fd12:3456::10',
  /** A globally routable IPv6 address held by this host. */
  ownPublic6: '2a01:4f8::10',
} as const;

/** Set by `test/netns-run.ts` inside the namespace it made. */
export const NETNS_ENV = 'CRUMBS_TEST_NETNS';

/** Whether this process runs inside the tests' namespace with the addresses above on `lo`. */
export function inTestNamespace(env: NodeJS.ProcessEnv = process.env): boolean {
  return env[NETNS_ENV] === '1';
}
