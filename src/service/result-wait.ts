import { decideVisibleRead } from '../core/read-rules.js';
import { visibleTo } from '../core/visibility.js';
import { isTerminal, type Millis, type TaskRecord } from '../core/types.js';
import type { ChangeFeed } from './change-feed.js';
import type { Guard } from './guard.js';
import type { ReadOutcome } from './outcomes.js';
import type { RequestorSurface } from './requestor-surface.js';
import { rideThrough } from './ride-through.js';
import type { TaskEvents } from './task-events.js';

/** What a held `tasks/result` needs of the service: its feed, events and clock, its reads, and how long to sleep unwoken. */
export interface ResultWaitParts {
  changes: Pick<ChangeFeed, 'watch'>;
  events: Pick<TaskEvents, 'emit'>;
  clock: () => Millis;
  reads: Pick<RequestorSurface, 'read' | 'decideOn'>;
  /** How long a waiter sleeps without an event (see `NotificationRelay.fallbackPollMs`). */
  fallbackPollMs: () => number;
  /** Runs one read through a short store outage (`rideThrough` with `limits.storeOutageMs`). */
  outlast: <T>(read: () => Promise<T>) => Promise<T>;
}

export interface AwaitResultInput {
  auth: string;
  taskId: string;
  signal?: AbortSignal;
  /** Bounds each sleep instead of the relay's default. */
  fallbackPollMs?: number;
  /** Called on every wake that finds the task waiting for input (the wire delivers the questions). */
  onWaitInput?: (record: TaskRecord) => void | Promise<void>;
}

/**
 * `tasks/result`: holds until the task is terminal and returns the read decision then (or a
 * miss, once the task expires); returns early, still waiting, when `signal` aborts. Decides, and
 * while the task waits, sleeps until a change, the fallback poll or the task's expiry. A wake by
 * this process's own write decides from the record that write returned when that record is
 * terminal (final: no later write can change it), the caller's, unexpired and newer than the one
 * decided last; such a record that leaves the task working only sends the wait back to sleep
 * (a read would decide WAIT_TERMINAL again, without a line); any other wake reads the store,
 * since another process may have written after this one.
 */
export async function awaitResult(parts: ResultWaitParts, input: AwaitResultInput): Promise<ReadOutcome> {
  const { auth, taskId } = input;
  // Watched before the first read, so that a change between that read and the sleep is not missed.
  const watch = parts.changes.watch(taskId);
  parts.events.emit('waiting', 'result', 1);
  try {
    // One audit line per decision this wait goes through (waiting, waiting for input, the
    // result), not one per wake: a long wait must not grow the trail.
    let said: ReadOutcome['decision'] | null = null;
    const quietIf = (decision: ReadOutcome['decision']) => decision === said;
    const ask = { auth, method: 'tasks/result' as const, taskId, quietIf };
    let carried: TaskRecord | null = null;
    let seen = 0;
    for (;;) {
      const decided = carried;
      // A store outage shorter than the bound is waited out (each look reads again); past it the
      // store's error ends the wait, and the wire answers the retryable `Store unavailable`.
      const outcome = await parts.outlast(() =>
        decided !== null && isTerminal(decided.status) && decided.version > seen && visibleTo(decided, auth, parts.clock())
          ? parts.reads.decideOn(ask, { decision: 'FOUND', record: { ...decided } })
          : parts.reads.read(ask),
      );
      said = outcome.decision;
      if (outcome.decision !== 'WAIT_TERMINAL' && outcome.decision !== 'WAIT_INPUT') return outcome;
      if (input.signal?.aborted === true) return outcome;
      if (outcome.decision === 'WAIT_INPUT' && input.onWaitInput !== undefined) {
        const onWaitInput = input.onWaitInput;
        await parts.outlast(async () => onWaitInput(outcome.record));
      }
      let waitingOn: TaskRecord = outcome.record;
      for (;;) {
        seen = waitingOn.version;
        const untilExpiry = waitingOn.expiresAt === null ? Infinity : waitingOn.expiresAt - parts.clock();
        const sleepMs = input.fallbackPollMs ?? parts.fallbackPollMs();
        carried = await watch.changed(Math.max(1, Math.min(sleepMs, untilExpiry)), input.signal);
        // A requestor that went away while this waited gets nothing more: no read, no audit line.
        if (isAborted(input.signal)) return outcome;
        // This process's own write (a claim, say) that leaves the task working: a read would
        // decide WAIT_TERMINAL again, quietly, and wait on. Any other process's change since
        // wakes this wait again, and that wake reads the store.
        if (!stillWorking(carried, seen, said, auth, parts.clock())) break;
        waitingOn = carried!;
      }
    }
  } finally {
    watch.close();
    parts.events.emit('waiting', 'result', -1);
  }
}

/** Whether `carried` (this process's own newer write) decides the WAIT_TERMINAL already said. */
function stillWorking(carried: TaskRecord | null, seen: number, said: ReadOutcome['decision'] | null, auth: string, now: Millis): boolean {
  return (
    carried !== null &&
    said === 'WAIT_TERMINAL' &&
    carried.version > seen &&
    visibleTo(carried, auth, now) &&
    decideVisibleRead('tasks/result', carried) === 'WAIT_TERMINAL'
  );
}

/** Read through a call, so that a check after an await is not narrowed away by one before it. */
function isAborted(signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true;
}

/**
 * `tasks/result` held on the guard's parts: its change feed, events and clock, the requestor's
 * reads, the relay's fallback poll, and each look run through a store outage shorter than
 * `limits.storeOutageMs` until `input.signal` aborts (past it the store's error is thrown).
 */
export function awaitTaskResult(guard: Pick<Guard, 'context' | 'requestor' | 'relay'>, input: AwaitResultInput): Promise<ReadOutcome> {
  const { context, requestor, relay } = guard;
  const parts: ResultWaitParts = {
    changes: context.changes,
    events: context.events,
    clock: context.clock,
    reads: requestor,
    fallbackPollMs: () => relay.fallbackPollMs(),
    outlast: <T>(read: () => Promise<T>) => rideThrough(read, context.limits.storeOutageMs, input.signal),
  };
  return awaitResult(parts, input);
}
