import {
  DeleteRuleCommand,
  DescribeRuleCommand,
  type EventBridgeClient,
  ListRulesCommand,
  ListTargetsByRuleCommand,
  PutRuleCommand,
  PutTargetsCommand,
  RemoveTargetsCommand,
  ResourceNotFoundException,
} from '@aws-sdk/client-eventbridge';
import { QuotaExceededError, RetriableError } from '#shared/domain/errors.ts';
import type { RuleDescription, RuleRegistry, RuleTarget } from '#shared/ports/rule-registry.ts';
import { defaultEventBridgeClient } from './event-bus.ts';

/** EventBridge adapter of the RuleRegistry port, on one bus (the rule manager has one per bus of the pool). */
export class EventBridgeRuleRegistry implements RuleRegistry {
  constructor(
    private readonly busName: string,
    private readonly client: EventBridgeClient = defaultEventBridgeClient(),
  ) {}

  async describe(name: string): Promise<RuleDescription | undefined> {
    try {
      const out = await this.client.send(new DescribeRuleCommand({ Name: name, EventBusName: this.busName }));
      return {
        name,
        arn: out.Arn ?? '',
        pattern: out.EventPattern ?? '',
        state: out.State === 'DISABLED' ? 'DISABLED' : 'ENABLED',
        description: out.Description ?? '',
      };
    } catch (error) {
      if (error instanceof ResourceNotFoundException) return undefined;
      throw classify(error);
    }
  }

  async put(rule: { name: string; pattern: string; description: string }): Promise<string> {
    const out = await this.client
      .send(
        new PutRuleCommand({
          Name: rule.name,
          EventBusName: this.busName,
          EventPattern: rule.pattern,
          Description: rule.description,
          State: 'ENABLED',
        }),
      )
      .catch((error: unknown) => {
        // Creating a rule on a bus at its "Rules per event bus" quota (the SDK has already retried it, as it
        // retries every LimitExceededException): the rule manager tries another bus of the pool.
        if (error instanceof Error && error.name === 'LimitExceededException') {
          const quota = /pattern/i.test(error.message) ? 'Event pattern size' : 'Rules per event bus';
          throw new QuotaExceededError(quota, `EventBridge bus ${this.busName}: ${error.message}`, {
            cause: error,
          });
        }
        throw classify(error);
      });
    return out.RuleArn ?? '';
  }

  async targets(name: string): Promise<RuleTarget[]> {
    try {
      const out = await this.client.send(
        new ListTargetsByRuleCommand({ Rule: name, EventBusName: this.busName }),
      );
      return (out.Targets ?? []).map((t) => ({
        id: t.Id ?? '',
        arn: t.Arn ?? '',
        ...(t.InputTransformer
          ? {
              inputTransformer: {
                InputPathsMap: t.InputTransformer.InputPathsMap ?? {},
                InputTemplate: t.InputTransformer.InputTemplate ?? '',
              },
            }
          : {}),
        ...(t.DeadLetterConfig?.Arn ? { deadLetterArn: t.DeadLetterConfig.Arn } : {}),
        ...(t.SqsParameters?.MessageGroupId ? { messageGroupId: t.SqsParameters.MessageGroupId } : {}),
        ...(t.RetryPolicy
          ? {
              // EventBridge's own defaults stand in for a field it leaves out.
              retryPolicy: {
                maximumRetryAttempts: t.RetryPolicy.MaximumRetryAttempts ?? 185,
                maximumEventAgeSeconds: t.RetryPolicy.MaximumEventAgeInSeconds ?? 86_400,
              },
            }
          : {}),
      }));
    } catch (error) {
      if (error instanceof ResourceNotFoundException) return [];
      throw classify(error);
    }
  }

  async putTargets(name: string, targets: readonly RuleTarget[]): Promise<void> {
    const out = await this.client
      .send(
        new PutTargetsCommand({
          Rule: name,
          EventBusName: this.busName,
          Targets: targets.map((t) => ({
            Id: t.id,
            Arn: t.arn,
            ...(t.inputTransformer ? { InputTransformer: t.inputTransformer } : {}),
            ...(t.deadLetterArn ? { DeadLetterConfig: { Arn: t.deadLetterArn } } : {}),
            ...(t.messageGroupId ? { SqsParameters: { MessageGroupId: t.messageGroupId } } : {}),
            ...(t.retryPolicy
              ? {
                  RetryPolicy: {
                    MaximumRetryAttempts: t.retryPolicy.maximumRetryAttempts,
                    MaximumEventAgeInSeconds: t.retryPolicy.maximumEventAgeSeconds,
                  },
                }
              : {}),
          })),
        }),
      )
      .catch((error: unknown) => {
        throw classify(error);
      });
    if ((out.FailedEntryCount ?? 0) > 0) {
      throw new RetriableError(`PutTargets failed for ${name}: ${JSON.stringify(out.FailedEntries)}`);
    }
  }

  async removeTargets(name: string, ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return;
    try {
      await this.client.send(
        new RemoveTargetsCommand({ Rule: name, EventBusName: this.busName, Ids: [...ids] }),
      );
    } catch (error) {
      if (error instanceof ResourceNotFoundException) return;
      throw classify(error);
    }
  }

  async delete(name: string): Promise<void> {
    try {
      await this.client.send(new DeleteRuleCommand({ Name: name, EventBusName: this.busName }));
    } catch (error) {
      if (error instanceof ResourceNotFoundException) return;
      throw classify(error);
    }
  }

  async list(prefix: string): Promise<RuleDescription[]> {
    const rules: RuleDescription[] = [];
    let token: string | undefined;
    do {
      const out = await this.client
        .send(
          new ListRulesCommand({
            EventBusName: this.busName,
            NamePrefix: prefix,
            NextToken: token,
            Limit: 100,
          }),
        )
        .catch((error: unknown) => {
          throw classify(error);
        });
      for (const r of out.Rules ?? []) {
        rules.push({
          name: r.Name ?? '',
          arn: r.Arn ?? '',
          pattern: r.EventPattern ?? '',
          state: r.State === 'DISABLED' ? 'DISABLED' : 'ENABLED',
          description: r.Description ?? '',
        });
      }
      token = out.NextToken;
    } while (token);
    return rules;
  }
}

const RETRIABLE = new Set([
  'ThrottlingException',
  'ConcurrentModificationException',
  'InternalException',
  'LimitExceededException',
]);

function classify(error: unknown): unknown {
  if (error instanceof Error && RETRIABLE.has(error.name))
    return new RetriableError(`EventBridge: ${error.message}`, { cause: error });
  return error;
}
