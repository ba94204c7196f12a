/**
 * SQS adapter of the message-visibility port: `ChangeMessageVisibilityBatch` per queue, the queue URL looked up
 * once per queue with `GetQueueUrl` (name and account from the event source ARN). Looking the URL up rather than
 * deriving it from the ARN keeps the handler the same on AWS and against any SQS endpoint (the local stack's
 * fauxqs names its queue URLs after its own host); both calls are covered by the event source's consume grant.
 *
 * The SQS client is loaded on the first failure only (a dynamic import): a function whose messages succeed never
 * pays for loading `@aws-sdk/client-sqs` at cold start.
 */
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { MessageVisibility, ReceivedMessage } from '#shared/ports/message-visibility.ts';

const MAX_ENTRIES_PER_CALL = 10;

export class SqsMessageVisibility implements MessageVisibility {
  private client: SQSClient | undefined;
  private readonly queueUrls = new Map<string, Promise<string>>();

  constructor(options: { client?: SQSClient } = {}) {
    this.client = options.client;
  }

  async delay(messages: readonly { message: ReceivedMessage; seconds: number }[]): Promise<void> {
    const sqs = await import('@aws-sdk/client-sqs');
    // The endpoint comes from the standard AWS environment; the queue URL is not used as the endpoint.
    this.client ??= new sqs.SQSClient({ useQueueUrlAsEndpoint: false });
    const client = this.client;
    const byQueue = new Map<string, { message: ReceivedMessage; seconds: number }[]>();
    for (const m of messages) {
      byQueue.set(m.message.eventSourceARN, [...(byQueue.get(m.message.eventSourceARN) ?? []), m]);
    }
    await Promise.all(
      [...byQueue].map(async ([arn, entries]) => {
        const queueUrl = await this.queueUrl(client, sqs, arn);
        for (let i = 0; i < entries.length; i += MAX_ENTRIES_PER_CALL) {
          const chunk = entries.slice(i, i + MAX_ENTRIES_PER_CALL);
          const out = await client.send(
            new sqs.ChangeMessageVisibilityBatchCommand({
              QueueUrl: queueUrl,
              Entries: chunk.map((e, n) => ({
                Id: String(n),
                ReceiptHandle: e.message.receiptHandle,
                VisibilityTimeout: Math.max(0, Math.min(43_200, Math.round(e.seconds))),
              })),
            }),
          );
          const failed = out.Failed ?? [];
          if (failed.length > 0) {
            throw new Error(
              `SQS refused ${failed.length} visibility change(s): ${failed.map((f) => f.Message ?? f.Code).join('; ')}`,
            );
          }
        }
      }),
    );
  }

  private queueUrl(
    client: SQSClient,
    sqs: typeof import('@aws-sdk/client-sqs'),
    arn: string,
  ): Promise<string> {
    let url = this.queueUrls.get(arn);
    if (url === undefined) {
      const [, , , , account, name] = arn.split(':');
      url = client
        .send(new sqs.GetQueueUrlCommand({ QueueName: name, QueueOwnerAWSAccountId: account }))
        .then((out) => {
          if (!out.QueueUrl) throw new Error(`SQS has no URL for ${arn}`);
          return out.QueueUrl;
        });
      // A failed lookup is not cached: the next failure asks again.
      url.catch(() => this.queueUrls.delete(arn));
      this.queueUrls.set(arn, url);
    }
    return url;
  }
}
