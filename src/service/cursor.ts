import { createHmac, timingSafeEqual } from 'node:crypto';
import { TasklatchError } from '../core/errors.js';
import type { ListPosition } from '../store/types.js';

/**
 * Opaque list cursors: the keyset position plus an HMAC over (auth key, position) with the
 * store's shared secret. Another caller's cursor, an edited one or one from another store fails
 * the check; the caller learns nothing about whose it was.
 */
export function encodeCursor(secret: Uint8Array, authKey: string, position: ListPosition): string {
  const body = Buffer.from(JSON.stringify([position.createdAt, position.taskId]), 'utf8').toString('base64url');
  return `${body}.${sign(secret, authKey, body)}`;
}

export function decodeCursor(secret: Uint8Array, authKey: string, cursor: unknown): ListPosition {
  if (typeof cursor !== 'string' || cursor.length > 4096) throw invalid();
  const dot = cursor.indexOf('.');
  if (dot <= 0) throw invalid();
  const body = cursor.slice(0, dot);
  // The signature's text, not the bytes it decodes to: base64url decoding ignores the unused low
  // bits of a last character, so an edited cursor could decode to the same bytes and pass.
  const mac = Buffer.from(cursor.slice(dot + 1), 'utf8');
  const expected = Buffer.from(sign(secret, authKey, body), 'utf8');
  if (mac.length !== expected.length || !timingSafeEqual(mac, expected)) throw invalid();
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
  } catch {
    throw invalid();
  }
  if (!Array.isArray(parsed) || typeof parsed[0] !== 'number' || typeof parsed[1] !== 'string') throw invalid();
  return { createdAt: parsed[0], taskId: parsed[1] };
}

function sign(secret: Uint8Array, authKey: string, body: string): string {
  return createHmac('sha256', secret).update(authKey, 'utf8').update('\n').update(body, 'utf8').digest('base64url');
}

function invalid(): TasklatchError {
  return new TasklatchError('INVALID_CURSOR', 'invalid cursor');
}
