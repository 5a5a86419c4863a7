import { isTakeover } from '../core/dispatch-rules.js';
import type { StepRecord } from '../core/step-rules.js';
import { isTerminal, type Millis, type TaskRecord } from '../core/types.js';
import type { TaskInspection } from '../store/task-operations.js';
import type { AuditEntry, TaskStore } from '../store/types.js';

/** Everything the task page shows, read from the store (no cache: the stored fact). */
export interface TaskView {
  inspection: TaskInspection;
  steps: StepRecord[];
  audit: AuditEntry[];
  children: TaskRecord[];
}

/** One change of status, from the audit lines of the writes that made it. */
export interface StatusChange {
  at: Millis;
  status: string;
  version: number | null;
  decision: string;
  correlationId: string;
  takeover: boolean;
}

export async function readTaskView(store: TaskStore, taskId: string): Promise<TaskView | null> {
  const inspection = await store.inspectTask({ taskId });
  if (inspection === null) return null;
  const [steps, audit, children] = await Promise.all([
    store.taskSteps({ taskId }),
    store.auditTrail({ taskId }),
    store.childTasks({ authKey: inspection.record.authKey, taskId }),
  ]);
  return { inspection, steps, audit, children };
}

/**
 * The status history: the exact audit lines (not the aggregated reads) whose status differs from
 * the line before, and every takeover (a claim of a lapsed lease: same status, a new run).
 */
export function statusHistory(audit: readonly AuditEntry[]): StatusChange[] {
  const changes: StatusChange[] = [];
  let last: string | null = null;
  for (const line of audit) {
    if (line.count !== undefined || line.status === null || line.status === undefined) continue;
    const takeover = line.decision === 'APPLY_TRANSITION' && isTakeover(line.detail);
    if (line.status === last && !takeover) continue;
    last = line.status;
    changes.push({ at: line.at, status: line.status, version: line.version ?? null, decision: line.decision, correlationId: line.correlationId, takeover });
  }
  return changes;
}

/** The live part of a task as the page's script polls it (`/console/api/tasks/ID`). */
export function liveState(view: TaskView) {
  const { record } = view.inspection;
  return {
    taskId: record.taskId,
    status: record.status,
    version: record.version,
    terminal: isTerminal(record.status),
    lastUpdatedAt: record.lastUpdatedAt,
    steps: view.steps.length,
    stepsUpdatedAt: Math.max(0, ...view.steps.map((s) => s.updatedAt)),
    auditLines: view.audit.length,
  };
}
