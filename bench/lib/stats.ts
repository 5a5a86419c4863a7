/** Percentiles, medians and the load loop every throughput scenario shares. */

/** Nearest-rank percentile of `values` (0–100); NaN for none. Sorts a copy. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank] as number;
}

export function median(values: readonly number[]): number {
  return percentile(values, 50);
}

/** Latency summary in milliseconds. */
export interface Latency {
  n: number;
  p50: number;
  p99: number;
  max: number;
}

export function summarize(latencies: readonly number[]): Latency {
  return { n: latencies.length, p50: percentile(latencies, 50), p99: percentile(latencies, 99), max: percentile(latencies, 100) };
}

/** One timed round of a closed-loop load. */
export interface Round {
  ops: number;
  elapsedMs: number;
  /** Operations per second over the round. */
  rate: number;
  latencies: number[];
}

/**
 * `concurrency` requestors each run `op` back to back until `durationMs` has passed (closed
 * loop: a requestor sends its next request when the previous one answered). Throughput is
 * answered operations over the time until the last requestor stopped.
 */
export async function runRound(concurrency: number, durationMs: number, op: (worker: number) => Promise<void>): Promise<Round> {
  const latencies: number[] = [];
  const start = performance.now();
  const deadline = start + durationMs;
  await Promise.all(
    Array.from({ length: concurrency }, async (_, worker) => {
      while (performance.now() < deadline) {
        const t0 = performance.now();
        await op(worker);
        latencies.push(performance.now() - t0);
      }
    }),
  );
  const elapsedMs = performance.now() - start;
  return { ops: latencies.length, elapsedMs, rate: (latencies.length * 1000) / elapsedMs, latencies };
}

/** Runs `op` `count` times, one at a time, and returns each duration (ms). */
export async function timeEach(count: number, op: (i: number) => Promise<void>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < count; i++) {
    const t0 = performance.now();
    await op(i);
    out.push(performance.now() - t0);
  }
  return out;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Rounds for display: 3 significant digits, no exponent. */
export function fmt(value: number): string {
  if (!Number.isFinite(value)) return '–';
  if (value >= 100) return value.toFixed(0);
  if (value >= 10) return value.toFixed(1);
  if (value >= 1) return value.toFixed(2);
  return value.toFixed(3);
}
