import type { TransitionDecision } from './decisions.js';
import { resultDigest } from './digest.js';
import { isTaskStatus, isTerminal, type Millis, type StatusWrite, type TaskRecord } from './types.js';
import { classifyMiss } from './visibility.js';

/** The part of a record the transition and read rules look at. */
export type GuardedRecord = Pick<TaskRecord, 'authKey' | 'status' | 'version' | 'expiresAt' | 'result' | 'resultDigest'>;

function storedResultDigest(record: GuardedRecord): string | null {
  if (record.resultDigest !== null) return record.resultDigest;
  return record.result === null || record.result === undefined ? null : resultDigest(record.result);
}

/** The transition surface, in the contract's precedence. */
export function decideTransition(input: { task: GuardedRecord | null; auth: string; write: StatusWrite; now: Millis }): TransitionDecision {
  const { task, write } = input;
  const miss = classifyMiss(task, input.auth, input.now);
  if (miss !== null || task === null) return miss ?? 'NOT_FOUND';
  if (!isTaskStatus(write.status)) return 'BLOCK_ILLEGAL_TRANSITION';
  if (isTerminal(task.status)) {
    if (write.status !== task.status) return 'BLOCK_TERMINAL_REWRITE';
    const stored = storedResultDigest(task);
    const written = write.result === undefined || write.result === null ? null : resultDigest(write.result);
    // The results are compared only when both sides carry one.
    return stored === null || written === null || stored === written ? 'IDEMPOTENT_TERMINAL' : 'BLOCK_TERMINAL_REWRITE';
  }
  if (write.expectedVersion !== task.version) return 'BLOCK_STALE_VERSION';
  return 'APPLY_TRANSITION';
}
