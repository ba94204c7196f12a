/**
 * Buses, rules and targets of the local EventBridge, with EventBridge's validation and error codes, and a
 * RuleIndex per bus holding only the enabled rules that have an event pattern (scheduled rules are kept but
 * never fire locally). Serialisable so the service can persist it.
 */
import { InvalidEventPatternError, validateEventPattern } from '#shared/routing/event-pattern.ts';
import { RuleIndex } from '#shared/routing/rule-index.ts';
import { topology } from '#shared/topology.ts';
import { pageByName } from '../emulator-http.ts';
import {
  busNotFound,
  constraintViolation,
  EventBridgeError,
  invalidEventPattern,
  ruleNotFound,
  validation,
} from './errors.ts';
import { RESERVED_VARIABLES, type TargetInputConfig } from './input-transformer.ts';
import { JsonPathError, parseJsonPath } from './json-path.ts';

export const DEFAULT_BUS = 'default';

/**
 * EventBridge's quotas that the local service enforces, with AWS's defaults ("Amazon EventBridge quotas" in the
 * EventBridge user guide): rules per event bus 300 (100 in af-south-1 and eu-south-1; adjustable), targets per
 * rule 5, event pattern size 2048 characters (adjustable up to 4096, the PutRule API maximum), and 1 MB of
 * PutEvents entries per request (256 KB until January 2026) (sized as in "Calculating PutEvents event entry size"). Each can be set to match
 * an account whose quotas were raised (`crumbs dev --rules-per-bus`, `CRUMBS_RULES_PER_BUS`, …).
 */
export interface EventBridgeQuotas {
  rulesPerBus: number;
  targetsPerRule: number;
  eventPatternSize: number;
  putEventsBytes: number;
}

export const DEFAULT_QUOTAS: Readonly<EventBridgeQuotas> = Object.freeze({
  rulesPerBus: topology.bus.pool.rulesPerBus,
  targetsPerRule: 5,
  eventPatternSize: 2048,
  putEventsBytes: 1024 * 1024,
});

/** AWS answers every quota refusal of PutRule and PutTargets with this code and wording. */
export const limitExceeded = (): EventBridgeError =>
  new EventBridgeError(
    'LimitExceededException',
    'The requested resource exceeds the maximum number allowed.',
  );
const NAME_PATTERN = /^[.\-_A-Za-z0-9]+$/;
const BUS_NAME_PATTERN = /^[/.\-_A-Za-z0-9]+$/;

export type RuleState = 'ENABLED' | 'DISABLED' | 'ENABLED_WITH_ALL_CLOUDTRAIL_MANAGEMENT_EVENTS';

export interface Target extends TargetInputConfig {
  Id: string;
  Arn: string;
  RoleArn?: string;
  DeadLetterConfig?: { Arn?: string };
  RetryPolicy?: { MaximumRetryAttempts?: number; MaximumEventAgeInSeconds?: number };
  SqsParameters?: { MessageGroupId?: string };
}

export interface Rule {
  Name: string;
  Arn: string;
  EventBusName: string;
  EventPattern?: string;
  ScheduleExpression?: string;
  State: RuleState;
  Description?: string;
  RoleArn?: string;
  CreatedBy: string;
  targets: Target[];
}

export interface Bus {
  Name: string;
  Arn: string;
  Description?: string;
  CreationTime: number;
  LastModifiedTime: number;
  rules: Map<string, Rule>;
  index: RuleIndex<string>;
}

export interface SerializedState {
  version: 1;
  buses: Array<Omit<Bus, 'rules' | 'index'> & { rules: Rule[] }>;
}

const isEnabled = (rule: Rule) => rule.State !== 'DISABLED';

/** A page of a name-ordered listing; the NextToken is the last name returned, base64url-encoded. */
export function page<T>(
  items: T[],
  nameOf: (item: T) => string,
  limit: unknown,
  nextToken: unknown,
): { items: T[]; NextToken?: string } {
  const max = optionalInteger(limit, 'limit', 1, 100) ?? 100;
  if (nextToken !== undefined && typeof nextToken !== 'string') throw validation('The NextToken is invalid.');
  return pageByName(items, nameOf, (a, b) => (a < b ? -1 : a > b ? 1 : 0), max, nextToken);
}

