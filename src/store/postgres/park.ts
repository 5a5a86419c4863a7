import type pg from 'pg';
import { TasklatchError } from '../../core/errors.js';
import { decidePark, parkWrite } from '../../core/park-rules.js';
import type { Millis, TaskRecord } from '../../core/types.js';
import { auditLine } from '../audit-line.js';
import { parkMarkOf } from '../park-row.js';
import type { ParkedCount } from '../task-steps.js';
import type { ParkInput, ParkOutcome } from '../types.js';
import { auditToRow, rowToRecord, type TaskRow } from './row.js';
import { inShortTransaction } from './transactions.js';

/**
 * The park write and the parked-tasks count of the PostgreSQL store (park-rules.ts). A park is
 * one short transaction: the task row locked with BEGIN (as every writer of a task locks it),
 * judged by the core, then the write, its outbox entry and its audit line with COMMIT.
 */
const parkSql = {
  lockTask: `SELECT * FROM tasks WHERE task_id = $1 FOR UPDATE`,

  /**
   * An applied park under the task's lock: version + 1, a first attempt again, no lease, the
   * status message and the mark; the open outbox entry due at the wake time (not before), and
   * the audit line. Parameters: task id, the fence's version, now, status message, parked at,
   * parks, wake time, then the audit line (`auditToRow`).
   */
  applyPark: `
    WITH parked AS (
      UPDATE tasks SET version = version + 1, last_updated_at_ms = $3::bigint, status_message = $4::text,
             attempt = 0, lease_owner = NULL, lease_expires_at_ms = NULL, parked_at_ms = $5::bigint, parks = $6::int
       WHERE task_id = $1::text AND version = $2::int
      RETURNING *
    ), moved AS (
      UPDATE task_outbox o SET available_at_ms = $7::bigint, claimed_by = NULL, lease_expires_at_ms = NULL
        FROM parked p WHERE o.task_id = p.task_id AND o.done_at_ms IS NULL
    ), audited AS (
      INSERT INTO task_audit (at_ms, surface, decision, auth_key, task_id, correlation_id, status, version, detail)
      VALUES (${Array.from({ length: 9 }, (_, i) => `$${8 + i}`).join(', ')})
    )
    SELECT * FROM parked`,

  insertAudit: `INSERT INTO task_audit (at_ms, surface, decision, auth_key, task_id, correlation_id, status, version, detail)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,

  /** Restates the parked-tasks gauge: working, unexpired, marked; by app and tool ($1 now). */
  countParked: `
    SELECT app, tool_name, count(*)::int AS n FROM tasks
     WHERE parked_at_ms IS NOT NULL AND status = 'working' AND (expires_at_ms IS NULL OR expires_at_ms > $1)
     GROUP BY app, tool_name ORDER BY app COLLATE "C", coalesce(tool_name, '') COLLATE "C"`,
} as const;

/** One park under the task's lock; `parked` is set when it applied (the change is to be notified). */
export async function parkIn(pool: pg.Pool, input: ParkInput): Promise<ParkOutcome> {
  const { fence, now } = input;
  return inShortTransaction(pool, async (tx) => {
    const [locked] = await tx.queryAll([{ text: parkSql.lockTask, params: [fence.taskId] }]);
    const row = (locked?.rows as TaskRow[] | undefined)?.[0];
    const task = row === undefined ? null : rowToRecord(row);
    const decision = decidePark({ record: task, fence, now });
    const visible = task !== null && task.authKey === fence.authKey ? task : null;
    const line = (record: Pick<TaskRecord, 'status' | 'version'> | null, detail: string | null) =>
      auditToRow(
        auditLine({ at: now, surface: 'step', decision, authKey: fence.authKey, taskId: fence.taskId, correlationId: input.correlationId, record, detail }),
      );
    if (decision !== 'APPLY_PARK' || visible === null || row === undefined) {
      await tx.commitWith([{ text: parkSql.insertAudit, params: line(visible, null) }]);
      return { decision, record: visible, parked: null };
    }
    const write = parkWrite({ mark: parkMarkOf(row), reason: input.reason, now });
    const { parkedAt, parks } = write.mark;
    const after = { status: visible.status, version: visible.version + 1 };
    const params = [fence.taskId, fence.version, now, write.statusMessage, parkedAt, parks, write.wakeAt, ...line(after, `parked ${parks}`)];
    const [applied] = await tx.commitWith([{ text: parkSql.applyPark, params }]);
    const parkedRow = (applied?.rows as TaskRow[] | undefined)?.[0];
    if (parkedRow === undefined) throw new TasklatchError('INTERNAL', `task ${JSON.stringify(fence.taskId)} changed under the lock of its park`);
    return { decision, record: rowToRecord(parkedRow), parked: { parkedAt, parks, wakeAt: write.wakeAt } };
  });
}

export async function parkedIn(pool: pg.Pool, now: Millis): Promise<ParkedCount[]> {
  const rows = (await pool.query<{ app: string; tool_name: string | null; n: number }>(parkSql.countParked, [now])).rows;
  return rows.map((r) => ({ app: r.app, tool: r.tool_name, count: r.n }));
}
