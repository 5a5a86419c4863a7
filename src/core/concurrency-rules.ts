import { leaseHeld } from './dispatch-rules.js';
import { TasklatchError } from './errors.js';
import { META_KEYS } from './meta-keys.js';
import { isExpired } from './time.js';
import type { Millis, TaskRecord } from './types.js';

/**
 * Concurrency keys: at most `limit` runs of a tool at once per key, across every worker and
 * process. The key is computed when a task is admitted (the admitting process has the arguments
 * and the principal) and stored with the task, in its stored request's `_meta` under
 * `META_KEYS.concurrency`, together with the limit in force at admission; the SQL stores keep
 * both in columns of their own (`concurrency_key`, `concurrency_limit`): SQLite as virtual
 * generated columns, PostgreSQL as columns that admission writes from the request (migration
 * 020: a stored generated column costs every UPDATE of the row). Storing the limit makes a
 * claim decidable from the store alone: a claimer need not know the tool's definition, and a
 * deploy that changes the limit applies to the tasks admitted after it.
 *
 * A task of a key holds a slot while it runs: `working`, its lease held, unexpired. A task that
 * sleeps, waits for input or is parked gave its lease back and holds none; nor does a task that
 * ended. A claim takes a task of a key only while fewer than `limit` tasks of that (app, tool,
 * key) hold a slot, counting the claims of the same walk; the others stay due, untouched.
 */

/** A task's concurrency key and the limit it was admitted under. */
export interface ConcurrencySlot {
  key: string;
  limit: number;
}

/** Longest key stored (characters): a key is a name (a customer id, a region), not data. */
export const MAX_CONCURRENCY_KEY = 200;

/** The most runs a limit may allow at once (a guard against a typo, not a tuning knob). */
export const MAX_CONCURRENCY_LIMIT = 1_000_000;

/** Checks a tool's `concurrency.limit` when the tool is defined: an integer from 1 to `MAX_CONCURRENCY_LIMIT`. */
export function checkConcurrencyLimit(limit: unknown, what: string): void {
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > MAX_CONCURRENCY_LIMIT) {
    throw new TasklatchError('INVALID_INPUT', `${what} must be an integer from 1 to ${MAX_CONCURRENCY_LIMIT}, got ${String(limit)}`);
  }
}

/**
 * The slot of a task about to be admitted: the key the tool's function computed (absent: the
 * tool's name, one key for the whole tool), checked to be a string of 1 to
 * `MAX_CONCURRENCY_KEY` characters. A bad key refuses the call (`INVALID_INPUT`): it is the
 * tool's own fault, said before anything is stored.
 */
export function concurrencySlot(toolName: string, limit: number, key: unknown): ConcurrencySlot {
  const chosen = key === undefined ? toolName : key;
  if (typeof chosen !== 'string' || chosen.length === 0 || chosen.length > MAX_CONCURRENCY_KEY) {
    throw new TasklatchError('INVALID_INPUT', `the concurrency key of tool ${toolName} must be a string of 1 to ${MAX_CONCURRENCY_KEY} characters`);
  }
  return { key: chosen, limit };
}

/** The slot a stored request names (`META_KEYS.concurrency`), or null: a task of no key runs unlimited. */
export function slotOf(request: unknown): ConcurrencySlot | null {
  const meta = (request as { params?: { _meta?: Record<string, unknown> } } | null)?.params?._meta;
  const slot = meta?.[META_KEYS.concurrency] as Partial<ConcurrencySlot> | undefined;
  if (slot === undefined || slot === null || typeof slot.key !== 'string' || typeof slot.limit !== 'number') return null;
  return { key: slot.key, limit: slot.limit };
}

/** Whether a task holds a slot of its key at `now`: working, leased, unexpired. */
export function holdsSlot(task: Pick<TaskRecord, 'status' | 'leaseOwner' | 'leaseExpiresAt' | 'expiresAt'>, now: Millis): boolean {
  return task.status === 'working' && leaseHeld(task, now) && !isExpired(task, now);
}

/** Whether a claim may take one more task of a key that `running` tasks hold slots of. */
export function slotFree(limit: number, running: number): boolean {
  return running < limit;
}

/** The status message of a task waiting for a slot: its key and how many of how many run. */
export function waitingMessage(key: string, running: number, limit: number): string {
  return `waiting for a concurrency slot (key ${JSON.stringify(key)}, ${running} of ${limit} running)`;
}

/** Whether a status message is one `waitingMessage` wrote (a claim clears it). */
export function isWaitingMessage(message: string | null): boolean {
  return message !== null && message.startsWith('waiting for a concurrency slot (');
}

/** The identity a slot is counted by: one tool of one app, one key. */
export function slotScope(task: Pick<TaskRecord, 'app' | 'toolName'>, key: string): string {
  return `${task.app}\n${task.toolName ?? ''}\n${key}`;
}
