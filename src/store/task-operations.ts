import type { StoredInput } from '../core/input-rules.js';
import type { ParkMark } from '../core/park-rules.js';
import type { StepRecord } from '../core/step-rules.js';
import type { ParkedCount } from './task-steps.js';
import type { Millis, TaskRecord, TaskStatus } from '../core/types.js';

/**
 * The operations role: what an operator reads across every tenant (`tasklatch tasks`, the
 * metrics scrape, the readiness check). Nothing here writes: an operator's repair (a cancel)
 * goes through the guard like any caller's, under the principal it names.
 */

/** Which tasks an operator looks at; every field narrows, none given is every task. */
export interface TaskFilter {
  tenant?: string;
  /** The subject within a tenant (with `tenant`) or in any tenant (without). */
  subject?: string;
  status?: TaskStatus;
  /** The application that admitted the task. */
  app?: string;
  tool?: string;
  /** The version of its tool the task was admitted with (`TaskRecord.toolVersion`). */
  toolVersion?: string;
  /** Created at or after. */
  createdSince?: Millis;
  /** Created before. */
  createdBefore?: Millis;
  /** Only parked tasks (`working` with a park mark: a journal mismatch waits for code that agrees), expired ones included as for every filter. */
  parked?: boolean;
  /** Only the children of this task (`ctx.step.runTool`). */
  parentTaskId?: string;
  /** Only `working` tasks with a sleep or a retry's wait in their journal not yet passed. */
  sleeping?: boolean;
  /** Only `working` tasks whose journal holds a wait for an event not yet ended. */
  waitingForEvent?: boolean;
}

/** Keyset position in the operator's order: newest first, (createdAt, taskId) descending. */
export interface OperatorPosition {
  createdAt: Millis;
  taskId: string;
}

export interface OperatorPage {
  /** Newest first; expired records not yet swept are included (the operator sees what is stored). */
  records: TaskRecord[];
  hasMore: boolean;
}

/** A task's outbox entry as stored: whether and when a worker may claim it. */
export interface DispatchEntry {
  createdAt: Millis;
  availableAt: Millis;
  claimedBy: string | null;
  leaseExpiresAt: Millis | null;
  attempt: number;
  /** Set once the entry is closed (terminal, cancelled, expired, abandoned). */
  doneAt: Millis | null;
}

/** Everything stored about one task. */
export interface TaskInspection {
  record: TaskRecord;
  /** Null for records that never had one (seeded, or swept entries). */
  dispatch: DispatchEntry | null;
  /** Its questions in ask order, answered and outstanding. */
  inputs: StoredInput[];
  /** Since when and how many times in a row the task has parked (park-rules.ts); null when it is not parked. */
  parked: ParkMark | null;
}

/** Counts of the stored tasks at `now`. */
export interface TaskStats {
  total: number;
  byStatus: Record<TaskStatus, number>;
  /** One row per (tool, status) present, by tool then status. */
  byTool: Array<{ tool: string | null; status: TaskStatus; count: number }>;
  /** The longest-running `working` task (by creation), unexpired. */
  oldestWorking: { taskId: string; authKey: string; createdAt: Millis } | null;
  /** Records past their ttl that the sweeper has not deleted yet. */
  expiredAwaitingSweep: number;
  /** Outbox entries not yet closed. */
  pendingDispatch: number;
}

/** Where the store's schema stands compared with this code's migration files. */
export interface SchemaState {
  /** Files this code has that the store has not applied. */
  pending: string[];
  /** Why the store belongs to another version of tasklatch (unknown or changed migrations), else null. */
  mismatch: string | null;
}

/**
 * What a look at a store found, without changing it (`tasklatch doctor`; each SQL store's
 * probe.ts, chosen by `probeStore`).
 */
export interface StoreProbe {
  /** The store, for messages (never a password). */
  where: string;
  /** Why it could not be reached, or null. */
  unreachable: string | null;
  /** Its schema against this code's migrations (null when unreachable). */
  schema: SchemaState | null;
  /** PostgreSQL: `ok` when LISTEN works, else why not; null where there is nothing to listen on. */
  notifications: string | null;
  /** The driver the store is read with, where there is a choice (SQLite). */
  driver?: string;
}

/** Counts of audit lines after a position of the trail (the metrics scrape reads the tail). */
export interface AuditTally {
  /** The trail's last line now; the next tally starts after it. */
  position: number;
  /** Tasks ended `failed` by a claim after using up their attempts, in the lines read. */
  abandoned: number;
}

export interface TaskOperations {
  /** One page of every tenant's tasks matching `filter`, newest first, after `after`. */
  findTasks(input: { filter: TaskFilter; after: OperatorPosition | null; limit: number }): Promise<OperatorPage>;
  /** The record, outbox entry and questions of a task of any auth key; null when none is stored. */
  inspectTask(input: { taskId: string }): Promise<TaskInspection | null>;
  taskStats(input: { now: Millis }): Promise<TaskStats>;
  /** The journal of a task of any auth key, in position order (empty when it has none or is not stored). */
  taskSteps(input: { taskId: string }): Promise<StepRecord[]>;
  /**
   * Tasks sleeping at `now`: `working`, unexpired, with a sleep or a retry's wait in their
   * journal whose wake time is still to come (the sleeping-tasks gauge).
   */
  sleepingTasks(input: { now: Millis }): Promise<number>;
  /** Tasks parked at `now`, by app and tool (`working`, unexpired, a park mark set: the parked-tasks gauge). */
  parkedTasks(input: { now: Millis }): Promise<ParkedCount[]>;
  /**
   * Asks the database (one round trip) where the schema stands; throws `STORE_UNAVAILABLE` when
   * it cannot be reached.
   */
  schemaState(): Promise<SchemaState>;
  /** Abandoned tasks among the audit lines after `after` (null: none counted, only the position). */
  auditTally(input: { after: number | null }): Promise<AuditTally>;
  /**
   * What the retention sweep would remove at `now` (`sweepExpired` with no bound), counted and
   * left in place (`tasklatch prune --dry-run`).
   */
  retentionDue(input: { now: Millis; retentionMs: number }): Promise<RetentionDue>;
}

/** Tasks past their retention, and the audit rows that would go with them or are orphaned. */
export interface RetentionDue {
  tasks: number;
  auditRows: number;
}

/** The stats of no tasks at all; stores fill in what they count. */
export function emptyStats(): TaskStats {
  return {
    total: 0,
    byStatus: { working: 0, input_required: 0, completed: 0, failed: 0, cancelled: 0 },
    byTool: [],
    oldestWorking: null,
    expiredAwaitingSweep: 0,
    pendingDispatch: 0,
  };
}

/** The audit detail a claim writes when it ends a task out of attempts (every store writes it). */
export const ABANDONED_DETAIL = 'abandoned';
