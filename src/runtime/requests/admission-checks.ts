import { idempotencyKeyOf } from '../../core/create-rules.js';
import { TasklatchError } from '../../core/errors.js';
import type { WireRequest } from '../../core/types.js';
import { jsonBytes } from '../../service/limits.js';

/**
 * The key a task of `request` is kept under: its `_meta` key or the HTTP `Idempotency-Key`
 * header, whichever it has. Both given and different: INVALID_INPUT (invalid params on either
 * wire), before anything is prepared or stored.
 */
export function agreedKey(request: WireRequest, headerKey: string | null): string | null {
  const metaKey = idempotencyKeyOf(request);
  if (metaKey !== null && headerKey !== null && metaKey !== headerKey) {
    throw new TasklatchError('INVALID_INPUT', 'the Idempotency-Key header and _meta idempotency key differ');
  }
  return metaKey ?? headerKey;
}

/**
 * The request as a task stores it (what the tool's `prepare` returned included) is at most
 * `maxRequestBytes` of JSON; larger: INVALID_INPUT, and nothing is stored.
 */
export function checkStoredBytes(request: WireRequest, maxRequestBytes: number): void {
  const requestBytes = jsonBytes(request.params);
  if (requestBytes > maxRequestBytes) {
    throw new TasklatchError('INVALID_INPUT', `the request is ${requestBytes} bytes as stored; at most ${maxRequestBytes} bytes are kept`);
  }
}
