import { TasklatchError } from './errors.js';
import { isTerminal, type Millis, type TaskStatus } from './types.js';

// RFC 3339 date-time: full date, 'T' (or 't'/space is not allowed here), time, optional fraction,
// and a mandatory offset. Anything else is refused rather than guessed at.
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

/** Parses an RFC 3339 timestamp to epoch milliseconds (sub-millisecond digits are dropped). */
export function parseTimestamp(text: string): Millis {
  const match = RFC3339.exec(text);
  const ms = match ? Date.parse(normalise(text)) : Number.NaN;
  if (!Number.isFinite(ms)) {
    throw new TasklatchError('INVALID_INPUT', `not an RFC 3339 timestamp: ${JSON.stringify(text)}`);
  }
  return ms;
}

export function isTimestamp(text: string): boolean {
  try {
    parseTimestamp(text);
    return true;
  } catch {
    return false;
  }
}

function normalise(text: string): string {
  // Date.parse accepts at most millisecond digits reliably; cut longer fractions.
  return text.replace(/(\.\d{3})\d+/, '$1').toUpperCase();
}

/** ISO 8601 text of an instant, as the wire shows it. */
export function formatTimestamp(ms: Millis): string {
  return new Date(ms).toISOString();
}

/** A record with `expiresAt` set is expired once `expiresAt <= now`. */
export function isExpired(record: { expiresAt: Millis | null }, now: Millis): boolean {
  return record.expiresAt !== null && record.expiresAt <= now;
}

/**
 * Whether a stored task is past its retention and may be removed: `retentionMs` after it
 * expired (a task with a ttl, which answers as expired until then), or after its last update (a
 * terminal task without one); never while it runs without a ttl. The SQL stores' sweep restates
 * it as `expires_at_ms <= cutoff OR (no ttl, terminal, last_updated_at_ms <= cutoff)` with
 * `cutoff = now - retentionMs`.
 */
export function isPastRetention(record: { expiresAt: Millis | null; lastUpdatedAt: Millis; status: TaskStatus }, now: Millis, retentionMs: number): boolean {
  const cutoff = now - retentionMs;
  if (record.expiresAt !== null) return record.expiresAt <= cutoff;
  return isTerminal(record.status) && record.lastUpdatedAt <= cutoff;
}
