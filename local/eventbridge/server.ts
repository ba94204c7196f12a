/**
 * crumbs' local EventBridge: a node:http service speaking the EventBridge API wire protocol (AWS JSON 1.1:
 * `POST /`, `X-Amz-Target: AWSEvents.<Operation>`), so `@aws-sdk/client-eventbridge` works against it unchanged.
 * Signatures are not verified. Matching uses the project's own matcher (one RuleIndex per bus, enabled rules
 * only); matched events are delivered to SQS targets asynchronously, after the PutEvents response.
 *
 * Supported: PutEvents, PutRule, DescribeRule, ListRules, DeleteRule, EnableRule, DisableRule, PutTargets,
 * RemoveTargets, ListTargetsByRule, TestEventPattern, CreateEventBus, DescribeEventBus, ListEventBuses,
 * DeleteEventBus. Quotas are enforced as AWS enforces them, with AWS's errors (`DEFAULT_QUOTAS` in state.ts:
 * rules per bus, targets per rule, event pattern size, PutEvents size), each settable. Not supported: scheduled
 * rules firing, archives/replays, connections, API destinations, endpoints, permissions/policies, tags, non-SQS
 * targets (accepted, but delivery fails with a log line).
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { matchesEventPattern } from '#shared/routing/event-pattern.ts';
import {
  type EmulatorOptions,
  loadStateFile,
  parseJsonObject,
  readBody,
  saveStateFile,
  sendJson,
  startEmulatorServer,
} from '../emulator-http.ts';
import { Deliverer } from './delivery.ts';
import { constraintViolation, EventBridgeError, validation } from './errors.ts';
import {
  type Bus,
  type EventBridgeQuotas,
  EventBridgeState,
  page,
  parseEventPattern,
  type Rule,
  type SerializedState,
} from './state.ts';

/** `stateFile` keeps buses, rules and targets. */
export interface LocalEventBridgeOptions extends EmulatorOptions {
  /** Delivery attempts per target before dead-lettering or dropping (default 5). */
  maxDeliveryAttempts?: number;
  /** First retry delay; doubles per attempt (default 100 ms). */
  retryBaseDelayMs?: number;
  /** Quotas to enforce instead of AWS's defaults (`DEFAULT_QUOTAS`), e.g. an account's raised rules per bus. */
  quotas?: Partial<EventBridgeQuotas>;
}

export interface LocalEventBridgeStats {
  /** Entries accepted by PutEvents. */
  eventsPut: number;
  /** Entries PutEvents rejected. */
  eventsRejected: number;
  /** Rule matches (one event matching two rules counts twice). */
  matched: number;
  /** Target deliveries that succeeded. */
  delivered: number;
  /** Target deliveries that failed every attempt. */
  failed: number;
  retries: number;
  deadLettered: number;
  inFlight: number;
}

export interface LocalEventBridge {
  readonly endpoint: string;
  readonly port: number;
  stop(): Promise<void>;
  stats(): LocalEventBridgeStats;
  /** Resolves when no deliveries are in flight. */
  idle(): Promise<void>;
  /** The quotas it enforces. */
  readonly quotas: Readonly<EventBridgeQuotas>;
}

const MAX_REQUEST_BYTES = 10 * 1024 * 1024;
const REQUIRED_EVENT_FIELDS = [
  'id',
  'account',
  'source',
  'time',
  'region',
  'resources',
  'detail-type',
] as const;

type Input = Record<string, unknown>;
type Handler = (input: Input) => unknown;

/** EventBridge's timestamps: ISO 8601 without milliseconds. */
export function eventTime(date: Date): string {
  return `${date.toISOString().slice(0, 19)}Z`;
}

/** PutEvents entry size as documented in "Calculating PutEvents event entry size". */
export function entrySize(entry: Input): number {
  const bytes = (v: unknown) => (typeof v === 'string' ? Buffer.byteLength(v, 'utf8') : 0);
  let size = entry.Time !== undefined && entry.Time !== null ? 14 : 0;
  size += bytes(entry.Source) + bytes(entry.DetailType) + bytes(entry.Detail);
  if (Array.isArray(entry.Resources)) for (const r of entry.Resources) size += bytes(r);
  return size;
}

function parseTime(value: unknown, now: Date): Date {
  if (typeof value === 'number' && Number.isFinite(value)) return new Date(value * 1000);
  if (typeof value === 'string') {
    const d = new Date(value);
    if (!Number.isNaN(d.getTime())) return d;
  }
  return now;
}