function optionalInteger(value: unknown, member: string, min: number, max: number): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw constraintViolation(value, member, `Member must have value between ${min} and ${max}`);
  }
  return value;
}

function optionalString(value: unknown, member: string, maxLength: number): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw constraintViolation(value, member, 'Member must be a string');
  if (value.length > maxLength) {
    throw constraintViolation(value, member, `Member must have length less than or equal to ${maxLength}`);
  }
  return value;
}

function requiredName(value: unknown, member: string, pattern = NAME_PATTERN, maxLength = 64): string {
  if (typeof value !== 'string' || value.length === 0) {
    throw constraintViolation(value ?? 'null', member, 'Member must not be null');
  }
  if (value.length > maxLength) {
    throw constraintViolation(value, member, `Member must have length less than or equal to ${maxLength}`);
  }
  if (!pattern.test(value)) {
    throw constraintViolation(
      value,
      member,
      `Member must satisfy regular expression pattern: ${pattern.source.slice(1, -1)}`,
    );
  }
  return value;
}

/** Parses and validates an event pattern with the project's matcher. */
export function parseEventPattern(text: unknown): unknown {
  if (typeof text !== 'string') throw invalidEventPattern('Filter is not an object');
  let pattern: unknown;
  try {
    pattern = JSON.parse(text);
  } catch (error) {
    throw invalidEventPattern((error as Error).message);
  }
  try {
    validateEventPattern(pattern);
  } catch (error) {
    if (error instanceof InvalidEventPatternError) throw invalidEventPattern(error.message);
    throw error;
  }
  return pattern;
}

export class EventBridgeState {
  readonly region: string;
  readonly accountId: string;
  readonly quotas: Readonly<EventBridgeQuotas>;
  private readonly buses = new Map<string, Bus>();

  constructor(region: string, accountId: string, quotas: Partial<EventBridgeQuotas> = {}) {
    this.region = region;
    this.accountId = accountId;
    this.quotas = Object.freeze({ ...DEFAULT_QUOTAS, ...quotas });
    this.addBus(DEFAULT_BUS);
  }

  busArn(name: string): string {
    return `arn:aws:events:${this.region}:${this.accountId}:event-bus/${name}`;
  }

  ruleArn(bus: string, rule: string): string {
    const path = bus === DEFAULT_BUS ? rule : `${bus}/${rule}`;
    return `arn:aws:events:${this.region}:${this.accountId}:rule/${path}`;
  }

  /** Accepts a bus name or ARN (absent means the default bus). */
  busName(value: unknown): string {
    if (value === undefined || value === null) return DEFAULT_BUS;
    if (typeof value !== 'string' || value.length === 0) {
      throw constraintViolation(value, 'eventBusName', 'Member must have length greater than or equal to 1');
    }
    const arn = /^arn:aws[\w-]*:events:[^:]*:[^:]*:event-bus\/(.+)$/.exec(value);
    return arn ? arn[1]! : value;
  }

  bus(nameOrArn: unknown): Bus {
    const name = this.busName(nameOrArn);
    const bus = this.buses.get(name);
    if (!bus) throw busNotFound(name);
    return bus;
  }

  findBus(nameOrArn: unknown): Bus | undefined {
    return this.buses.get(this.busName(nameOrArn));
  }

  rule(nameValue: unknown, busValue: unknown): Rule {
    const bus = this.bus(busValue);
    const name = requiredName(nameValue, 'name');
    const rule = bus.rules.get(name);
    if (!rule) throw ruleNotFound(name, bus.Name);
    return rule;
  }

  private addBus(name: string, description?: string): Bus {
    const now = Math.floor(Date.now() / 1000);
    const bus: Bus = {
      Name: name,
      Arn: this.busArn(name),
      ...(description !== undefined ? { Description: description } : {}),
      CreationTime: now,
      LastModifiedTime: now,
      rules: new Map(),
      index: new RuleIndex<string>(),
    };
    this.buses.set(name, bus);
    return bus;
  }

