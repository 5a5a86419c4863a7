import { decidePark, parkWrite, type ParkMark } from '../../core/park-rules.js';
import { isExpired } from '../../core/time.js';
import type { Millis, TaskRecord } from '../../core/types.js';
import { auditLine } from '../audit-line.js';
import type { ParkedCount } from '../task-steps.js';
import type { AuditEntry, ParkInput, ParkOutcome } from '../types.js';

/**
 * The park write and the parked-tasks reads of the memory store (park-rules.ts), over the
 * store's own maps. The marks are a map beside the records, as the SQL stores keep them in
 * columns beside a record's: callers never see them.
 */
export interface MemoryParkState {
  readonly tasks: ReadonlyMap<string, TaskRecord>;
  /** taskId → its park mark: the parked_at_ms and parks columns of the SQL stores. */
  readonly marks: Map<string, ParkMark>;
  readonly outbox: ReadonlyMap<string, { availableAt: Millis; doneAt: Millis | null }>;
  readonly audit: { append(line: AuditEntry): void };
}

export function parkIn(state: MemoryParkState, input: ParkInput): ParkOutcome {
  const { fence, now } = input;
  const task = state.tasks.get(fence.taskId) ?? null;
  const decision = decidePark({ record: task, fence, now });
  let parked: ParkOutcome['parked'] = null;
  if (decision === 'APPLY_PARK' && task !== null) {
    const write = parkWrite({ mark: state.marks.get(task.taskId) ?? null, reason: input.reason, now });
    state.marks.set(task.taskId, write.mark);
    task.version += 1;
    task.lastUpdatedAt = now;
    task.statusMessage = write.statusMessage;
    task.attempt = 0;
    task.leaseOwner = null;
    task.leaseExpiresAt = null;
    const entry = state.outbox.get(task.taskId);
    if (entry !== undefined && entry.doneAt === null) entry.availableAt = write.wakeAt;
    parked = Object.assign({ wakeAt: write.wakeAt }, write.mark);
  }
  const visible = task !== null && task.authKey === fence.authKey ? task : null;
  const detail = parked === null ? null : `parked ${parked.parks}`;
  state.audit.append(
    auditLine({
      at: now,
      surface: 'step',
      decision,
      authKey: fence.authKey,
      taskId: fence.taskId,
      correlationId: input.correlationId,
      record: visible,
      detail,
    }),
  );
  return { decision, record: visible === null ? null : structuredClone(visible), parked };
}

/** The mark of `task` as the operator reads it: a working task's (`parkMarkOf` of the SQL stores), else null. */
export function parkMarkIn(state: Pick<MemoryParkState, 'marks'>, task: TaskRecord): ParkMark | null {
  return task.status === 'working' ? (state.marks.get(task.taskId) ?? null) : null;
}

/** A step's or an ask's outcome, after which an applied one has cleared its task's mark (the run got past the point). */
export function unparkAfter<T extends { decision: string }>(state: Pick<MemoryParkState, 'marks'>, taskId: string, out: T): T {
  if (out.decision === 'APPLY_STEP' || out.decision === 'APPLY_ASK') state.marks.delete(taskId);
  return out;
}

/** Whether `task` counts as parked at `now` (the gauge): working, unexpired, marked. */
function isParked(state: Pick<MemoryParkState, 'marks'>, task: TaskRecord, now: Millis): boolean {
  return task.status === 'working' && !isExpired(task, now) && state.marks.has(task.taskId);
}

/** Parked tasks by app and tool, in (app, tool) order as the SQL stores' ORDER BY. */
export function parkedIn(state: MemoryParkState, now: Millis): ParkedCount[] {
  const counts = new Map<string, ParkedCount>();
  for (const taskId of state.marks.keys()) {
    const task = state.tasks.get(taskId);
    if (task === undefined || !isParked(state, task, now)) continue;
    const key = `${task.app}\n${task.toolName ?? ''}`;
    const row = counts.get(key) ?? { app: task.app, tool: task.toolName, count: 0 };
    row.count++;
    counts.set(key, row);
  }
  return [...counts.values()].sort((a, b) =>
    a.app !== b.app ? (a.app < b.app ? -1 : 1) : (a.tool ?? '') < (b.tool ?? '') ? -1 : (a.tool ?? '') > (b.tool ?? '') ? 1 : 0,
  );
}
