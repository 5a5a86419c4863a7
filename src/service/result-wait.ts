import { visibleTo } from '../core/visibility.js';
import { isTerminal, type Millis, type TaskRecord } from '../core/types.js';
import type { TaskWatch } from './change-feed.js';
import type { ReadOutcome } from './task-service.js';

type Quiet = (decision: ReadOutcome['decision']) => boolean;

/** What a held `tasks/result` needs of the service: its clock, two ways to decide, and a watch already started. */
export interface ResultWaitParts {
  watch: TaskWatch;
  clock: () => Millis;
  /** The decision on the stored record, read now. */
  readStore: (quietIf: Quiet) => Promise<ReadOutcome>;
  /** The same decision, audit line and event on a record this process just wrote. */
  decideOn: (record: TaskRecord, quietIf: Quiet) => Promise<ReadOutcome>;
  fallbackPollMs: () => number;
}

/**
 * The loop of a held `tasks/result` (see `TaskService.awaitResult`): decide, and while the task
 * waits, sleep until a change, the fallback poll or the task's expiry. A wake by this process's
 * own write decides from the record that write returned when that record is terminal (final: no
 * later write can change it), the caller's, unexpired and newer than the one decided last; any
 * other wake reads the store, since another process may have written after this one.
 */
export async function waitForResult(
  parts: ResultWaitParts,
  input: { auth: string; signal?: AbortSignal | undefined; onWaitInput?: ((record: TaskRecord) => void | Promise<void>) | undefined },
): Promise<ReadOutcome> {
  // One audit line per decision this wait goes through (waiting, waiting for input, the
  // result), not one per wake: a long wait must not grow the trail.
  let said: ReadOutcome['decision'] | null = null;
  const quietIf = (decision: ReadOutcome['decision']) => decision === said;
  let carried: TaskRecord | null = null;
  let seen = 0;
  for (;;) {
    const outcome =
      carried !== null && isTerminal(carried.status) && carried.version > seen && visibleTo(carried, input.auth, parts.clock())
        ? await parts.decideOn(carried, quietIf)
        : await parts.readStore(quietIf);
    said = outcome.decision;
    if (outcome.decision !== 'WAIT_TERMINAL' && outcome.decision !== 'WAIT_INPUT') return outcome;
    if (input.signal?.aborted === true) return outcome;
    if (outcome.decision === 'WAIT_INPUT') await input.onWaitInput?.(outcome.record);
    seen = outcome.record.version;
    const untilExpiry = outcome.record.expiresAt === null ? Infinity : outcome.record.expiresAt - parts.clock();
    carried = await parts.watch.changed(Math.max(1, Math.min(parts.fallbackPollMs(), untilExpiry)), input.signal);
    // A requestor that went away while this waited gets nothing more: no read, no audit line.
    if (isAborted(input.signal)) return outcome;
  }
}

/** Read through a call, so that a check after an await is not narrowed away by one before it. */
function isAborted(signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true;
}
