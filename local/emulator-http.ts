/**
 * The scaffolding crumbs' local AWS emulators (EventBridge, Scheduler) share: a node:http server on loopback that
 * turns a crash into the service's 500, a request body read up to a cap, the JSON-object check of a request, a
 * JSON reply with a request id, name-ordered pages with a NextToken, and the state file loaded at start and
 * replaced atomically on every change. Each emulator keeps its own wire protocol (routing, error shapes, content
 * type, the order of its listings); only the plumbing is here.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname } from 'node:path';

/** What every emulator is started with. */
export interface EmulatorOptions {
  /** 0 = any free port. */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  /** Default us-east-1. */
  region?: string;
  /** Default 000000000000. */
  accountId?: string;
  /** Where SQS targets are delivered. */
  sqsEndpoint: string;
  /** The emulator's state is loaded from and saved to this JSON file. */
  stateFile?: string;
  log?: (line: string) => void;
}

export interface EmulatorServer {
  readonly endpoint: string;
  readonly port: number;
  /** Stops accepting, drops open connections, and resolves when the server is closed. */
  close(): Promise<void>;
}

/**
 * Listens on `host` (default 127.0.0.1) and `port` (0 = any free one). `handle` serves a request; when it throws,
 * `crashed` logs it and, unless a reply has started, answers with the service's own internal error.
 */
export async function startEmulatorServer(options: {
  port?: number | undefined;
  host?: string | undefined;
  handle: (req: IncomingMessage, res: ServerResponse) => Promise<void>;
  crashed: (res: ServerResponse, error: unknown) => void;
}): Promise<EmulatorServer> {
  const server: Server = createServer((req, res) => {
    options.handle(req, res).catch((error: unknown) => options.crashed(res, error));
  });
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  return {
    endpoint: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** The request body as text, or undefined once it grows past `maxBytes` (the caller answers, then destroys). */
export async function readBody(req: IncomingMessage, maxBytes: number): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > maxBytes) return undefined;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** A request body as the JSON object the APIs take (blank = `{}`), or the problem with it in AWS's words. */
export function parseJsonObject(text: string): { input: Record<string, unknown> } | { problem: string } {
  let input: unknown = {};
  if (text.trim() !== '') {
    try {
      input = JSON.parse(text);
    } catch {
      return { problem: 'Request body is not valid JSON.' };
    }
  }
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    return { problem: 'Request body must be a JSON object.' };
  }
  return { input: input as Record<string, unknown> };
}

/** A JSON reply with a fresh request id, and the error type header that AWS SDKs read the error code from. */
export function sendJson(
  res: ServerResponse,
  status: number,
  contentType: string,
  body: unknown,
  errorType?: string,
): void {
  const text = JSON.stringify(body);
  const headers: Record<string, string | number> = {
    'content-type': contentType,
    'content-length': Buffer.byteLength(text),
    'x-amzn-requestid': randomUUID(),
  };
  if (errorType !== undefined) headers['x-amzn-errortype'] = errorType;
  res.writeHead(status, headers);
  res.end(text);
}

/**
 * One page of a name-ordered listing: the items sorted by `order` over their names, those after the name the
 * NextToken holds, at most `max`; the NextToken handed out is the last name returned, base64url-encoded.
 */
export function pageByName<T>(
  items: readonly T[],
  nameOf: (item: T) => string,
  order: (a: string, b: string) => number,
  max: number,
  nextToken: string | undefined,
): { items: T[]; NextToken?: string } {
  const after = nextToken === undefined ? undefined : Buffer.from(nextToken, 'base64url').toString('utf8');
  const sorted = [...items].sort((a, b) => order(nameOf(a), nameOf(b)));
  const rest = after === undefined ? sorted : sorted.filter((item) => nameOf(item) > after);
  const slice = rest.slice(0, max);
  const last = slice.at(-1);
  return rest.length > max && last !== undefined
    ? { items: slice, NextToken: Buffer.from(nameOf(last), 'utf8').toString('base64url') }
    : { items: slice };
}

/** The parsed state file, or undefined when there is none yet. */
export function loadStateFile(path: string | undefined): unknown {
  if (!path) return undefined;
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  return JSON.parse(text);
}

/** Replaces the state file as a whole (write, then rename), so a crash never leaves half a file. */
export function saveStateFile(path: string | undefined, state: unknown): void {
  if (!path) return;
  mkdirSync(dirname(path), { recursive: true });
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(state, null, 2));
  renameSync(tmp, path);
}
