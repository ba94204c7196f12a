/**
 * `node bin/run-ts.js test/netns-run.ts <command…>`: runs the command (the test runner) in a network namespace of its
 * own, with only loopback up and the addresses of `test/support/netns.ts` added to `lo`, so no test can send a
 * packet off this machine, whatever crumbs' network guard does. As root it uses `unshare --net`; otherwise
 * `unshare --net --map-root-user` (an unprivileged user namespace, where the kernel allows one).
 *
 * Where no namespace can be made (not Linux, no `unshare` or `ip`), it says so and exits 1: the adversarial suite
 * attacks addresses that exist only inside it, and running it outside would send its probes to the real network.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { NETNS_ADDRESSES, NETNS_ENV } from './support/netns.ts';

const command = process.argv.slice(2);
if (command.length === 0) {
  process.stderr.write('usage: node bin/run-ts.js test/netns-run.ts <command…>\n');
  process.exit(2);
}

function which(name: string, extra: readonly string[] = []): string | undefined {
  const dirs = [...(process.env.PATH ?? '').split(':'), ...extra].filter((dir) => dir.startsWith('/'));
  return dirs.map((dir) => `${dir}/${name}`).find((path) => existsSync(path));
}

if (process.env[NETNS_ENV] === '1') {
  // Already inside (a nested npm script): run the command as it is.
  const result = spawnSync(command[0] as string, command.slice(1), { stdio: 'inherit' });
  process.exit(result.status ?? 1);
}

const unshare = process.platform === 'linux' ? which('unshare') : undefined;
const ip = which('ip', ['/usr/sbin', '/sbin']);
if (!unshare || !ip) {
  process.stderr.write(
    'The tests run in a network namespace of their own (Linux `unshare` and `ip`, from util-linux and iproute2), so\n' +
      'that nothing they send can leave this machine. This machine has ' +
      `${unshare ? '' : 'no unshare'}${!unshare && !ip ? ' and ' : ''}${ip ? '' : 'no ip'}.\n`,
  );
  process.exit(1);
}

const setup = [
  `${ip} link set lo up`,
  ...Object.values(NETNS_ADDRESSES).map((address) =>
    address.includes(':')
      ? `${ip} -6 addr add ${address}/128 dev lo nodad`
      : `${ip} addr add ${address}/32 dev lo`,
  ),
  'exec "$@"',
].join(' && ');
const asRoot = process.getuid?.() === 0;
const result = spawnSync(
  unshare,
  [...(asRoot ? ['--net'] : ['--net', '--map-root-user']), '--', 'sh', '-c', setup, 'sh', ...command],
  { stdio: 'inherit', env: { ...process.env, [NETNS_ENV]: '1' } },
);
if (result.error) {
  process.stderr.write(`could not start ${unshare}: ${result.error.message}\n`);
  process.exit(1);
}
process.exit(result.status ?? (result.signal ? 1 : 0));
