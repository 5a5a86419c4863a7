/** String codes of every error tasklatch raises itself. */
export const ERROR_CODES = [
  'INVALID_INPUT',
  'INVALID_FIXTURE',
  'INVALID_CURSOR',
  'INVALID_STORE_URL',
  'STORE_UNAVAILABLE',
  'STORE_DRIVER_MISSING',
  'SCHEMA_MISMATCH',
  'INTERNAL',
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

/** The one error type of tasklatch: a string `code`, a message, optional `data` and `cause`. */
export class TasklatchError extends Error {
  override readonly name = 'TasklatchError';
  readonly code: ErrorCode;
  readonly data: unknown;

  constructor(code: ErrorCode, message: string, options: { data?: unknown; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.data = options.data;
  }
}

export function isTasklatchError(error: unknown, code?: ErrorCode): error is TasklatchError {
  return error instanceof TasklatchError && (code === undefined || error.code === code);
}
