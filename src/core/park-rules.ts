import type { ParkDecision } from './decisions.js';
import { holdsFence } from './dispatch-rules.js';
import { formatTimestamp, isExpired } from './time.js';
import { isTerminal, type Fence, type Millis, type TaskRecord } from './types.js';

/**
 * Parking: a run whose handler disagrees with its task's journal (the journal has `sleep "wait"`
 * at position 1 and this code asks for `step "a2"` there: a deploy changed the handler under a
 * task in flight) stops without a terminal write. The task stays `working`, its status message
 * says why, its lease is given back and its outbox entry is due again after `parkDelay`: any
 * worker may take it then, so a fixed or rolled back deploy finishes it. A terminal `failed`
 * would be final (the latch), and nothing could repair it.
 */

/** The first wait of a parked task, in ms; each park doubles it (`parkDelay`). */
export const PARK_BASE_DELAY_MS = 1000;
/** The longest wait of a parked task: a fixed deploy picks it up within a minute. */
export const PARK_MAX_DELAY_MS = 60_000;

/**
 * How long a task waits after its `parks`-th park in a row (1, 2, …): 1 s, 2 s, 4 s, … capped at
 * a minute. No jitter: the retry is one outbox entry's due time, not a crowd of clients.
 */
export function parkDelay(parks: number): number {
  const n = Math.max(1, Math.floor(parks));
  // 2 ** 6 * 1 s is past the cap already; the exponent is bounded so a large count stays finite.
  return Math.min(PARK_MAX_DELAY_MS, PARK_BASE_DELAY_MS * 2 ** Math.min(n - 1, 16));
}

/**
 * What a tool does when a run's handler disagrees with the journal (`TaskTool.onJournalMismatch`):
 * `park` (the default) leaves the task working and retries it with backoff; `fail` ends it
 * `failed` with the order error, as before parking existed.
 */
export const JOURNAL_MISMATCH_ACTIONS = ['park', 'fail'] as const;
export type JournalMismatchAction = (typeof JOURNAL_MISMATCH_ACTIONS)[number];

/** How an order error starts (`stepOrderMessage` of step-rules.ts; a test holds the two together). */
const ORDER_CHANGE_PREFIX = 'step order changed at position ';

/**
 * Whether a run's fatal error is a journal mismatch (steps, sleeps or asks in another order,
 * kind or name than recorded) and so parks. A step name used twice in one run is a fault of the
 * handler whatever the journal holds, and fails as before.
 */
export function isJournalMismatch(message: string): boolean {
  return message.startsWith(ORDER_CHANGE_PREFIX);
}

/**
 * Why a run parked, as its status message's reason: the order error (it names the position and
 * both entries) and the version of the code that met it.
 */
export function parkReason(mismatch: string, version: string | null): string {
  return version === null ? mismatch : `${mismatch} (version ${version})`;
}

const PARKED_PREFIX = 'parked: ';

/** The status message of a parked task: why, and when it is tried again. */
export function parkedMessage(reason: string, retryAt: Millis): string {
  return `${PARKED_PREFIX}${reason}; retrying at ${formatTimestamp(retryAt)}`;
}

/** Whether a status message is a park's (`parkedMessage`): a run that gets past the point clears it. */
export function isParkedMessage(message: string | null): boolean {
  return message !== null && message.startsWith(PARKED_PREFIX);
}

/** How a parked task is marked in the store: since when (the first park of the streak) and how many parks. */
export interface ParkMark {
  parkedAt: Millis;
  parks: number;
}

/**
 * Whether a run may park its task: the same fence as every fenced write of a run (`holdsFence`),
 * on a `working` task. A stale fence (another run took the task) or a terminal task (cancelled
 * meanwhile) is refused: nothing is written.
 */
export function decidePark(input: {
  record: Pick<TaskRecord, 'taskId' | 'authKey' | 'status' | 'version' | 'expiresAt' | 'leaseOwner'> | null;
  fence: Fence;
  now: Millis;
}): ParkDecision {
  const { record, fence, now } = input;
  if (record === null) return 'NOT_FOUND';
  if (record.authKey !== fence.authKey) return 'BLOCK_AUTH';
  if (isExpired(record, now)) return 'BLOCK_EXPIRED';
  if (isTerminal(record.status)) return 'BLOCK_TERMINAL_REWRITE';
  if (record.status !== 'working' || !holdsFence(record, fence, now)) return 'BLOCK_STALE_VERSION';
  return 'APPLY_PARK';
}

/**
 * What an applied park writes, from the mark it finds (null: not parked): the next count, the
 * streak's start kept, the wake time and the status message.
 */
export function parkWrite(input: { mark: ParkMark | null; reason: string; now: Millis }): { mark: ParkMark; wakeAt: Millis; statusMessage: string } {
  const parks = (input.mark?.parks ?? 0) + 1;
  const wakeAt = input.now + parkDelay(parks);
  return { mark: { parkedAt: input.mark?.parkedAt ?? input.now, parks }, wakeAt, statusMessage: parkedMessage(input.reason, wakeAt) };
}