  createEventBus(input: Record<string, unknown>): Bus {
    const name = requiredName(input.Name, 'name', BUS_NAME_PATTERN, 256);
    if (name.startsWith('aws.')) throw validation("Event bus name must not start with 'aws.'.");
    if (this.buses.has(name)) {
      throw new EventBridgeError('ResourceAlreadyExistsException', `Event bus ${name} already exists.`);
    }
    return this.addBus(name, optionalString(input.Description, 'description', 512));
  }

  deleteEventBus(input: Record<string, unknown>): void {
    const name = requiredName(input.Name, 'name', BUS_NAME_PATTERN, 256);
    if (name === DEFAULT_BUS) throw validation('Cannot delete event bus default.');
    this.buses.delete(name);
  }

  listEventBuses(): Bus[] {
    return [...this.buses.values()];
  }

  putRule(input: Record<string, unknown>): Rule {
    const name = requiredName(input.Name, 'name');
    const bus = this.bus(input.EventBusName);
    const eventPattern = optionalString(input.EventPattern, 'eventPattern', 4096);
    const schedule = optionalString(input.ScheduleExpression, 'scheduleExpression', 256);
    if (eventPattern === undefined && schedule === undefined) {
      throw validation('Parameter(s) EventPattern or ScheduleExpression must be specified.');
    }
    if (schedule !== undefined && bus.Name !== DEFAULT_BUS) {
      throw validation('ScheduleExpression is supported only on the default event bus.');
    }
    if (schedule !== undefined && !/^(rate|cron)\(.+\)$/.test(schedule)) {
      throw validation('Parameter ScheduleExpression is not valid.');
    }
    // The pattern size quota: AWS documents the quota, not the error; a refusal beyond a quota is
    // LimitExceededException everywhere else in PutRule and PutTargets, so it is here too, saying which quota.
    if (eventPattern !== undefined && eventPattern.length > this.quotas.eventPatternSize) {
      throw new EventBridgeError(
        'LimitExceededException',
        `Event pattern is ${eventPattern.length} characters; the maximum is ${this.quotas.eventPatternSize} (the "Event pattern size" quota).`,
      );
    }
    const pattern = eventPattern === undefined ? undefined : parseEventPattern(eventPattern);
    // Rules per event bus: only creating a rule counts; replacing one does not.
    if (!bus.rules.has(name) && bus.rules.size >= this.quotas.rulesPerBus) throw limitExceeded();
    const state = input.State ?? 'ENABLED';
    if (
      state !== 'ENABLED' &&
      state !== 'DISABLED' &&
      state !== 'ENABLED_WITH_ALL_CLOUDTRAIL_MANAGEMENT_EVENTS'
    ) {
      throw constraintViolation(
        state,
        'state',
        'Member must satisfy enum value set: [ENABLED, DISABLED, ENABLED_WITH_ALL_CLOUDTRAIL_MANAGEMENT_EVENTS]',
      );
    }
    const description = optionalString(input.Description, 'description', 512);
    const roleArn = optionalString(input.RoleArn, 'roleArn', 1600);
    // PutRule replaces the rule's settings (omitted ones are not kept) but keeps its targets.
    const rule: Rule = {
      Name: name,
      Arn: this.ruleArn(bus.Name, name),
      EventBusName: bus.Name,
      ...(eventPattern !== undefined ? { EventPattern: eventPattern } : {}),
      ...(schedule !== undefined ? { ScheduleExpression: schedule } : {}),
      State: state,
      ...(description !== undefined ? { Description: description } : {}),
      ...(roleArn !== undefined ? { RoleArn: roleArn } : {}),
      CreatedBy: this.accountId,
      targets: bus.rules.get(name)?.targets ?? [],
    };
    bus.rules.set(name, rule);
    this.reindex(bus, rule, pattern);
    return rule;
  }

  private reindex(bus: Bus, rule: Rule, pattern?: unknown): void {
    bus.index.remove(rule.Name);
    if (rule.EventPattern === undefined || !isEnabled(rule)) return;
    bus.index.add(rule.Name, pattern ?? JSON.parse(rule.EventPattern), rule.Name);
  }

  setRuleState(input: Record<string, unknown>, state: 'ENABLED' | 'DISABLED'): Rule {
    const rule = this.rule(input.Name, input.EventBusName);
    rule.State = state;
    this.reindex(this.bus(rule.EventBusName), rule);
    return rule;
  }