export async function startLocalEventBridge(options: LocalEventBridgeOptions): Promise<LocalEventBridge> {
  const region = options.region ?? 'us-east-1';
  const accountId = options.accountId ?? '000000000000';
  const log = options.log;
  const state = new EventBridgeState(region, accountId, options.quotas);
  const saved = loadStateFile(options.stateFile);
  if (saved !== undefined) state.load(saved as SerializedState, log);
  const deliverer = new Deliverer({
    sqsEndpoint: options.sqsEndpoint,
    region,
    ...(options.maxDeliveryAttempts !== undefined ? { maxAttempts: options.maxDeliveryAttempts } : {}),
    ...(options.retryBaseDelayMs !== undefined ? { baseDelayMs: options.retryBaseDelayMs } : {}),
    ...(log ? { log } : {}),
  });
  const counters = { eventsPut: 0, eventsRejected: 0, matched: 0 };

  function save(): void {
    saveStateFile(options.stateFile, state.serialize());
  }

  const describeRule = (r: Rule) => ({
    Name: r.Name,
    Arn: r.Arn,
    ...(r.EventPattern !== undefined ? { EventPattern: r.EventPattern } : {}),
    ...(r.ScheduleExpression !== undefined ? { ScheduleExpression: r.ScheduleExpression } : {}),
    State: r.State,
    ...(r.Description !== undefined ? { Description: r.Description } : {}),
    ...(r.RoleArn !== undefined ? { RoleArn: r.RoleArn } : {}),
    EventBusName: r.EventBusName,
  });
  const describeBus = (b: Bus) => ({
    Name: b.Name,
    Arn: b.Arn,
    ...(b.Description !== undefined ? { Description: b.Description } : {}),
    CreationTime: b.CreationTime,
    LastModifiedTime: b.LastModifiedTime,
  });
  const mutating =
    (fn: Handler): Handler =>
    (input) => {
      const out = fn(input);
      save();
      return out;
    };

  function putEvents(input: Input): unknown {
    const entries = input.Entries;
    if (!Array.isArray(entries) || entries.length === 0) {
      throw constraintViolation(
        entries ?? 'null',
        'entries',
        'Member must have length greater than or equal to 1',
      );
    }
    if (entries.length > 10) {
      throw constraintViolation('[...]', 'entries', 'Member must have length less than or equal to 10');
    }
    const size = entries.reduce<number>(
      (sum, e) => sum + (typeof e === 'object' && e ? entrySize(e as Input) : 0),
      0,
    );
    if (size > state.quotas.putEventsBytes)
      throw validation('Total size of the entries in the request is over the limit.');
    const now = new Date();
    const ingestionTime = now.toISOString();
    let failed = 0;
    const results = entries.map((raw: unknown) => {
      const result = putEvent(
        typeof raw === 'object' && raw !== null ? (raw as Input) : {},
        now,
        ingestionTime,
      );
      if ('ErrorCode' in result) failed++;
      return result;
    });
    counters.eventsPut += entries.length - failed;
    counters.eventsRejected += failed;
    return { FailedEntryCount: failed, Entries: results };
  }

  function putEvent(
    entry: Input,
    now: Date,
    ingestionTime: string,
  ): { EventId: string } | { ErrorCode: string; ErrorMessage: string } {
    const invalid = (name: string) => ({
      ErrorCode: 'InvalidArgument',
      ErrorMessage: `Parameter ${name} is not valid. Reason: ${name} is a required argument.`,
    });
    if (typeof entry.Source !== 'string' || entry.Source.length === 0) return invalid('Source');
    if (typeof entry.DetailType !== 'string' || entry.DetailType.length === 0) return invalid('DetailType');
    if (typeof entry.Detail !== 'string' || entry.Detail.length === 0) return invalid('Detail');
    let detail: unknown;
    try {
      detail = JSON.parse(entry.Detail);
    } catch {
      detail = undefined;
    }
    if (typeof detail !== 'object' || detail === null || Array.isArray(detail)) {
      return { ErrorCode: 'MalformedDetail', ErrorMessage: 'Detail is malformed.' };
    }
    if (entry.Source.startsWith('aws.')) {
      return { ErrorCode: 'NotAuthorizedForSourceException', ErrorMessage: 'Not authorized for the source.' };
    }
    let bus: Bus | undefined;
    try {
      bus = state.findBus(entry.EventBusName);
    } catch (error) {
      if (error instanceof EventBridgeError) return { ErrorCode: error.code, ErrorMessage: error.message };
      throw error;
    }
    if (!bus) {
      return {
        ErrorCode: 'ResourceNotFoundException',
        ErrorMessage: `Event bus ${state.busName(entry.EventBusName)} does not exist.`,
      };
    }
    const resources = Array.isArray(entry.Resources)
      ? entry.Resources.filter((r) => typeof r === 'string')
      : [];
    const id = randomUUID();
    const event = {
      version: '0',
      id,
      'detail-type': entry.DetailType,
      source: entry.Source,
      account: accountId,
      time: eventTime(parseTime(entry.Time, now)),
      region,
      resources,
      detail,
    };
    for (const name of bus.index.match(event)) {
      const rule = bus.rules.get(name);
      if (!rule) continue;
      counters.matched++;
      for (const target of rule.targets) deliverer.schedule({ event, rule, target, ingestionTime });
    }
    return { EventId: id };
  }

  function testEventPattern(input: Input): unknown {
    const pattern = parseEventPattern(input.EventPattern);
    if (typeof input.Event !== 'string') throw validation('Parameter Event is not valid.');
    let event: unknown;
    try {
      event = JSON.parse(input.Event);
    } catch {
      throw validation('Parameter Event is not valid.');
    }
    if (
      typeof event !== 'object' ||
      event === null ||
      Array.isArray(event) ||
      REQUIRED_EVENT_FIELDS.some((f) => !Object.hasOwn(event, f))
    ) {
      throw validation('Parameter Event is not valid.');
    }
    return { Result: matchesEventPattern(pattern, event) };
  }

  const operations: Record<string, Handler> = {
    PutEvents: putEvents,
    TestEventPattern: testEventPattern,
    PutRule: mutating((input) => ({ RuleArn: state.putRule(input).Arn })),
    DescribeRule: (input) => ({
      ...describeRule(state.rule(input.Name, input.EventBusName)),
      CreatedBy: accountId,
    }),
    ListRules: (input) => {
      const { items, NextToken } = page(state.listRules(input), (r) => r.Name, input.Limit, input.NextToken);
      return { Rules: items.map(describeRule), ...(NextToken ? { NextToken } : {}) };
    },
    DeleteRule: mutating((input) => {
      state.deleteRule(input);
      return {};
    }),
    EnableRule: mutating((input) => {
      state.setRuleState(input, 'ENABLED');
      return {};
    }),
    DisableRule: mutating((input) => {
      state.setRuleState(input, 'DISABLED');
      return {};
    }),
    PutTargets: mutating((input) => {
      state.putTargets(input);
      return { FailedEntryCount: 0, FailedEntries: [] };
    }),
    RemoveTargets: mutating((input) => {
      state.removeTargets(input);
      return { FailedEntryCount: 0, FailedEntries: [] };
    }),
    ListTargetsByRule: (input) => {
      const rule = state.rule(input.Rule, input.EventBusName);
      const ordered = rule.targets.map((t, i) => ({ t, key: String(i).padStart(4, '0') }));
      const { items, NextToken } = page(ordered, (x) => x.key, input.Limit, input.NextToken);
      return { Targets: items.map((x) => x.t), ...(NextToken ? { NextToken } : {}) };
    },
    CreateEventBus: mutating((input) => ({ EventBusArn: state.createEventBus(input).Arn })),
    DescribeEventBus: (input) => describeBus(state.bus(input.Name)),
    ListEventBuses: (input) => {
      const prefix = typeof input.NamePrefix === 'string' ? input.NamePrefix : '';
      const buses = state.listEventBuses().filter((b) => b.Name.startsWith(prefix));
      const { items, NextToken } = page(buses, (b) => b.Name, input.Limit, input.NextToken);
      return { EventBuses: items.map(describeBus), ...(NextToken ? { NextToken } : {}) };
    },
    DeleteEventBus: mutating((input) => {
      state.deleteEventBus(input);
      return {};
    }),
  };

  async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const text = await readBody(req, MAX_REQUEST_BYTES);
    if (text === undefined) {
      reply(res, 413, { __type: 'RequestEntityTooLargeException', message: 'Request is too large.' });
      req.destroy();
      return;
    }
    const target = req.headers['x-amz-target'];
    const operation =
      typeof target === 'string' && target.startsWith('AWSEvents.') ? target.slice(10) : undefined;
    const handler = operation === undefined ? undefined : operations[operation];
    if (req.method !== 'POST' || handler === undefined) {
      const error = new EventBridgeError('UnknownOperationException', `Unknown operation ${String(target)}`);
      reply(res, 400, error.toBody());
      return;
    }
    const body = parseJsonObject(text);
    if ('problem' in body) {
      reply(res, 400, { __type: 'SerializationException', message: body.problem });
      return;
    }
    try {
      reply(res, 200, handler(body.input) ?? {});
    } catch (error) {
      if (!(error instanceof EventBridgeError)) throw error;
      reply(res, error.statusCode, error.toBody());
    }
  }

  const server = await startEmulatorServer({
    port: options.port,
    host: options.host,
    handle: serve,
    crashed: (res, error) => {
      log?.(`eventbridge: ${(error as Error).stack ?? String(error)}`);
      if (!res.headersSent) reply(res, 500, { __type: 'InternalException', message: 'Internal error' });
    },
  });
  const { endpoint, port } = server;
  log?.(`eventbridge ready on ${endpoint}`);

  return {
    endpoint,
    port,
    quotas: state.quotas,
    stats: () => ({ ...counters, ...deliverer.stats }),
    idle: () => deliverer.idle(),
    async stop() {
      await server.close();
      await deliverer.idle();
      deliverer.close();
    },
  };
}

/** AWS JSON 1.1: an error's code is its body's `__type`, repeated in the error type header. */
function reply(res: ServerResponse, status: number, body: unknown): void {
  const errorType =
    status >= 400 && typeof body === 'object' && body !== null && '__type' in body
      ? String((body as { __type: unknown }).__type)
      : undefined;
  sendJson(res, status, 'application/x-amz-json-1.1', body, errorType);
}
