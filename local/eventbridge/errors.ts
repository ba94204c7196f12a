/**
 * EventBridge's error shapes on the AWS JSON 1.1 wire: HTTP 400 with `{"__type": "<Code>", "message": "..."}`.
 * The SDK reads the code from `__type` (and from the `x-amzn-ErrorType` header, which we also set).
 */
export type EventBridgeErrorCode =
  | 'ValidationException'
  | 'ResourceNotFoundException'
  | 'ResourceAlreadyExistsException'
  | 'InvalidEventPatternException'
  | 'LimitExceededException'
  | 'ConcurrentModificationException'
  | 'InternalException'
  | 'SerializationException'
  | 'UnknownOperationException';

export class EventBridgeError extends Error {
  readonly code: EventBridgeErrorCode;
  readonly statusCode: number;

  constructor(
    code: EventBridgeErrorCode,
    message: string,
    statusCode = code === 'InternalException' ? 500 : 400,
  ) {
    super(message);
    this.name = code;
    this.code = code;
    this.statusCode = statusCode;
  }

  toBody(): { __type: string; message: string } {
    return { __type: this.code, message: this.message };
  }
}

export const validation = (message: string): EventBridgeError =>
  new EventBridgeError('ValidationException', message);

/** The wording of AWS's generated constraint errors ("1 validation error detected: ..."). */
export function constraintViolation(value: unknown, member: string, constraint: string): EventBridgeError {
  const shown = typeof value === 'string' ? value : JSON.stringify(value);
  return validation(
    `1 validation error detected: Value '${shown}' at '${member}' failed to satisfy constraint: ${constraint}`,
  );
}

export const ruleNotFound = (rule: string, bus: string): EventBridgeError =>
  new EventBridgeError('ResourceNotFoundException', `Rule ${rule} does not exist on EventBus ${bus}.`);

export const busNotFound = (bus: string): EventBridgeError =>
  new EventBridgeError('ResourceNotFoundException', `Event bus ${bus} does not exist.`);

export function invalidEventPattern(reason: string): EventBridgeError {
  const message = reason.startsWith('Event pattern is not valid. Reason:')
    ? reason
    : `Event pattern is not valid. Reason: ${reason}`;
  return new EventBridgeError('InvalidEventPatternException', message);
}
