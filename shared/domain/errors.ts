/**
 * The error hierarchy of crumbs. Every error says whether it is retriable (an SQS redelivery or a client retry
 * may succeed) and which HTTP status it maps to at the API edge. Catch only to translate or classify.
 *
 * Retriable or not is decided here and nowhere else (`isRetriable`): our own errors say it themselves; errors from
 * the AWS SDK, from fetch and from Node's sockets are judged by their name, HTTP status and socket code. Adapters
 * that translate a foreign error into ours (`asCrumbsError`) and every loop that decides between "let SQS
 * redeliver" and "answer with an error" (the executor pipeline, the DLQ handler, the rule manager) ask this module.
 */

export interface FieldIssue {
  /** JSON-pointer-like path of the offending field, e.g. `tags[3]` or `context`. */
  readonly path: string;
  readonly message: string;
}

export abstract class CrumbsError extends Error {
  abstract readonly status: number;
  abstract readonly code: string;
  readonly retriable: boolean = false;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** A request or record that does not satisfy the model. Changes nothing. */
export class ValidationError extends CrumbsError {
  readonly status = 422;
  readonly code = 'validation-failed';
  readonly issues: readonly FieldIssue[];

  constructor(issues: readonly FieldIssue[], message?: string, options?: { cause?: unknown }) {
    super(message ?? issues.map((i) => `${i.path || '(root)'}: ${i.message}`).join('; '), options);
    this.issues = issues;
  }
}

/** A body that is not JSON at all, a bad header or query parameter. */
export class BadRequestError extends CrumbsError {
  readonly status = 400;
  readonly code = 'bad-request';
  readonly issues: readonly FieldIssue[];

  constructor(message: string, issues: readonly FieldIssue[] = []) {
    super(message);
    this.issues = issues;
  }
}

export class NotFoundError extends CrumbsError {
  readonly status = 404;
  readonly code = 'not-found';
}

/** The request is well formed but the resource is not in a state that allows it (approving a run not waiting). */
export class ConflictError extends CrumbsError {
  readonly status = 409;
  readonly code = 'conflict';
}

/** The expected version (If-Match) is not the stored one. */
export class VersionConflictError extends CrumbsError {
  readonly status = 412;
  readonly code = 'version-conflict';

  constructor(
    readonly expected: number,
    readonly actual: number | undefined,
    options?: { cause?: unknown },
  ) {
    super(
      actual === undefined
        ? `expected version ${expected}, but the breadcrumb changed concurrently`
        : `expected version ${expected}, but the stored version is ${actual}`,
      options,
    );
  }
}

/** The same Idempotency-Key was used for a different request. */
export class IdempotencyKeyReuseError extends CrumbsError {
  readonly status = 422;
  readonly code = 'idempotency-key-reused';
}

export class PayloadTooLargeError extends CrumbsError {
  readonly status = 413;
  readonly code = 'payload-too-large';
}

export class UnauthorizedError extends CrumbsError {
  readonly status = 401;
  readonly code = 'unauthorized';
}

export class ForbiddenError extends CrumbsError {
  readonly status = 403;
  readonly code = 'forbidden';
}

export class MethodNotAllowedError extends CrumbsError {
  readonly status = 405;
  readonly code = 'method-not-allowed';

  constructor(
    message: string,
    readonly allow: readonly string[],
  ) {
    super(message);
  }
}

export class UnsupportedMediaTypeError extends CrumbsError {
  readonly status = 415;
  readonly code = 'unsupported-media-type';
}

/** The limit a 429 names, as the problem's `limit` member shows it. */
export interface RateLimitDescription {
  readonly name: string;
  readonly scope: string;
  readonly requests_per_second: number;
  readonly burst: number;
  readonly setting: string;
}

/**
 * 429 with `Retry-After`, changing nothing; another try after that long may pass. Two causes: a caller over its
 * request rate (`shared/core/api/request-rate.ts`: code `rate-limited`, naming the limit so the caller knows what it
 * ran into and the operator which setting raises it), or over a share its workspace (or token) holds of something
 * bounded — streams held open, subscriptions (`too-many-requests`).
 */
export class TooManyRequestsError extends CrumbsError {
  readonly status = 429;
  readonly code: 'rate-limited' | 'too-many-requests';
  override readonly retriable = true;
  /** The rate limit crossed, when a rate limit it is. */
  readonly limit: RateLimitDescription | undefined;

