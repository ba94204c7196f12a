import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { createServer } from 'node:net';

/** Stops a child process: SIGTERM, then SIGKILL if it has not exited after `graceMs`. */
export async function stopChild(child: ChildProcess, graceMs = 3000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}

export async function waitUntil(
  check: () => Promise<boolean>,
  options: { timeoutMs: number; intervalMs: number; what: string },
): Promise<void> {
  const deadline = Date.now() + options.timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline)
      throw new Error(`timed out after ${options.timeoutMs} ms waiting for ${options.what}`);
    await new Promise((r) => setTimeout(r, options.intervalMs));
  }
}

export class PortInUseError extends Error {
  constructor(
    readonly port: number,
    readonly purpose: string,
    readonly flag: string,
  ) {
    super(
      `port ${port} (${purpose}) is already in use: stop whatever listens there, or choose another port with ${flag}`,
    );
    this.name = 'PortInUseError';
  }
}

/** Resolves to `port` when it can be bound on `host`, else throws PortInUseError. Port 0 picks a free port. */
export function checkPortFree(port: number, host: string, purpose: string, flag: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', (error: NodeJS.ErrnoException) =>
      reject(
        error.code === 'EADDRINUSE' || error.code === 'EACCES'
          ? new PortInUseError(port, purpose, flag)
          : error,
      ),
    );
    server.listen(port, host, () => {
      const address = server.address();
      const bound = typeof address === 'object' && address ? address.port : port;
      server.close(() => resolve(bound));
    });
  });
}

/**
 * Kills `child` if this process dies without stopping it (SIGKILL, a crash, a signal Node does not handle): a tiny
 * shell reads a pipe from this process and, at end of file — which the OS delivers when this process is gone —
 * kills the child. Returns a function that dismisses the watchdog once the child has been stopped normally.
 */
export function killWithParent(child: ChildProcess): () => void {
  if (child.pid === undefined || process.platform === 'win32') return () => undefined;
  const watchdog = spawn(
    'sh',
    ['-c', 'while read -r _; do :; done; kill -9 "$1" 2>/dev/null', 'crumbs-watchdog', String(child.pid)],
    {
      stdio: ['pipe', 'ignore', 'ignore'],
    },
  );
  watchdog.on('error', () => undefined);
  return () => {
    watchdog.kill('SIGKILL');
  };
}

/**
 * Whether process `pid` holds a listening TCP socket on `port`, from Linux's /proc: the listening sockets' inodes
 * in /proc/net/tcp{,6} against the socket descriptors in /proc/<pid>/fd. Undefined where /proc cannot tell (not
 * Linux, /proc not readable, inodes hidden as 0): callers then go on what they knew before.
 *
 * Why: a server that answers on a port is not necessarily the one just started there. DynamoDB Local (a JVM) takes
 * a second or more to bind its port, and another DynamoDB Local that took the port meanwhile answers the readiness
 * probe just as well.
 */
export function holdsListeningSocket(pid: number, port: number): boolean | undefined {
  if (process.platform !== 'linux') return undefined;
  const suffix = `:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  const inodes = new Set<string>();
  let readable = false;
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(table, 'utf8');
      readable = true;
    } catch {
      continue;
    }
    // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode …; st 0A is LISTEN
    for (const line of text.split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      if (fields[3] === '0A' && fields[1]?.endsWith(suffix) && fields[9]) inodes.add(fields[9]);
    }
  }
  if (!readable) return undefined;
  if (inodes.size === 0) return false;
  if (inodes.has('0')) return undefined;
  let fds: string[];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch (error) {
    // Gone: a process that has exited holds nothing. (A JVM that failed to bind exits within moments, while the
    // port's other listener still answers the readiness probe: "cannot tell" here let a stack use that one's tables.)
    return (error as NodeJS.ErrnoException).code === 'ENOENT' ? false : undefined;
  }
  for (const fd of fds) {
    try {
      const inode = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`))?.[1];
      if (inode && inodes.has(inode)) return true;
    } catch {
      // The descriptor closed while we looked.
    }
  }
  return false;
}
