import { createCipheriv, createDecipheriv, hkdfSync, randomFillSync } from 'node:crypto';
import { isTaskStatus, isTerminal, type TaskRecord } from '../core/types.js';

/**
 * The most bytes one encoded record may take on a NOTIFY: PostgreSQL refuses a payload of 8000
 * bytes or more, and the payload also carries the schema name (at most 63 bytes) in front.
 */
export const RECORD_PAYLOAD_BYTES = 7900;

/**
 * The key records travel under, derived from the store's shared secret (`tasklatch_meta`, which
 * only roles that can read tasklatch's tables can read). Any role that may connect to the
 * database may LISTEN, so a record on a notification is sealed (AES-256-GCM): a listener without
 * the secret learns nothing of a task's request or result, and cannot forge a record.
 */
export function recordKey(secret: Uint8Array): Buffer {
  return Buffer.from(hkdfSync('sha256', secret, Buffer.alloc(0), 'tasklatch terminal records on notifications', 32));
}

const IV_BYTES = 12;
const TAG_BYTES = 16;

/**
 * Random bytes for IVs, drawn 12 at a time and refilled when used up: one `randomBytes(12)` per
 * terminal write cost more than the sealing itself (as `randomUUID` keeps its own pool).
 */
const ivPool = Buffer.alloc(IV_BYTES * 256);
let ivAt = ivPool.length;

/** A fresh random IV, valid until the next call (the cipher and the sealed record copy it). */
function nextIv(): Buffer {
  if (ivAt + IV_BYTES > ivPool.length) {
    randomFillSync(ivPool);
    ivAt = 0;
  }
  const iv = ivPool.subarray(ivAt, ivAt + IV_BYTES);
  ivAt += IV_BYTES;
  return iv;
}

/**
 * A terminal record as it was committed, sealed with `key` and in base64 within
 * `RECORD_PAYLOAD_BYTES`, for the change notification it goes out with; null for any other record
 * (a later write may have changed it already, so only a read can say what it is now) and for one
 * too large to travel.
 */
export function encodeTerminalRecord(record: TaskRecord, key: Buffer): string | null {
  if (!isTerminal(record.status)) return null;
  const text = JSON.stringify(record);
  // base64 of iv + tag + the text: 4/3 of their bytes.
  if (Math.ceil((IV_BYTES + TAG_BYTES + Buffer.byteLength(text, 'utf8')) / 3) * 4 > RECORD_PAYLOAD_BYTES) return null;
  const iv = nextIv();
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const sealed = Buffer.concat([cipher.update(text, 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), sealed]).toString('base64');
}

/** The record `encodeTerminalRecord` sealed with `key`, checked; null when it does not open or is malformed. */
export function openTerminalRecord(payload: string, key: Buffer): TaskRecord | null {
  const bytes = Buffer.from(payload, 'base64');
  if (bytes.length <= IV_BYTES + TAG_BYTES) return null;
  let text: string;
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, bytes.subarray(0, IV_BYTES));
    decipher.setAuthTag(bytes.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    text = Buffer.concat([decipher.update(bytes.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
  } catch {
    return null;
  }
  return decodeTerminalRecord(text);
}

const NULLABLE_TEXT = [
  'toolName',
  'toolDigest',
  'toolVersion',
  'statusMessage',
  'requestDigest',
  'idempotencyKey',
  'resultDigest',
  'correlationId',
  'leaseOwner',
] as const;
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
  // Sent by a process older than tool versions: its record names none.
  if (r.toolVersion === undefined) r.toolVersion = null;
  if (typeof r.taskId !== 'string' || typeof r.authKey !== 'string' || typeof r.app !== 'string') return null;
  if (typeof r.status !== 'string' || !isTaskStatus(r.status) || !isTerminal(r.status)) return null;
  if (!Number.isSafeInteger(r.version) || !Number.isSafeInteger(r.attempt)) return null;
  if (typeof r.createdAt !== 'number' || typeof r.lastUpdatedAt !== 'number' || typeof r.cancelRequested !== 'boolean') return null;
  if (NULLABLE_TEXT.some((key) => r[key] !== null && typeof r[key] !== 'string')) return null;
  if (NULLABLE_NUMBER.some((key) => r[key] !== null && typeof r[key] !== 'number')) return null;
  if (!('request' in r) || !('result' in r)) return null;
  return r as unknown as TaskRecord;
}