  constructor(
    message: string,
    /** Whole seconds until a request of the same cost fits (at least 1): `Retry-After`. */
    readonly retryAfterSeconds: number,
    options?: { cause?: unknown; limit?: RateLimitDescription },
  ) {
    super(message, options?.cause !== undefined ? { cause: options.cause } : undefined);
    this.limit = options?.limit;
    this.code = options?.limit !== undefined ? 'rate-limited' : 'too-many-requests';
  }
}

/** Throttling, timeouts, transient service faults: try again later. */
export class RetriableError extends CrumbsError {
  readonly status = 503;
  readonly code = 'temporarily-unavailable';
  override readonly retriable = true;
  /**
   * How long the failing service asked to be left alone (its Retry-After), in seconds. The SQS consumers make a
   * failed message visible again after this long instead of after their own back-off.
   */
  readonly retryAfterSeconds: number | undefined;

  constructor(message: string, options?: { cause?: unknown; retryAfterSeconds?: number | undefined }) {
    super(message, options);
    const after = options?.retryAfterSeconds;
    this.retryAfterSeconds = after !== undefined && Number.isFinite(after) && after >= 0 ? after : undefined;
  }
}

/** A failure that will not go away on retry (bad definition, tool bug): answer with an error breadcrumb. */
export class NonRetriableError extends CrumbsError {
  readonly status = 500;
  readonly code = 'execution-failed';
}

/**
 * A service refused to create a resource because an account quota is used up (EventBridge's "Rules per event bus":
 * `LimitExceededException` from PutRule). Not retriable as such: the caller tries elsewhere or reports it.
 */
export class QuotaExceededError extends NonRetriableError {
  constructor(
    readonly quota: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** A schema no validator can use. Non-retriable: the definition has to change. */
export class InvalidJsonSchemaError extends NonRetriableError {
  constructor(
    /** Whose schema, e.g. "the echo tool's input schema". */
    readonly what: string,
    /** What is wrong with it, without `what`. */
    readonly problem: string,
    options?: { cause?: unknown },
  ) {
    super(`${what} is not a valid JSON Schema: ${problem}`, options);
  }
}

/**
 * A validation stopped at its budget of work (`JSON_SCHEMA_LIMITS.maxWork` in `lang/json-schema.ts`): the value is
 * too much to check against this schema, not the schema unusable. An InvalidJsonSchemaError, so every place that
 * reports a schema that cannot be used reports this as well; its message names the limit.
 */
export class JsonSchemaWorkLimitError extends InvalidJsonSchemaError {
  constructor(
    what: string,
    /** The steps the validation was allowed. */
    readonly limit: number,
  ) {
    const problem =
      `validating this value against it takes more than ${limit} steps of work (JSON_SCHEMA_LIMITS.maxWork: ` +
      'each subschema applied, and each value compared by enum, const and uniqueItems), so it was stopped';
    super(what, problem);
    this.message = `checking a value against ${what} stopped: ${problem}`;
  }
}

/** A template that does not parse. `line` and `column` are 1-based; the message starts with `line:column:`. */
export class TemplateSyntaxError extends ValidationError {
  readonly line: number;
  readonly column: number;
  readonly detail: string;

  constructor(detail: string, line: number, column: number) {
    const message = `${line}:${column}: ${detail}`;
    super([{ path: '', message }], message);
    this.line = line;
    this.column = column;
    this.detail = detail;
  }
}

/** A parsed template that cannot be rendered within the limits; rendering it again will fail the same way. */
export class TemplateRenderError extends NonRetriableError {}

/** A JSONPath that does not parse. `position` is 1-based; the message starts with `position:`. */
export class JsonPathSyntaxError extends ValidationError {
  readonly position: number;
  readonly detail: string;

  constructor(detail: string, position: number) {
    const message = `${position}: ${detail}`;
    super([{ path: '', message }], message);
    this.position = position;
    this.detail = detail;
  }
}

/** A JSONPath query that exceeds a work limit on a document; evaluating it again will fail the same way. */
export class JsonPathLimitError extends NonRetriableError {}

export function isCrumbsError(error: unknown): error is CrumbsError {
  return error instanceof CrumbsError;
}

// ---------------------------------------------------------------------------------------------------------------
// Retriable or not: the one place that decides

/**
 * HTTP statuses worth another attempt: timeout, conflict, throttling, server faults. Every HTTP caller classifies a
 * status here: the model providers, AWS SDK errors by their status, the MCP and A2A clients.
 *
 * 408 and 409 are retriable for all of them. 408 is the server asking for the request again. 409 is, from every
 * callee crumbs talks to, a conflict that clears by itself: OpenAI's lock timeouts (its own SDK retries them), AWS's
 * concurrent modification (Scheduler's ConflictException on an update), the MCP SDK server's "another stream is open
 * on this session", A2A's HTTP+JSON binding's ABORTED. A 409 refuses the request before it runs, so another attempt
 * duplicates nothing; and retries are bounded (the queue's receive count, then the DLQ answers with an error), so a
 * 409 that does not clear costs its back-offs (about 30 s), where a transient one judged final would fail the run.
 */
export function isRetriableStatus(status: number): boolean {
  return status === 408 || status === 409 || status === 429 || status >= 500;
}

/** AWS service errors (DynamoDB, SQS, EventBridge, Bedrock, Secrets Manager) that pass on their own. */
const RETRIABLE_ERROR_NAMES = new Set([
  'ThrottlingException',
  'Throttling',
  'ProvisionedThroughputExceededException',
  'RequestLimitExceeded',
  'TooManyRequestsException',
  'LimitExceededException',
  'ServiceUnavailable',
  'ServiceUnavailableException',
  'InternalServerError',
  'InternalServerException',
  'InternalFailure',
  'ModelNotReadyException',
  'ModelTimeoutException',
  'TransactionConflictException',
  'TimeoutError',
  'RequestTimeout',
  'RequestTimeoutException',
]);

/** Transport failures before any HTTP status (Node socket and DNS codes). */
const RETRIABLE_SOCKET_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
]);

type ForeignError = Error & {
  $retryable?: unknown;
  $metadata?: { httpStatusCode?: number };
  code?: unknown;
};

/**
 * Whether trying again later may succeed: our errors say so themselves; AWS SDK errors by `$retryable`, their
 * name or a retriable HTTP status; socket failures by their code (also on the `cause` fetch wraps them in). When
 * `signal` has fired (the Lambda is about to time out), whatever the call threw is retriable: it was cut short.
 */
export function isRetriable(error: unknown, signal?: AbortSignal): boolean {
  if (isCrumbsError(error)) return error.retriable;
  if (signal?.aborted) return true;
  if (!(error instanceof Error)) return false;
  const e = error as ForeignError;
  if (e.$retryable) return true;
  if (RETRIABLE_ERROR_NAMES.has(e.name)) return true;
  const status = e.$metadata?.httpStatusCode;
  if (status !== undefined && isRetriableStatus(status)) return true;
  const code = typeof e.code === 'string' ? e.code : (e.cause as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' && RETRIABLE_SOCKET_CODES.has(code);
}

/** The Retry-After an error carries, in seconds (our RetriableError's), if any. */
export function retryAfterSecondsOf(error: unknown): number | undefined {
  return error instanceof RetriableError ? error.retryAfterSeconds : undefined;
}

/**
 * A foreign error as one of ours, classified by `isRetriable`: RetriableError or NonRetriableError with `message`
 * and the original as `cause`. Our own errors pass through unchanged.
 */
export function asCrumbsError(
  error: unknown,
  message: string,
  options: { signal?: AbortSignal | undefined; retryAfterSeconds?: number | undefined } = {},
): CrumbsError {
  if (isCrumbsError(error)) return error;
  return isRetriable(error, options.signal)
    ? new RetriableError(message, { cause: error, retryAfterSeconds: options.retryAfterSeconds })
    : new NonRetriableError(message, { cause: error });
}
