import { readFileSync } from 'node:fs';

/**
 * Time this process's main thread spent runnable but waiting for a CPU (ms), from Linux's
 * /proc/self/schedstat; 0 where there is no such file. On a shared machine it says how much of a
 * latency was the scheduler's rather than the process's own work.
 */
export function runQueueWaitMs(): number {
  try {
    const fields = readFileSync('/proc/self/schedstat', 'utf8').trim().split(/\s+/);
    return Number(fields[1]) / 1e6;
  } catch {
    return 0;
  }
}
