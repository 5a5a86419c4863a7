import { setTimeout as sleep } from 'node:timers/promises';
import { coerceError } from '../core/errors.js';
import type { RunLogger } from './run-events.js';

/**
 * The one retry policy of a run's store calls, for writes of unknown fate and store faults
 * alike: the n-th pause (from 0) is `firstPauseMs` doubled n times, at most `maxPauseMs`, and a
 * pause is taken only if the run's lease outlasts it. Past its lease the task may be another
 * run's, which may have written what this one meant to: this run tries nothing more.
 */
export const RUN_RETRY = { firstPauseMs: 100, maxPauseMs: 2000 } as const;

/** The pause before retry `retry` (from 0) under `RUN_RETRY`, or null when the lease runs out first. */
export function retryPause(retry: number, now: number, leaseUntil: number): number | null {
  const pause = Math.min(RUN_RETRY.firstPauseMs * 2 ** retry, RUN_RETRY.maxPauseMs);
  return now + pause < leaseUntil ? pause : null;
}

/** A fenced write of a run, and how to read what it may have stored. */
export interface UnknownWrite<T> {
  /** What is written, for the log (`terminal`, `step`), and the step's name if it is one. */
  what: string;
  step?: string;
  /** The write. A throw leaves its fate unknown: it may have landed. */
  attempt(): Promise<T>;
  /**
   * The stored fact, read after a write of unknown fate: null when the write did not land and
   * may be made again; otherwise the outcome to go on with (it landed, or what is stored now
   * makes writing again wrong). A throw is a failed read, made again after the next pause.
   */
  stored(): Promise<T | null>;
  /** The run's clock and the end of its lease, read at each pause (a heartbeat moves it on). */
  now(): number;
  leaseUntil(): number;
  /** Stops the pauses (the run was stopped): its reason is thrown. */
  signal?: AbortSignal;
  logger: RunLogger;
}

/** How a write of a run went: its outcome, or `lease out` (its fate unknown when the lease ran out). */
export type UnknownWriteResult<T> = { outcome: T } | 'lease out';

/**
 * Makes a fenced write whose fate may be unknown (the store failed mid-write: the write may have
 * landed), and never writes blindly twice: after a failure it pauses (`RUN_RETRY`), reads the
 * stored fact, and writes again only if the write did not land; a read that fails is made
 * again. It stops when the lease would run out before the next pause ends.
 */
export async function writeOfUnknownFate<T>(write: UnknownWrite<T>): Promise<UnknownWriteResult<T>> {
  let retry = 0;
  for (;;) {
    try {
      return { outcome: await write.attempt() };
    } catch (error) {
      const fields = { write: write.what, err: coerceError(error), retry };
      write.logger.emit('run:writeUnknown', write.step === undefined ? fields : Object.assign(fields, { step: write.step }));
    }
    for (;;) {
      const pause = retryPause(retry++, write.now(), write.leaseUntil());
      if (pause === null) return 'lease out';
      write.signal?.throwIfAborted();
      await sleep(pause, undefined, write.signal === undefined ? undefined : { signal: write.signal });
      let fact: T | null;
      try {
        fact = await write.stored();
      } catch {
        continue;
      }
      if (fact !== null) return { outcome: fact };
      break;
    }
  }
}
