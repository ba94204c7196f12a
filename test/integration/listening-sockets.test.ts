/**
 * Nothing of the local stack listens beyond loopback. A stack is started in this process with a data directory
 * (as `crumbs dev --data-dir` runs it); the listening TCP sockets of this process and its children (DynamoDB
 * Local's JVM) are read from Linux's /proc — /proc/net/tcp{,6} for address and inode, /proc/<pid>/fd for whose —
 * and each must be bound to 127.0.0.1 or ::1. Every other address of this host is then tried on every one of those
 * ports: each connection must be refused.
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { connect } from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalStack, startLocalStack } from '#local/stack.ts';

interface Listener {
  address: string;
  port: number;
  pid: number;
}

/** "0100007F:1F90" (little-endian words) → 127.0.0.1 / ::1 / ::ffff:127.0.0.1 and the port. */
function decode(hex: string): { address: string; port: number } {
  const [addr = '', port = ''] = hex.split(':');
  const words = addr.match(/.{8}/g) ?? [];
  const bytes = words.flatMap((w) => (w.match(/../g) ?? []).reverse().map((b) => Number.parseInt(b, 16)));
  let address: string;
  if (bytes.length === 4) address = bytes.join('.');
  else {
    const groups = Array.from({ length: 8 }, (_, i) =>
      ((bytes[2 * i]! << 8) | bytes[2 * i + 1]!).toString(16),
    );
    address = groups.join(':').replace(/(^|:)0(:0)+(:|$)/, '::');
    if (address.startsWith('::ffff:')) address = `::ffff:${bytes.slice(12).join('.')}`;
  }
  return { address, port: Number.parseInt(port, 16) };
}

/** This process and its descendants, from /proc/<pid>/stat's parent field. */
function processTree(root: number): number[] {
  const parents = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      parents.set(Number(entry), ppid);
    } catch {
      // Gone while we looked.
    }
  }
  const tree = [root];
  for (let i = 0; i < tree.length; i++) {
    for (const [pid, ppid] of parents) if (ppid === tree[i]) tree.push(pid);
  }
  return tree;
}

function listeners(root: number): Listener[] {
  const byInode = new Map<string, { address: string; port: number }>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of readFileSync(table, 'utf8').split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f[3] === '0A' && f[1] && f[9]) byInode.set(f[9], decode(f[1]));
    }
  }
  const found: Listener[] = [];
  for (const pid of processTree(root)) {
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        const inode = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`))?.[1];
        const socket = inode ? byInode.get(inode) : undefined;
        if (socket) found.push({ ...socket, pid });
      } catch {
        // Closed while we looked.
      }
    }
  }
  return found;
}

const LOOPBACK = new Set(['127.0.0.1', '::1', '::ffff:127.0.0.1']);

function refused(host: string, port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect({ host, port, timeout: 2000 });
    socket.once('connect', () => {
      socket.destroy();
      resolve('connected');
    });
    socket.once('timeout', () => {
      socket.destroy();
      resolve('timeout');
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
  });
}

describe.skipIf(process.platform !== 'linux')('the local stack’s listening sockets (Linux /proc)', () => {
  let stack: LocalStack;
  let dataDir: string;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'crumbs-sockets-'));
    stack = await startLocalStack({
      apiPort: 0,
      dynamodbPort: 0,
      sqsPort: 0,
      eventbridgePort: 0,
      schedulerPort: 0,
      token: 'sockets-token',
      seedDemo: false,
      dataDir,
    });
  }, 90_000);

  afterAll(async () => {
    await stack?.stop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('are all bound to loopback, DynamoDB Local’s JVM included', () => {
    expect(stack.warnings).toEqual([]);
    const found = listeners(process.pid);
    const ports = Object.fromEntries(
      Object.entries(stack.endpoints).map(([service, endpoint]) => [service, Number(new URL(endpoint).port)]),
    );
    // Every service of the stack is among them: the list is not empty by accident.
    for (const [service, port] of Object.entries(ports)) {
      expect(
        found.some((l) => l.port === port),
        `${service} on ${port}`,
      ).toBe(true);
    }
    const java = found.find((l) => l.port === ports.dynamodb);
    expect(java?.pid).not.toBe(process.pid);
    expect(found.filter((l) => !LOOPBACK.has(l.address))).toEqual([]);
  });

  it('refuse connections on every other address of this host', async () => {
    const ports = [...new Set(listeners(process.pid).map((l) => l.port))];
    const others = Object.values(networkInterfaces())
      .flat()
      .filter((a) => a !== undefined && !a.internal && !a.address.startsWith('fe80:'))
      .map((a) => a!.address);
    const answers: string[] = [];
    for (const address of others) {
      for (const port of ports) {
        const outcome = await refused(address, port);
        if (outcome !== 'ECONNREFUSED') answers.push(`${address}:${port} ${outcome}`);
      }
    }
    expect(answers).toEqual([]);
  });
});
