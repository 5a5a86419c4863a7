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

/**
 * Whether `error` is a store fault: a `STORE_UNAVAILABLE` error itself or anywhere in its `cause`
 * chain. The chain is walked because a handler may catch a store error a run's call threw and
 * rethrow its own with the first as its cause (`new Error('…', { cause })`): the run must still
 * tell an outage, which a later attempt gets through, from the handler's own failure.
 */
export function isStoreFault(error: unknown): boolean {
  let at: unknown = error;
  // Bounded: a cause chain may be long or circular.
  for (let depth = 0; depth < 16 && at instanceof Error; depth++) {
    if (isTasklatchError(at, 'STORE_UNAVAILABLE')) return true;
    if (at instanceof AggregateError && at.errors.some((inner) => isStoreFault(inner))) return true;
    at = at.cause;
  }
  return false;
}

/**
 * Any thrown value as an `Error`, for every catch that logs or keeps what it caught: an `Error`
 * (of any realm) is returned as it is, with its stack; anything else (a string, a number, a plain
 * object, `undefined`) becomes an `Error` whose message says what was thrown, with the value as
 * its `cause`. Never throws, whatever the value does when it is read.
 */
export function coerceError(thrown: unknown): Error {
  if (thrown instanceof Error) return thrown;
  if (Object.prototype.toString.call(thrown) === '[object Error]') return thrown as Error;
  return new Error(`non-error thrown: ${describeThrown(thrown)}`, { cause: thrown });
}

/** What a non-`Error` thrown value was, in at most 300 characters. */
function describeThrown(thrown: unknown): string {
  let text: string;
  try {
    if (typeof thrown === 'string') text = JSON.stringify(thrown);
    else if (thrown !== null && typeof thrown === 'object') {
      const message = (thrown as { message?: unknown }).message;
      text = typeof message === 'string' && message !== '' ? message : (JSON.stringify(thrown) ?? Object.prototype.toString.call(thrown));
    } else text = String(thrown);
  } catch {
    text = `a value of type ${typeof thrown} that cannot be read`;
  }
  return text.length > 300 ? `${text.slice(0, 300)}…` : text;
}
