import type { BackendFilter, CpuSample } from '../../lib/backend-cpu.js';

/**
 * The messages between the steps scenario and its side processes (one for tasklatch, one for
 * DBOS Transact), over the IPC channel of `fork`. Each side runs in a process of its own so that
 * its Node CPU and round-trip counts hold nothing of the other side's background work.
 */

export type SideName = 'tasklatch' | 'dbos';

export interface SideStart {
  side: SideName;
  /** tasklatch: its store URL (schema and application_name set); DBOS: its system database URL. */
  url: string;
  /** The server without a database path, for the CPU monitor's own connection. */
  serverUrl: string;
  /** How this side's backends are found in pg_stat_activity. */
  backends: BackendFilter;
  /** Steps of one task of the end-to-end measurement. */
  steps: number;
  /** Tasks at once. */
  concurrency: number;
  /** Connections of the side's pool. */
  poolSize: number;
}

export type SideRequest =
  { op: 'start'; start: SideStart } | { op: 'tasks'; durationMs: number } | { op: 'loop'; warmupMs: number; durationMs: number } | { op: 'stop' };

/** What a window spent: Node CPU of the side process, its backends' CPU, its pg round trips. */
export interface Spent {
  cpu: CpuSample;
  roundTrips: number;
}

/** A closed-loop round of whole tasks. */
export interface TasksReport extends Spent {
  ops: number;
  elapsedMs: number;
  rate: number;
  latencies: number[];
}

/** Steps whose checkpoint committed inside a window of continuously stepping tasks. */
export interface LoopReport extends Spent {
  steps: number;
  elapsedMs: number;
}
