/**
 * The message-visibility port: when a consumer fails an SQS message, it says how soon the message comes back
 * (SQS `ChangeMessageVisibility` on the received message), instead of leaving it invisible for the queue's whole
 * visibility timeout. The receive count still grows with every delivery, so the queue's redrive policy
 * (`maxReceiveCount`) still moves a message that keeps failing to its DLQ. Adapter: `shared/adapters/sqs/`.
 */

/** What identifies a received message: the queue it came from (the event's ARN) and its receipt handle. */
export interface ReceivedMessage {
  eventSourceARN: string;
  receiptHandle: string;
}

export interface MessageVisibility {
  /** Makes each message visible again after its `seconds` (0..43200). */
  delay(messages: readonly { message: ReceivedMessage; seconds: number }[]): Promise<void>;
}
