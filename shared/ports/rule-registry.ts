/** The rules port: what the rule manager needs from EventBridge to keep one rule per definition. */
export interface RetryPolicy {
  maximumRetryAttempts: number;
  maximumEventAgeSeconds: number;
}

export interface RuleTarget {
  id: string;
  arn: string;
  inputTransformer?: { InputPathsMap: Record<string, string>; InputTemplate: string };
  /** SQS queue ARN for events EventBridge could not deliver (DeadLetterConfig.Arn). */
  deadLetterArn?: string;
  /** How long EventBridge retries a failed delivery before dead-lettering it. */
  retryPolicy?: RetryPolicy;
  /**
   * SqsParameters.MessageGroupId: the tenant of an SQS fair queue (or the group of a FIFO queue). A static string
   * per target: EventBridge takes no input path here, so each rule's target carries its definition's workspace.
   */
  messageGroupId?: string;
}

export interface RuleDescription {
  name: string;
  arn: string;
  /** The pattern as stored (JSON text). */
  pattern: string;
  state: 'ENABLED' | 'DISABLED';
  description: string;
}

export interface RuleRegistry {
  describe(name: string): Promise<RuleDescription | undefined>;
  /**
   * Creates or replaces the rule; returns its ARN. A bus at its rules quota refuses a new rule with
   * `QuotaExceededError`.
   */
  put(rule: { name: string; pattern: string; description: string }): Promise<string>;
  targets(name: string): Promise<RuleTarget[]>;
  putTargets(name: string, targets: readonly RuleTarget[]): Promise<void>;
  removeTargets(name: string, ids: readonly string[]): Promise<void>;
  delete(name: string): Promise<void>;
  list(prefix: string): Promise<RuleDescription[]>;
}
