/**
 * The messages between the polling scenarios and their two child processes (the server under
 * test and the load generator), over the IPC channel of `fork`.
 */

/** Which server the server process runs. */
export type ServerKind = 'tasklatch' | 'bare';

/** Which wire a poll speaks: the 2026-07-28 stateless POST, a 2025-11-25 session, or the bare ceiling. */
export const GENERATIONS = ['2026', '2025', 'bare'] as const;
export type Generation = (typeof GENERATIONS)[number];

export interface ServerStart {
  kind: ServerKind;
  /** 'memory', 'sqlite' (a file path follows) or a PostgreSQL store URL. */
  store: 'memory' | 'sqlite' | 'postgres';
  location?: string;
  /** Bearer tokens the server knows; token i is principal `bench-<i>/poller`. */
  tokens: number;
  /** The bare server's reply body. */
  bareBody?: string;
}

/** One task a poller reads, with the token of its owner. */
export interface PollTarget {
  taskId: string;
  token: string;
}

export type ServerRequest = { op: 'start'; start: ServerStart } | { op: 'seed'; n: number } | { op: 'rss' } | { op: 'cpu' } | { op: 'stop' };

export interface LoadClosed {
  op: 'closed';
  url: string;
  generation: Generation;
  targets: PollTarget[];
  concurrency: number;
  warmupMs: number;
  durationMs: number;
}

export interface LoadFleet {
  op: 'fleet';
  url: string;
  generation: Generation;
  targets: PollTarget[];
  intervalMs: number;
  /** Measured windows, one after another, each `durationMs` long. */
  windows: number;
  durationMs: number;
  /** Polls in the first `warmupMs` are not counted (connections opening, phases spreading). */
  warmupMs: number;
}

/** Opens `n` 2025-11-25 sessions and keeps them; or `n` blocked tasks/result on them. */
export interface LoadHold {
  op: 'sessions' | 'block';
  url: string;
  targets: PollTarget[];
}

export type LoadRequest = LoadClosed | LoadFleet | LoadHold | { op: 'release' } | { op: 'stop' };

/** What a closed or fleet load measured. */
export interface LoadReport {
  ops: number;
  /** Polls sent in the whole job, warm-up included (for CPU per poll over the server's window). */
  allOps: number;
  rate: number;
  latencies: number[];
  errors: number;
  /** CPU time the load generator used over the measured window (ms), and the window (ms). */
  cpuMs: number;
  wallMs: number;
  /** Time the load generator waited for a CPU over the window (ms). */
  waitMs: number;
  /** Fleet: the latencies of each measured window. */
  windows?: number[][];
  /** Fleet: polls that started later than their schedule by more than one interval. */
  late?: number;
}
