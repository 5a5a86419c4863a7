import type pg from 'pg';
import type { Millis, TaskRecord } from '../../core/types.js';
import { ownerIs } from './predicates.js';
import { rowToRecord, type TaskRow } from './row.js';

/**
 * The children role of the PostgreSQL store (`TaskChildren`): a parent's children through the
 * `tasks_parent` index, and the wake of a parent one of them ended for.
 */
export const childrenSql = {
  /** The owner test is no index condition (`ownerIs`): the listing order of the caller's tasks would give the order and walk all of them. */
  children: `SELECT * FROM tasks WHERE parent_task_id = $1 AND ${ownerIs('$2')} ORDER BY created_at_ms, task_id`,
  /** $1 the child's id, $2 now: the parent's open entry due now, the parent working and held by no run (restates wakeParent). */
  wakeParent: `UPDATE task_outbox o SET available_at_ms = $2
     FROM tasks c, tasks p
    WHERE c.task_id = $1 AND p.task_id = c.parent_task_id AND o.task_id = p.task_id
      AND o.done_at_ms IS NULL AND o.available_at_ms > $2 AND p.status = 'working' AND p.lease_owner IS NULL
    RETURNING p.task_id, p.version`,
} as const;

export async function childTasksIn(pool: pg.Pool, input: { authKey: string; taskId: string }): Promise<TaskRecord[]> {
  return (await pool.query<TaskRow>(childrenSql.children, [input.taskId, input.authKey])).rows.map(rowToRecord);
}

/** The woken parent's id and version (for its change notification), or null. */
export async function wakeParentIn(pool: pg.Pool, input: { taskId: string; now: Millis }): Promise<{ taskId: string; version: number } | null> {
  const row = (await pool.query<{ task_id: string; version: number }>(childrenSql.wakeParent, [input.taskId, input.now])).rows[0];
  return row === undefined ? null : { taskId: row.task_id, version: row.version };
}