  /** Deleting a rule that does not exist succeeds, as in EventBridge; a rule with targets cannot be deleted. */
  deleteRule(input: Record<string, unknown>): void {
    const bus = this.bus(input.EventBusName);
    const name = requiredName(input.Name, 'name');
    const rule = bus.rules.get(name);
    if (!rule) return;
    if (rule.targets.length > 0 && input.Force !== true) {
      throw validation("Rule can't be deleted since it has targets.");
    }
    bus.rules.delete(name);
    bus.index.remove(name);
  }

  listRules(input: Record<string, unknown>): Rule[] {
    const bus = this.bus(input.EventBusName);
    const prefix = optionalString(input.NamePrefix, 'namePrefix', 64);
    return [...bus.rules.values()].filter((r) => prefix === undefined || r.Name.startsWith(prefix));
  }

  putTargets(input: Record<string, unknown>): Rule {
    const rule = this.rule(input.Rule, input.EventBusName);
    if (!Array.isArray(input.Targets) || input.Targets.length === 0) {
      throw constraintViolation(
        input.Targets ?? 'null',
        'targets',
        'Member must have length greater than or equal to 1',
      );
    }
    if (input.Targets.length > 100) {
      throw constraintViolation('[...]', 'targets', 'Member must have length less than or equal to 100');
    }
    const targets = input.Targets.map((t: unknown) => validateTarget(t));
    const ids = new Set<string>();
    for (const t of targets) {
      if (ids.has(t.Id)) throw validation(`The Id ${t.Id} is duplicated in the request.`);
      ids.add(t.Id);
    }
    const merged = rule.targets.filter((t) => !ids.has(t.Id)).concat(targets);
    if (merged.length > this.quotas.targetsPerRule) throw limitExceeded();
    // Replaced targets keep their position; new ones go last.
    rule.targets = rule.targets.map((t) => targets.find((n) => n.Id === t.Id) ?? t);
    for (const t of targets) if (!rule.targets.some((o) => o.Id === t.Id)) rule.targets.push(t);
    return rule;
  }

  /** Ids that are not targets of the rule are ignored, as in EventBridge. */
  removeTargets(input: Record<string, unknown>): Rule {
    const rule = this.rule(input.Rule, input.EventBusName);
    if (!Array.isArray(input.Ids) || input.Ids.length === 0) {
      throw constraintViolation(
        input.Ids ?? 'null',
        'ids',
        'Member must have length greater than or equal to 1',
      );
    }
    const ids = new Set(input.Ids.map((id) => requiredName(id, 'ids.member')));
    rule.targets = rule.targets.filter((t) => !ids.has(t.Id));
    return rule;
  }

  serialize(): SerializedState {
    return {
      version: 1,
      buses: [...this.buses.values()].map(({ rules, index: _index, ...bus }) => ({
        ...bus,
        rules: [...rules.values()],
      })),
    };
  }

  /** Loads a saved state; rules whose pattern no longer validates are kept but not indexed (and logged). */
  load(saved: SerializedState, log?: (line: string) => void): void {
    for (const savedBus of saved.buses) {
      const bus = this.buses.get(savedBus.Name) ?? this.addBus(savedBus.Name, savedBus.Description);
      bus.CreationTime = savedBus.CreationTime;
      bus.LastModifiedTime = savedBus.LastModifiedTime;
      for (const rule of savedBus.rules) {
        const restored: Rule = { ...rule, Arn: this.ruleArn(bus.Name, rule.Name), EventBusName: bus.Name };
        bus.rules.set(rule.Name, restored);
        try {
          this.reindex(
            bus,
            restored,
            restored.EventPattern === undefined ? undefined : parseEventPattern(restored.EventPattern),
          );
        } catch (error) {
          log?.(`eventbridge: rule ${rule.Name} on ${bus.Name} not loaded: ${(error as Error).message}`);
        }
      }
    }
  }
}

