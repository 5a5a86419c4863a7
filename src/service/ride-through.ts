import { setTimeout as sleep } from 'node:timers/promises';
import { isStoreFault } from '../core/errors.js';

/** How long a request waits out a store outage before it answers `Store unavailable` (ms). */
export const DEFAULT_STORE_OUTAGE_MS = 15_000;

/** The first wait after a store fault, doubled after each further fault up to `MAX_PAUSE_MS`. */
const FIRST_PAUSE_MS = 100;
const MAX_PAUSE_MS = 1000;

/**
 * Runs `work`, and runs it again while it fails with a store fault (`isStoreFault`), for up to
 * `boundMs` after the first fault: a read that waits (a held `tasks/result`, a subscription, a
 * poll of a client that gives up on its first error) rides through a short outage instead of
 * ending with an error. Past the bound, or on any other error, the error is thrown; so it is
 * when `signal` aborts. Only for work that decides nothing when it fails (reads): a write of
 * unknown fate is not sent again blindly.
 */
export async function rideThrough<T>(work: () => Promise<T>, boundMs: number, signal?: AbortSignal): Promise<T> {
  let since: number | null = null;
  for (let attempt = 0; ; attempt++) {
    try {
      return await work();
    } catch (error) {
      if (!isStoreFault(error) || signal?.aborted === true) throw error;
      // Wall time, not the service's clock: a test's fake clock must not stretch or cut an outage.
      const now = performance.now();
      since ??= now;
      const left = since + boundMs - now;
      if (left <= 0) throw error;
      const paused = await sleep(Math.min(FIRST_PAUSE_MS * 2 ** attempt, MAX_PAUSE_MS, left), true, signal === undefined ? undefined : { signal }).catch(
        () => false,
      );
      if (!paused) throw error;
    }
  }
}
