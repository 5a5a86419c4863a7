/** Sizes of the HTTP polling scenarios (tasks/get over HTTP, polling capacity, memory). */
export interface PollingConfig {
  /** Concurrent closed-loop pollers of the tasks/get-over-HTTP scenario. */
  pollers: readonly number[];
  /** Warm-up and length of one closed-loop round (ms); the three servers take turns, `rounds` times. */
  warmupMs: number;
  roundMs: number;
  rounds: number;
  /** Closed-loop load each server answers before its first measured round, unmeasured (ms): a server is measured warm, as it runs. */
  serverWarmupMs: number;
  /** Fleet sizes tried in turn, until tasks/get p99 passes `fleetP99Ms`. */
  fleetSizes: readonly number[];
  /** How often each client of the fleet polls (the suggested pollIntervalMs). */
  pollIntervalMs: number;
  /** Measured windows per fleet size and their length (ms), after a warm-up of two intervals; the median window's p99 counts. */
  fleetWindows: number;
  fleetWindowMs: number;
  fleetP99Ms: number;
  /** Sessions, blocked tasks/result and waiting tasks opened for the memory figures. */
  memorySessions: number;
  memoryBlocked: number;
  memoryTasks: number;
}

/**
 * The fleet sizes tried, when TASKLATCH_BENCH_FLEET_SIZES names them (comma-separated, e.g.
 * `4000,8000`): a measurement of a few sizes without the climb from the smallest.
 */
function fleetSizesOverride(): number[] | null {
  const given = process.env.TASKLATCH_BENCH_FLEET_SIZES;
  if (given === undefined || given.trim() === '') return null;
  const sizes = given.split(',').map((s) => Number(s.trim()));
  if (sizes.some((n) => !Number.isInteger(n) || n <= 0)) throw new Error(`TASKLATCH_BENCH_FLEET_SIZES: whole numbers, comma-separated; got ${given}`);
  return sizes;
}

export function pollingConfig(quick: boolean): PollingConfig {
  const config = sizedConfig(quick);
  const sizes = fleetSizesOverride();
  return sizes === null ? config : { ...config, fleetSizes: sizes };
}

function sizedConfig(quick: boolean): PollingConfig {
  return quick
    ? {
        pollers: [16, 64],
        warmupMs: 200,
        roundMs: 600,
        rounds: 2,
        serverWarmupMs: 1500,
        fleetSizes: [250, 500, 1000, 2000],
        pollIntervalMs: 1000,
        fleetWindows: 1,
        fleetWindowMs: 2000,
        fleetP99Ms: 50,
        memorySessions: 100,
        memoryBlocked: 100,
        memoryTasks: 1000,
      }
    : {
        pollers: [16, 64],
        warmupMs: 500,
        roundMs: 2000,
        rounds: 3,
        serverWarmupMs: 3000,
        fleetSizes: [100, 250, 500, 1000, 2000, 3000, 4000, 5000, 6000, 8000, 10_000],
        pollIntervalMs: 1000,
        fleetWindows: 3,
        fleetWindowMs: 3000,
        fleetP99Ms: 50,
        memorySessions: 500,
        memoryBlocked: 500,
        memoryTasks: 5000,
      };
}
