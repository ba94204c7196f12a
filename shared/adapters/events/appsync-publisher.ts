/**
 * Publishes to AppSync Events over HTTP: `POST https://<http domain>/event` with `{ channel, events }` (at most 5
 * events), signed with SigV4 for service `appsync` with the function's own credentials (its role is the only
 * principal granted `appsync:EventPublish` on the namespace). Locally the same requests go to the local events
 * server, which checks the stack's credentials. The SigV4 signer is the AWS SDK's own (`@smithy/signature-v4`);
 * its hash is node:crypto's (what `@smithy/hash-node` wraps, not installed on its own here).
 */
import { createHash, createHmac, type Hash, type Hmac } from 'node:crypto';
import { SignatureV4 } from '@smithy/signature-v4';
import { DeltaChannelEnvSchema, parseEnv } from '#shared/config.ts';
import { type DeltaChannel, MAX_EVENTS_PER_PUBLISH } from '#shared/ports/delta-channel.ts';
import { ENV } from '#shared/topology.ts';

export interface AwsCredentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken?: string;
}

/** Why a publish was not taken (status and AppSync's answer). Retrying is the caller's choice; DeltaStream does not. */
export class DeltaPublishError extends Error {
  constructor(
    message: string,
    readonly status: number | undefined,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'DeltaPublishError';
  }
}

/** SHA-256 and HMAC for the SigV4 signer, from node:crypto. */
export class NodeSha256 {
  private hash: Hash | Hmac;
  constructor(private readonly secret?: string | ArrayBuffer | ArrayBufferView) {
    this.hash = this.make();
  }
  private make(): Hash | Hmac {
    if (this.secret === undefined) return createHash('sha256');
    const key =
      typeof this.secret === 'string'
        ? this.secret
        : ArrayBuffer.isView(this.secret)
          ? Buffer.from(this.secret.buffer, this.secret.byteOffset, this.secret.byteLength)
          : Buffer.from(this.secret);
    return createHmac('sha256', key);
  }
  update(data: string | ArrayBuffer | ArrayBufferView): void {
    this.hash.update(
      typeof data === 'string'
        ? data
        : ArrayBuffer.isView(data)
          ? Buffer.from(data.buffer, data.byteOffset, data.byteLength)
          : Buffer.from(data),
    );
  }
  async digest(): Promise<Uint8Array> {
    return new Uint8Array(this.hash.digest());
  }
  reset(): void {
    this.hash = this.make();
  }
}

/** The Lambda runtime's (and the local stack's) credentials, from the standard variables, read per request. */
export function credentialsFromEnv(env: NodeJS.ProcessEnv = process.env): AwsCredentials {
  const accessKeyId = env.AWS_ACCESS_KEY_ID;
  const secretAccessKey = env.AWS_SECRET_ACCESS_KEY;
  if (!accessKeyId || !secretAccessKey) {
    throw new DeltaPublishError('no AWS credentials in the environment to sign the publish with', undefined);
  }
  return {
    accessKeyId,
    secretAccessKey,
    ...(env.AWS_SESSION_TOKEN ? { sessionToken: env.AWS_SESSION_TOKEN } : {}),
  };
}

export interface AppSyncEventsPublisherOptions {
  /** Base URL of the HTTP endpoint (`https://<id>.appsync-api.<region>.amazonaws.com`), `ENV.eventsHttpUrl`. */
  readonly httpUrl: string;
  readonly region: string;
  readonly credentials?: () => AwsCredentials | Promise<AwsCredentials>;
  /** One publish waits at most this long (a stuck publish must not hold the model call's end). */
  readonly timeoutMs?: number;
  readonly fetch?: typeof fetch;
}

export class AppSyncEventsPublisher implements DeltaChannel {
  private readonly url: URL;
  private readonly signer: SignatureV4;

  constructor(private readonly options: AppSyncEventsPublisherOptions) {
    this.url = new URL('/event', options.httpUrl);
    this.signer = new SignatureV4({
      service: 'appsync',
      region: options.region,
      credentials: async () => (options.credentials ?? (() => credentialsFromEnv()))(),
      sha256: NodeSha256,
    });
  }

  async publish(channel: string, events: readonly string[]): Promise<void> {
    if (events.length === 0) return;
    if (events.length > MAX_EVENTS_PER_PUBLISH) {
      throw new DeltaPublishError(`at most ${MAX_EVENTS_PER_PUBLISH} events per publish`, undefined);
    }
    const body = JSON.stringify({ channel, events });
    const signed = await this.signer.sign({
      method: 'POST',
      protocol: this.url.protocol,
      hostname: this.url.hostname,
      ...(this.url.port ? { port: Number(this.url.port) } : {}),
      path: this.url.pathname,
      query: {},
      headers: { host: this.url.host, 'content-type': 'application/json' },
      body,
    });
    let response: Response;
    try {
      response = await (this.options.fetch ?? fetch)(this.url, {
        method: 'POST',
        headers: signed.headers,
        body,
        signal: AbortSignal.timeout(this.options.timeoutMs ?? 5000),
      });
    } catch (error) {
      throw new DeltaPublishError(
        `publish to ${this.url.host} failed: ${(error as Error).message}`,
        undefined,
        {
          cause: error,
        },
      );
    }
    const text = await response.text();
    if (!response.ok) {
      throw new DeltaPublishError(
        `publish refused (${response.status}): ${text.slice(0, 300)}`,
        response.status,
      );
    }
    let failed: unknown[] = [];
    try {
      const answer = JSON.parse(text) as { failed?: unknown[] };
      failed = Array.isArray(answer.failed) ? answer.failed : [];
    } catch {
      // A 2xx without AppSync's JSON answer: nothing says an event failed.
    }
    if (failed.length > 0) {
      throw new DeltaPublishError(
        `${failed.length} of ${events.length} events not published: ${JSON.stringify(failed).slice(0, 300)}`,
        response.status,
      );
    }
  }
}

/**
 * The publisher of this function's channels, or undefined when none is configured (the function then streams
 * nothing: a caller skips DeltaStream, the stream publisher sends no change summaries). Reads
 * `ENV.eventsHttpUrl` and `AWS_REGION` once.
 */
export function deltaChannelFromEnv(
  env: NodeJS.ProcessEnv = process.env,
  options: { timeoutMs?: number } = {},
): AppSyncEventsPublisher | undefined {
  const parsed = parseEnv(DeltaChannelEnvSchema, env);
  const httpUrl = parsed[ENV.eventsHttpUrl];
  if (httpUrl === undefined) return undefined;
  return new AppSyncEventsPublisher({
    httpUrl,
    region: parsed.AWS_REGION ?? 'us-east-1',
    ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
  });
}