function validateTarget(value: unknown): Target {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw validation('Parameter Targets is not valid.');
  }
  const t = value as Record<string, unknown>;
  const id = requiredName(t.Id, 'targets.member.id');
  const arn = optionalString(t.Arn, 'targets.member.arn', 1600);
  if (arn === undefined || arn.length === 0)
    throw constraintViolation('null', 'targets.member.arn', 'Member must not be null');
  const given = ['Input', 'InputPath', 'InputTransformer'].filter((k) => t[k] !== undefined && t[k] !== null);
  if (given.length > 1) {
    throw validation(`Only one of Input, InputPath, or InputTransformer must be provided for target ${id}.`);
  }
  const target: Target = { Id: id, Arn: arn };
  const input = optionalString(t.Input, 'targets.member.input', 8192);
  if (input !== undefined) {
    try {
      JSON.parse(input);
    } catch {
      throw validation(`Input for target ${id} is not a valid JSON text.`);
    }
    target.Input = input;
  }
  const inputPath = optionalString(t.InputPath, 'targets.member.inputPath', 256);
  if (inputPath !== undefined) {
    checkPath(inputPath, `InputPath for target ${id}`);
    target.InputPath = inputPath;
  }
  if (t.InputTransformer !== undefined && t.InputTransformer !== null) {
    const it = t.InputTransformer as Record<string, unknown>;
    const template = optionalString(it.InputTemplate, 'targets.member.inputTransformer.inputTemplate', 8192);
    if (template === undefined || template.length === 0) {
      throw constraintViolation(
        'null',
        'targets.member.inputTransformer.inputTemplate',
        'Member must not be null',
      );
    }
    const map: Record<string, string> = {};
    const given = it.InputPathsMap ?? {};
    if (typeof given !== 'object' || given === null || Array.isArray(given)) {
      throw validation(`InputPathsMap for target ${id} is not valid.`);
    }
    const entries = Object.entries(given);
    if (entries.length > 100) throw validation(`InputPathsMap for target ${id} has more than 100 entries.`);
    for (const [key, path] of entries) {
      if (!/^[A-Za-z0-9_-]+$/.test(key) || (RESERVED_VARIABLES as readonly string[]).includes(key)) {
        throw validation(`InputPathsMap key ${key} for target ${id} is not valid or is reserved.`);
      }
      if (typeof path !== 'string') throw validation(`InputPathsMap value for ${key} must be a string.`);
      checkPath(path, `InputPathsMap value for ${key}`);
      map[key] = path;
    }
    target.InputTransformer = { InputPathsMap: map, InputTemplate: template };
  }
  for (const key of ['RoleArn'] as const) {
    const v = optionalString(t[key], 'targets.member.roleArn', 1600);
    if (v !== undefined) target[key] = v;
  }
  const dlq = t.DeadLetterConfig as { Arn?: unknown } | undefined;
  if (dlq && typeof dlq.Arn === 'string') target.DeadLetterConfig = { Arn: dlq.Arn };
  const retry = t.RetryPolicy as
    | { MaximumRetryAttempts?: unknown; MaximumEventAgeInSeconds?: unknown }
    | undefined;
  if (retry && typeof retry === 'object') {
    const attempts = optionalInteger(
      retry.MaximumRetryAttempts,
      'targets.member.retryPolicy.maximumRetryAttempts',
      0,
      185,
    );
    const age = optionalInteger(
      retry.MaximumEventAgeInSeconds,
      'targets.member.retryPolicy.maximumEventAgeInSeconds',
      60,
      86400,
    );
    target.RetryPolicy = {
      ...(attempts !== undefined ? { MaximumRetryAttempts: attempts } : {}),
      ...(age !== undefined ? { MaximumEventAgeInSeconds: age } : {}),
    };
  }
  const sqs = t.SqsParameters as { MessageGroupId?: unknown } | undefined;
  if (sqs && typeof sqs.MessageGroupId === 'string') {
    if (sqs.MessageGroupId.length > 100) {
      throw constraintViolation(
        sqs.MessageGroupId,
        'targets.member.sqsParameters.messageGroupId',
        'Member must have length less than or equal to 100',
      );
    }
    target.SqsParameters = { MessageGroupId: sqs.MessageGroupId };
  }
  return target;
}

function checkPath(path: string, what: string): void {
  try {
    parseJsonPath(path);
  } catch (error) {
    if (error instanceof JsonPathError)
      throw validation(`${what} is not a valid JSON path: ${error.message}`);
    throw error;
  }
}
