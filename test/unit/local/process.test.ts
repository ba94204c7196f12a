/** Who holds a listening port, from Linux's /proc (what DynamoDB Local's readiness check relies on). */
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { holdsListeningSocket } from '#local/process.ts';

describe.skipIf(process.platform !== 'linux')('holdsListeningSocket', () => {
  it('says true for the process that listens, false for another process and for a port nobody listens on', async () => {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    const { port } = server.address() as { port: number };
    const other = spawn('sleep', ['30']);
    try {
      expect(holdsListeningSocket(process.pid, port)).toBe(true);
      expect(holdsListeningSocket(other.pid as number, port)).toBe(false);
    } finally {
      other.kill('SIGKILL');
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
    expect(holdsListeningSocket(process.pid, port)).toBe(false);
  });

  it('says false for a process that has exited, while another process still listens on the port', async () => {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    const { port } = server.address() as { port: number };
    const gone = spawn('true');
    await new Promise((resolve) => gone.once('close', resolve));
    try {
      // A DynamoDB Local that failed to bind and exited: the listener that answered its probe is someone else's.
      expect(holdsListeningSocket(gone.pid as number, port)).toBe(false);
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
