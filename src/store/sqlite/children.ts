import type { Millis, TaskRecord } from '../../core/types.js';
import type { SqliteDatabase, SqliteStatement } from './driver.js';
import { rowToRecord, type TaskRow } from './row.js';

/**
 * The children role of the SQLite store (`TaskChildren`): a parent's children through the
 * `tasks_parent` index, and the wake of a parent one of them ended for.
 */
const childrenSql = {
  children: `SELECT * FROM tasks WHERE parent_task_id = @task_id AND auth_key = @auth_key ORDER BY created_at_ms, task_id`,
  /** The parent's open entry due now: the parent working and held by no run (restates wakeParent). */
  wakeParent: `UPDATE task_outbox SET available_at_ms = @now
     WHERE done_at_ms IS NULL AND available_at_ms > @now
       AND task_id = (SELECT parent_task_id FROM tasks WHERE task_id = @task_id)
       AND EXISTS (SELECT 1 FROM tasks p WHERE p.task_id = task_outbox.task_id AND p.status = 'working' AND p.lease_owner IS NULL)
     RETURNING task_id`,
} as const;

export type ChildrenStatements = { readonly [K in keyof typeof childrenSql]: SqliteStatement };

export function prepareChildrenStatements(db: SqliteDatabase): ChildrenStatements {
  return Object.fromEntries(Object.entries(childrenSql).map(([name, text]) => [name, db.prepare(text)] as const)) as ChildrenStatements;
}

export function childTasksIn(sql: ChildrenStatements, input: { authKey: string; taskId: string }): TaskRecord[] {
  return (sql.children.all({ task_id: input.taskId, auth_key: input.authKey }) as TaskRow[]).map(rowToRecord);
}

export function wakeParentIn(sql: ChildrenStatements, input: { taskId: string; now: Millis }): string | null {
  const row = sql.wakeParent.get({ task_id: input.taskId, now: input.now }) as { task_id: string } | undefined;
  return row?.task_id ?? null;
}
