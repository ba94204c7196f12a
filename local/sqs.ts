/**
 * SQS for the local stack: fauxqs's app (its SQS, SNS and S3 wire protocols over Fastify), listening on the address
 * it is given — loopback by default. fauxqs's own `startFauxqs` always listens on 0.0.0.0, which would let any host
 * that reaches this machine read and send every workspace's executor messages; the stack uses none of what
 * `startFauxqs` adds around the app (spies, init files, the programmatic queue helpers), only the port and stop.
 */
import { buildApp } from 'fauxqs';

export interface LocalSqs {
  readonly endpoint: string;
  readonly port: number;
  stop(): Promise<void>;
}

export interface LocalSqsOptions {
  /** 0 picks a free port. */
  port: number;
  /** The address it listens on (default 127.0.0.1). */
  host?: string;
}

export async function startLocalSqs(options: LocalSqsOptions): Promise<LocalSqs> {
  const host = options.host ?? '127.0.0.1';
  const app = buildApp({ logger: false });
  const address = await app.listen({ port: options.port, host });
  const port = Number(new URL(address).port);
  return {
    endpoint: `http://${host}:${port}`,
    port,
    stop: () => app.close(),
  };
}
