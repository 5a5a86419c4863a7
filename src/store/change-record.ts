import { isTaskStatus, isTerminal, type TaskRecord } from '../core/types.js';

/**
 * The most bytes one encoded record may take on a NOTIFY: PostgreSQL refuses a payload of 8000
 * bytes or more, and the payload also carries the schema name (at most 63 bytes) in front.
 */
export const RECORD_PAYLOAD_BYTES = 7900;

/**
 * A terminal record as it was committed, as one line of JSON within `RECORD_PAYLOAD_BYTES`, for
 * the change notification it goes out with; null for any other record (a later write may have
 * changed it already, so only a read can say what it is now) and for one too large to travel.
 */
export function encodeTerminalRecord(record: TaskRecord): string | null {
  if (!isTerminal(record.status)) return null;
  const text = JSON.stringify(record);
  return Buffer.byteLength(text, 'utf8') <= RECORD_PAYLOAD_BYTES ? text : null;
}

const NULLABLE_TEXT = ['toolName', 'toolDigest', 'statusMessage', 'requestDigest', 'idempotencyKey', 'resultDigest', 'correlationId', 'leaseOwner'] as const;
const NULLABLE_NUMBER = ['ttl', 'expiresAt', 'pollInterval', 'leaseExpiresAt'] as const;

/**
 * A terminal record another process encoded, checked field by field: anything malformed or not
 * terminal is null, and its change is then only news (the waiter reads the store).
 */
export function decodeTerminalRecord(text: string): TaskRecord | null {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof value !== 'object' || value === null) return null;
  const r = value as Record<string, unknown>;
  if (typeof r.taskId !== 'string' || typeof r.authKey !== 'string' || typeof r.app !== 'string') return null;
  if (typeof r.status !== 'string' || !isTaskStatus(r.status) || !isTerminal(r.status)) return null;
  if (!Number.isSafeInteger(r.version) || !Number.isSafeInteger(r.attempt)) return null;
  if (typeof r.createdAt !== 'number' || typeof r.lastUpdatedAt !== 'number' || typeof r.cancelRequested !== 'boolean') return null;
  if (NULLABLE_TEXT.some((key) => r[key] !== null && typeof r[key] !== 'string')) return null;
  if (NULLABLE_NUMBER.some((key) => r[key] !== null && typeof r[key] !== 'number')) return null;
  if (!('request' in r) || !('result' in r)) return null;
  return r as unknown as TaskRecord;
}
