/** Sizes of one run: the full run (under ~10 minutes on 2 cores) or the quick smoke run. */
export interface BenchConfig {
  quick: boolean;
  /** Requestor counts of the throughput scenarios. */
  concurrency: readonly number[];
  /** Warm-up before a variant's first measured round (ms). */
  warmupMs: number;
  /** Length of one measured round (ms). */
  roundMs: number;
  /** Measured rounds per variant; variants of one group take turns round by round. */
  rounds: number;
  /** Samples of the latency scenarios (end to end, wake-up). */
  latencySamples: number;
  /**
   * Samples of the wake-up across processes, per run: its p99 is judged, and of 300 samples the
   * p99 is the third slowest, which one burst of the machine's other load decides. With the 30
   * unmeasured, below the 1,000 unexpired tasks one caller may store (`maxStoredTasks`).
   */
  crossWakeSamples: number;
  /** Stored tasks and tenants of the reads-at-scale scenario. */
  readTasks: number;
  readTenants: number;
  /** tasks/get and tasks/list samples at scale. */
  readSamples: number;
  /** Racing rounds of the contention scenario. */
  contentionRounds: number;
  /** Writers racing on one task. */
  contentionWriters: number;
  /** Upper bound on one sweeper measurement (ms); the rate is taken over what it deleted. */
  sweepBudgetMs: number;
}

export function benchConfig(quick: boolean): BenchConfig {
  return quick
    ? {
        quick,
        concurrency: [1, 16, 64],
        warmupMs: 150,
        roundMs: 300,
        rounds: 2,
        latencySamples: 40,
        crossWakeSamples: 40,
        readTasks: 20_000,
        readTenants: 100,
        readSamples: 300,
        contentionRounds: 8,
        contentionWriters: 64,
        sweepBudgetMs: 3_000,
      }
    : {
        quick,
        concurrency: [1, 16, 64],
        warmupMs: 400,
        roundMs: 1_200,
        rounds: 3,
        latencySamples: 300,
        crossWakeSamples: 900,
        readTasks: 1_000_000,
        readTenants: 1_000,
        readSamples: 2_000,
        contentionRounds: 40,
        contentionWriters: 64,
        sweepBudgetMs: 20_000,
      };
}
