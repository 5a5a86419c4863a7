import { principalOf } from '../../core/principal.js';
import { compareListOrder } from '../../core/read-rules.js';
import { isExpired } from '../../core/time.js';
import type { Millis, TaskRecord } from '../../core/types.js';
import type { StoredInput } from '../../core/input-rules.js';
import type { StepRecord } from '../../core/step-rules.js';
import {
  emptyStats,
  type AuditTally,
  type OperatorPage,
  type OperatorPosition,
  type TaskFilter,
  type TaskInspection,
  type TaskStats,
} from '../task-operations.js';
import type { MemoryAudit } from './memory-audit.js';
import { parkMarkIn, type MemoryParkState } from './memory-park.js';

/** What the memory store's operator reads see of it. */
export interface MemoryOperationsState {
  /** taskId → its journal rows (memory-steps.ts). */
  journal: ReadonlyMap<string, readonly StepRecord[]>;
  tasks: ReadonlyMap<string, TaskRecord>;
  outbox: ReadonlyMap<string, { createdAt: Millis; availableAt: Millis; doneAt: Millis | null }>;
  questions: ReadonlyMap<string, StoredInput[]>;
  audit: Pick<MemoryAudit, 'tally'>;
  /** The park marks (memory-park.ts). */
  parks: Pick<MemoryParkState, 'marks'>;
}

/** Whether `record` passes every field of `filter` (the SQL stores' WHERE clauses). */
export function matchesFilter(record: TaskRecord, filter: TaskFilter): boolean {
  const { tenant, subject } = principalOf(record.authKey);
  return (
    (filter.tenant === undefined || tenant === filter.tenant) &&
    (filter.subject === undefined || subject === filter.subject) &&
    (filter.status === undefined || record.status === filter.status) &&
    (filter.app === undefined || record.app === filter.app) &&
    (filter.tool === undefined || record.toolName === filter.tool) &&
    (filter.toolVersion === undefined || record.toolVersion === filter.toolVersion) &&
    (filter.createdSince === undefined || record.createdAt >= filter.createdSince) &&
    (filter.createdBefore === undefined || record.createdAt < filter.createdBefore)
  );
}

export function findTasksIn(state: MemoryOperationsState, input: { filter: TaskFilter; after: OperatorPosition | null; limit: number }): OperatorPage {
  const { after, filter } = input;
  const rows = [...state.tasks.values()]
    .filter((r) => matchesFilter(r, filter) && (after === null || compareListOrder(r, after) < 0))
    .filter((r) => filter.parked !== true || parkMarkIn(state.parks, r) !== null)
    .filter((r) => filter.parentTaskId === undefined || r.parentTaskId === filter.parentTaskId)
    .filter(
      (r) => filter.sleeping !== true || (r.status === 'working' && pendingRow(state, r.taskId, (s) => s.status === 'sleeping' || s.status === 'retrying')),
    )
    .filter(
      (r) => filter.waitingForEvent !== true || (r.status === 'working' && pendingRow(state, r.taskId, (s) => s.kind === 'event' && s.status === 'waiting')),
    )
    .sort((a, b) => compareListOrder(b, a));
  return { records: rows.slice(0, input.limit).map((r) => structuredClone(r)), hasMore: rows.length > input.limit };
}

function pendingRow(state: MemoryOperationsState, taskId: string, test: (row: StepRecord) => boolean): boolean {
  return (state.journal.get(taskId) ?? []).some(test);
}

export function inspectTaskIn(state: MemoryOperationsState, taskId: string): TaskInspection | null {
  const record = state.tasks.get(taskId);
  if (record === undefined) return null;
  const entry = state.outbox.get(taskId);
  return {
    record: structuredClone(record),
    // The memory outbox keeps only timing; the lease and attempt live on the record alone.
    dispatch:
      entry === undefined
        ? null
        : {
            createdAt: entry.createdAt,
            availableAt: entry.availableAt,
            claimedBy: record.leaseOwner,
            leaseExpiresAt: record.leaseExpiresAt,
            attempt: record.attempt,
            doneAt: entry.doneAt,
          },
    inputs: structuredClone(state.questions.get(taskId) ?? []),
    parked: parkMarkIn(state.parks, record),
  };
}

export function taskStatsIn(state: MemoryOperationsState, now: Millis): TaskStats {
  const stats = emptyStats();
  const byTool = new Map<string, TaskStats['byTool'][number]>();
  for (const r of state.tasks.values()) {
    stats.total++;
    stats.byStatus[r.status]++;
    const key = `${r.toolName ?? ''}\n${r.status}`;
    const row = byTool.get(key) ?? { tool: r.toolName, status: r.status, count: 0 };
    row.count++;
    byTool.set(key, row);
    if (isExpired(r, now)) stats.expiredAwaitingSweep++;
    else if (r.status === 'working' && (stats.oldestWorking === null || compareListOrder(r, stats.oldestWorking) < 0)) {
      stats.oldestWorking = { taskId: r.taskId, authKey: r.authKey, createdAt: r.createdAt };
    }
  }
  stats.byTool = [...byTool.values()].sort((a, b) => compareToolRows(a, b));
  stats.pendingDispatch = [...state.outbox.values()].filter((e) => e.doneAt === null).length;
  return stats;
}

/** By tool (no tool first), then status: the SQL stores' ORDER BY. */
export function compareToolRows(a: { tool: string | null; status: string }, b: { tool: string | null; status: string }): number {
  const ta = a.tool ?? '';
  const tb = b.tool ?? '';
  if (ta !== tb) return ta < tb ? -1 : 1;
  return a.status < b.status ? -1 : a.status > b.status ? 1 : 0;
}

/** Positions are line ids of the trail, as the SQL stores' are. */
export function auditTallyIn(state: MemoryOperationsState, after: number | null): AuditTally {
  return state.audit.tally(after);
}
