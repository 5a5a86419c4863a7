import { JSON_RPC_CODES } from '../core/json-rpc-codes.js';

/**
 * Thrown by a tool handler to end its call with a JSON-RPC error instead of a tool result: a
 * plain call answers that error, and a task ends `failed` with it stored as its outcome
 * (`{ error: { code, message, data? } }`), which each wire reports in its own way. A tool that
 * merely failed at its job returns an `isError` result instead.
 */
export class ProtocolError extends Error {
  override readonly name = 'ProtocolError';

  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
  }

  /** The JSON-RPC error object, as stored and as sent. */
  toJSON(): StoredError['error'] {
    return { code: this.code, message: this.message, ...(this.data === undefined ? {} : { data: this.data }) };
  }
}

/** How long a client is asked to wait before it retries a request the store could not serve. */
export const STORE_RETRY_AFTER_MS = 2000;

/** Store unavailable (either wire): nothing was decided, the request may be sent again after `retryAfterMs`. */
export function storeUnavailable(): ProtocolError {
  return new ProtocolError(JSON_RPC_CODES.storeUnavailable, 'Store unavailable: retry later', { retryAfterMs: STORE_RETRY_AFTER_MS });
}

/** The stored outcome of a task that ended in a JSON-RPC error. */
export interface StoredError {
  error: { code: number; message: string; data?: unknown };
}

/** Whether a stored outcome is a JSON-RPC error rather than a tool result. */
export function isStoredError(outcome: unknown): outcome is StoredError {
  if (typeof outcome !== 'object' || outcome === null || !('error' in outcome)) return false;
  const error = outcome.error;
  return (
    typeof error === 'object' &&
    error !== null &&
    typeof (error as { code?: unknown }).code === 'number' &&
    typeof (error as { message?: unknown }).message === 'string'
  );
}
