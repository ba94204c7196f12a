/**
 * Delivers matched events to rule targets after the PutEvents response, as EventBridge does. Only SQS queue
 * targets (`arn:aws:sqs:<region>:<account>:<queue>`); queue URLs come from GetQueueUrl, cached. A target's
 * `SqsParameters.MessageGroupId` is sent as the message group, on FIFO and on (fair) standard queues.
 *
 * Failures follow EventBridge's "Event retry policy and using dead-letter queues": an error retrying cannot fix (no
 * queue, no permission, a bad parameter) goes straight to the dead-letter queue; others are retried with
 * exponential back-off until the RetryPolicy runs out (`MaximumRetryAttempts`, default 185, or
 * `MaximumEventAgeInSeconds`, default 86400), locally also capped at `maxAttempts` (default 5) from `baseDelayMs`
 * (default 100 ms), so a dead letter arrives in seconds. Then a `DeadLetterConfig` gets the original event (not the
 * transformed input) with EventBridge's attributes RULE_ARN, TARGET_ARN, ERROR_CODE (NO_RESOURCE, NO_PERMISSIONS,
 * INVALID_PARAMETER, THROTTLING, TIMEOUT, CONNECTION_FAILURE, SDK_CLIENT_ERROR), ERROR_MESSAGE,
 * EXHAUSTED_RETRY_CONDITION (which limit ran out) and RETRY_ATTEMPTS; without one, the event is logged and dropped.
 */
import { GetQueueUrlCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { targetInput } from './input-transformer.ts';
import type { Rule, Target } from './state.ts';

/** The message attribute carrying a fair queue's message group to the local poller (`sqs-poller.ts`). */
export const FAIR_QUEUE_GROUP_ATTRIBUTE = 'crumbs-fair-queue-group';

export interface DeliveryStats {
  /** Deliveries to targets that succeeded. */
  delivered: number;
  /** Deliveries that failed every attempt. */
  failed: number;
  /** Attempts that were retried. */
  retries: number;
  /** Failed deliveries sent to a dead-letter queue. */
  deadLettered: number;
  /** Deliveries scheduled but not finished. */
  inFlight: number;
}

export interface DeliveryOptions {
  sqsEndpoint: string;
  region: string;
  maxAttempts?: number;
  baseDelayMs?: number;
  concurrency?: number;
  log?: (line: string) => void;
}

export interface Delivery {
  event: Record<string, unknown>;
  rule: Rule;
  target: Target;
  ingestionTime: string;
}

interface SqsArn {
  region: string;
  account: string;
  queue: string;
}

export function parseSqsArn(arn: string): SqsArn | undefined {
  const m = /^arn:aws[\w-]*:sqs:([^:]+):(\d{12}):([A-Za-z0-9_-]{1,80}(?:\.fifo)?)$/.exec(arn);
  return m ? { region: m[1]!, account: m[2]!, queue: m[3]! } : undefined;
}

/** EventBridge's RetryPolicy defaults (24 hours, 185 retries). */
const DEFAULT_MAXIMUM_RETRY_ATTEMPTS = 185;
const DEFAULT_MAXIMUM_EVENT_AGE_SECONDS = 86_400;

export interface DeliveryFailure {
  /** EventBridge's ERROR_CODE for the failure. */
  readonly code: string;
  readonly message: string;
  /** False for errors EventBridge does not retry (the target is gone, no permission, a bad parameter). */
  readonly retriable: boolean;
  readonly exhausted?: 'MaximumRetryAttempts' | 'MaximumEventAgeInSeconds';
}

const NOT_RETRIED: Readonly<Record<string, string>> = {
  QueueDoesNotExist: 'NO_RESOURCE',
  'AWS.SimpleQueueService.NonExistentQueue': 'NO_RESOURCE',
  AccessDenied: 'NO_PERMISSIONS',
  AccessDeniedException: 'NO_PERMISSIONS',
  KmsAccessDenied: 'NO_PERMISSIONS',
  InvalidParameterValue: 'INVALID_PARAMETER',
  InvalidMessageContents: 'INVALID_PARAMETER',
};

/** An SQS failure as EventBridge reports it in a dead letter, and whether it retries it. */
export function classifyDeliveryError(error: unknown): DeliveryFailure {
  const e = error as { name?: unknown; code?: unknown; message?: unknown; Code?: unknown };
  const name = typeof e?.name === 'string' ? e.name : 'Error';
  const code = typeof e?.Code === 'string' ? e.Code : typeof e?.code === 'string' ? e.code : name;
  const message = typeof e?.message === 'string' ? e.message : String(error);
  const permanent = NOT_RETRIED[name] ?? NOT_RETRIED[code];
  if (permanent) return { code: permanent, message, retriable: false };
  if (/throttl|RequestThrottled|TooManyRequests|SlowDown/i.test(`${name} ${code}`))
    return { code: 'THROTTLING', message, retriable: true };
  if (/Timeout|ETIMEDOUT/i.test(`${name} ${code}`)) return { code: 'TIMEOUT', message, retriable: true };
  if (/ECONNREFUSED|ECONNRESET|EPIPE|ENOTFOUND|EAI_AGAIN|socket hang up/i.test(`${code} ${message}`))
    return { code: 'CONNECTION_FAILURE', message, retriable: true };
  return { code: 'SDK_CLIENT_ERROR', message, retriable: true };
}

export class Deliverer {
  private readonly sqs: SQSClient;
  private readonly urls = new Map<string, Promise<string>>();
  private readonly pending = new Set<Promise<void>>();
  private readonly waiting: Array<() => void> = [];
  private running = 0;
  private readonly maxAttempts: number;
  private readonly baseDelayMs: number;
  private readonly concurrency: number;
  readonly stats: DeliveryStats = { delivered: 0, failed: 0, retries: 0, deadLettered: 0, inFlight: 0 };

  constructor(private readonly options: DeliveryOptions) {
    this.sqs = new SQSClient({
      endpoint: options.sqsEndpoint,
      region: options.region,
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      maxAttempts: 1,
      // Queue URLs name hosts like sqs.us-east-1.localhost, which Node does not resolve: use the endpoint.
      useQueueUrlAsEndpoint: false,
    });
    this.maxAttempts = options.maxAttempts ?? 5;
    this.baseDelayMs = options.baseDelayMs ?? 100;
    this.concurrency = options.concurrency ?? 64;
  }

  /** Schedules a delivery; it starts on a later turn of the event loop (after the API response is written). */
  schedule(delivery: Delivery): void {
    this.stats.inFlight++;
    const task = new Promise<void>((resolve) => setImmediate(resolve))
      .then(() => this.run(delivery))
      .catch((error: unknown) => this.options.log?.(`eventbridge: delivery crashed: ${String(error)}`))
      .finally(() => {
        this.stats.inFlight--;
        this.pending.delete(task);
      });
    this.pending.add(task);
  }

  /** Resolves when no delivery is scheduled or running. */
  async idle(): Promise<void> {
    while (this.pending.size > 0) await Promise.allSettled([...this.pending]);
  }

  close(): void {
    this.sqs.destroy();
  }

  private async slot<T>(fn: () => Promise<T>): Promise<T> {
    if (this.running >= this.concurrency) await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.running++;
    try {
      return await fn();
    } finally {
      this.running--;
      this.waiting.shift()?.();
    }
  }

  private async run({ event, rule, target, ingestionTime }: Delivery): Promise<void> {
    const arn = parseSqsArn(target.Arn);
    if (!arn) {
      this.stats.failed++;
      this.options.log?.(
        `eventbridge: rule ${rule.Name} target ${target.Id}: ${target.Arn} is not an SQS queue ARN; only SQS targets are delivered locally`,
      );
      return;
    }
    const body = targetInput(target, event, { ruleArn: rule.Arn, ruleName: rule.Name, ingestionTime });
    const policy = {
      retries: target.RetryPolicy?.MaximumRetryAttempts ?? DEFAULT_MAXIMUM_RETRY_ATTEMPTS,
      maxAgeMs: (target.RetryPolicy?.MaximumEventAgeInSeconds ?? DEFAULT_MAXIMUM_EVENT_AGE_SECONDS) * 1000,
    };
    const putAt = Date.parse(ingestionTime);
    const attempts = Math.min(this.maxAttempts, 1 + policy.retries);
    let failure: DeliveryFailure | undefined;
    let retries = 0;
    for (let attempt = 1; ; attempt++) {
      try {
        await this.slot(() => this.send(arn, target.Arn, body, event, target));
        this.stats.delivered++;
        return;
      } catch (error) {
        this.urls.delete(target.Arn);
        failure = classifyDeliveryError(error);
        if (!failure.retriable) break;
        if (attempt >= attempts) {
          failure = { ...failure, exhausted: 'MaximumRetryAttempts' };
          break;
        }
        const delay = this.baseDelayMs * 2 ** (attempt - 1);
        if (Date.now() + delay - putAt > policy.maxAgeMs) {
          failure = { ...failure, exhausted: 'MaximumEventAgeInSeconds' };
          break;
        }
        this.stats.retries++;
        retries++;
        await new Promise((resolve) => setTimeout(resolve, delay));
      }
    }
    this.stats.failed++;
    const dlq = target.DeadLetterConfig?.Arn;
    const dlqArn = dlq === undefined ? undefined : parseSqsArn(dlq);
    if (dlq !== undefined && dlqArn !== undefined) {
      try {
        await this.slot(() =>
          this.send(dlqArn, dlq, JSON.stringify(event), event, undefined, {
            RULE_ARN: rule.Arn,
            TARGET_ARN: target.Arn,
            ERROR_CODE: failure.code,
            ERROR_MESSAGE: failure.message,
            ...(failure.exhausted ? { EXHAUSTED_RETRY_CONDITION: failure.exhausted } : {}),
            RETRY_ATTEMPTS: String(retries),
          }),
        );
        this.stats.deadLettered++;
        this.options.log?.(
          `eventbridge: event ${String(event.id)} to ${target.Arn} failed (${failure.code}: ${failure.message}); sent to ${dlq}`,
        );
        return;
      } catch (error) {
        this.urls.delete(dlq);
        this.options.log?.(`eventbridge: dead-letter queue ${dlq} failed: ${(error as Error).message}`);
      }
    }
    this.options.log?.(
      `eventbridge: dropped event ${String(event.id)} for rule ${rule.Name} target ${target.Id} after ${retries + 1} attempts: ${failure.message}`,
    );
  }

  private queueUrl(arn: SqsArn, key: string): Promise<string> {
    let url = this.urls.get(key);
    if (!url) {
      url = this.sqs.send(new GetQueueUrlCommand({ QueueName: arn.queue })).then((r) => {
        if (!r.QueueUrl) throw new Error(`no URL for queue ${arn.queue}`);
        return r.QueueUrl;
      });
      url.catch(() => this.urls.delete(key));
      this.urls.set(key, url);
    }
    return url;
  }

  private async send(
    arn: SqsArn,
    key: string,
    body: string,
    event: Record<string, unknown>,
    target: Target | undefined,
    attributes?: Record<string, string>,
  ): Promise<void> {
    const QueueUrl = await this.queueUrl(arn, key);
    const fifo = arn.queue.endsWith('.fifo');
    const group = target?.SqsParameters?.MessageGroupId;
    // A standard queue with a message group is an SQS fair queue. The emulator keeps the group on FIFO queues
    // only, so it also rides in a message attribute that the local poller turns back into the record's
    // `MessageGroupId` (and removes), as Lambda shows it for a fair queue.
    const carried = !fifo && group !== undefined ? { [FAIR_QUEUE_GROUP_ATTRIBUTE]: group } : {};
    const all = { ...(attributes ?? {}), ...carried };
    await this.sqs.send(
      new SendMessageCommand({
        QueueUrl,
        MessageBody: body,
        ...(fifo
          ? { MessageGroupId: group ?? 'eventbridge', MessageDeduplicationId: String(event.id) }
          : group !== undefined
            ? { MessageGroupId: group }
            : {}),
        ...(Object.keys(all).length > 0
          ? {
              MessageAttributes: Object.fromEntries(
                Object.entries(all).map(([k, v]) => [k, { DataType: 'String', StringValue: v }]),
              ),
            }
          : {}),
      }),
    );
  }
}
