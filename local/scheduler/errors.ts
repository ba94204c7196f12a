/**
 * EventBridge Scheduler's errors on its REST-JSON wire: the HTTP status of the error, the code in the
 * `x-amzn-ErrorType` header, and `{"Message": "..."}` as the body (the SDK reads the header).
 */
export type SchedulerErrorCode =
  | 'ValidationException'
  | 'ResourceNotFoundException'
  | 'ConflictException'
  | 'InternalServerException'
  | 'UnknownOperationException';

const STATUS: Record<SchedulerErrorCode, number> = {
  ValidationException: 400,
  ResourceNotFoundException: 404,
  ConflictException: 409,
  InternalServerException: 500,
  UnknownOperationException: 404,
};

export class SchedulerError extends Error {
  readonly statusCode: number;

  constructor(
    readonly code: SchedulerErrorCode,
    message: string,
  ) {
    super(message);
    this.name = code;
    this.statusCode = STATUS[code];
  }

  toBody(): { Message: string } {
    return { Message: this.message };
  }
}

export const validation = (message: string): SchedulerError =>
  new SchedulerError('ValidationException', message);
