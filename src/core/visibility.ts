import type { MissDecision } from './decisions.js';
import { isExpired } from './time.js';
import type { Millis, TaskRecord } from './types.js';

/**
 * Who may see a stored task: the caller whose auth key created it, until it expires. Every
 * surface that names a task (transition, read, cancel, ask, answer, the result wait, the
 * subscriptions of either wire) asks these two functions, so that no path shows a record the
 * others would hide.
 */

/** The part of a record visibility reads. */
export type VisibleRecord = Pick<TaskRecord, 'authKey' | 'expiresAt'>;

/**
 * Why a record is not visible to `auth` at `now`, or null when it is. The order (missing, other
 * context, expired) is the contract's; on the wire the three look the same.
 */
export function classifyMiss(record: VisibleRecord | null, auth: string, now: Millis): MissDecision | null {
  if (record === null) return 'NOT_FOUND';
  if (record.authKey !== auth) return 'BLOCK_AUTH';
  if (isExpired(record, now)) return 'BLOCK_EXPIRED';
  return null;
}

/** Whether `record` is within `auth`'s reach at `now`: `classifyMiss` finds nothing wrong with it. */
export function visibleTo(record: VisibleRecord, auth: string, now: Millis): boolean {
  return classifyMiss(record, auth, now) === null;
}
