import type { SqliteDatabase, SqliteStatement } from './driver.js';
import type { Decision } from '../../core/decisions.js';
import type { Millis } from '../../core/types.js';
import { mergeTrail, readAuditEntry, type ReadAuditRow } from '../read-audit.js';
import type { RetentionDue } from '../task-operations.js';
import type { AuditEntry, SweepOutcome } from '../types.js';
import { rowToAudit, type AuditRow } from './row.js';

/**
 * The audit trail of the SQLite store: a task's trail (exact lines and aggregated rows), the
 * aggregated read audit (`task_read_audit`) and the retention pass. The caller runs each
 * function inside the store's write (or read) transaction.
 */

const READ_AUDIT_COLUMNS =
  'task_key, auth_key, surface, decision, window_start_ms, count, first_at_ms, last_at_ms, task_id, correlation_id, status, version, detail';

const SQL = {
  /** A task's exact lines, in the order written. */
  selectLines: 'SELECT * FROM task_audit WHERE task_id = ? ORDER BY id',
  /**
   * Restates mergeReadAudit: in DO UPDATE every unqualified column is the stored row's. Its
   * parameters are positional, in the order of `READ_AUDIT_COLUMNS` (`upsertReadAuditIn`): a
   * server answering thousands of polls a second upserts a row for each, and binding thirteen
   * named values from an object took about half of each upsert's time.
   */
  upsert: `INSERT INTO task_read_audit (${READ_AUDIT_COLUMNS})
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (task_key, auth_key, surface, decision, window_start_ms) DO UPDATE SET
       count = count + excluded.count,
       first_at_ms = min(first_at_ms, excluded.first_at_ms),
       last_at_ms = max(last_at_ms, excluded.last_at_ms),
       task_id = CASE WHEN excluded.last_at_ms >= last_at_ms THEN excluded.task_id ELSE task_id END,
       correlation_id = CASE WHEN excluded.last_at_ms >= last_at_ms THEN excluded.correlation_id ELSE correlation_id END,
       status = CASE WHEN excluded.last_at_ms >= last_at_ms THEN excluded.status ELSE status END,
       version = CASE WHEN excluded.last_at_ms >= last_at_ms THEN excluded.version ELSE version END,
       detail = CASE WHEN excluded.last_at_ms >= last_at_ms THEN excluded.detail ELSE detail END`,
  /** A task's rows: keyed by it, or naming it as the latest guess of a miss (rowConcerns). */
  select: `SELECT ${READ_AUDIT_COLUMNS} FROM task_read_audit
     WHERE task_key = ? OR (task_key = '' AND task_id = ?) ORDER BY first_at_ms, window_start_ms`,
  /** Tasks past retention, @cutoff = now - retention (restates isPastRetention); each branch reads its partial index. */
  dueTasks: `SELECT task_id FROM (SELECT task_id FROM tasks WHERE expires_at_ms <= @cutoff ORDER BY expires_at_ms LIMIT @limit)
     UNION ALL
     SELECT task_id FROM (SELECT task_id FROM tasks
       WHERE expires_at_ms IS NULL AND status IN ('completed', 'failed', 'cancelled') AND last_updated_at_ms <= @cutoff
       ORDER BY last_updated_at_ms LIMIT @limit)
     LIMIT @limit`,
  deleteLines: 'DELETE FROM task_audit WHERE task_id = ?',
  deleteReads: 'DELETE FROM task_read_audit WHERE task_key = ?',
  // The outbox entries, questions and steps go by ON DELETE CASCADE (open turns foreign_keys on).
  deleteTask: 'DELETE FROM tasks WHERE task_id = ?',
  /** Lines older than the cutoff whose task is gone, or that named none. */
  orphanLines: `DELETE FROM task_audit WHERE id IN (
       SELECT a.id FROM task_audit a
        WHERE a.at_ms <= @cutoff AND (a.task_id IS NULL OR NOT EXISTS (SELECT 1 FROM tasks t WHERE t.task_id = a.task_id))
        LIMIT @limit)`,
  orphanReads: `DELETE FROM task_read_audit WHERE (task_key, auth_key, surface, decision, window_start_ms) IN (
       SELECT r.task_key, r.auth_key, r.surface, r.decision, r.window_start_ms FROM task_read_audit r
        WHERE r.window_start_ms <= @cutoff AND r.last_at_ms <= @cutoff AND (r.task_key = '' OR NOT EXISTS (SELECT 1 FROM tasks t WHERE t.task_id = r.task_key))
        LIMIT @limit)`,
  /** What dueTasks, orphanLines and orphanReads would remove with no bound. */
  retentionDue: `WITH due AS (
       SELECT task_id FROM tasks
        WHERE expires_at_ms <= @cutoff OR (expires_at_ms IS NULL AND status IN ('completed', 'failed', 'cancelled') AND last_updated_at_ms <= @cutoff))
     SELECT (SELECT count(*) FROM due) AS tasks,
       (SELECT count(*) FROM task_audit a
         WHERE a.task_id IN (SELECT task_id FROM due)
            OR (a.at_ms <= @cutoff AND (a.task_id IS NULL OR NOT EXISTS (SELECT 1 FROM tasks t WHERE t.task_id = a.task_id))))
       + (SELECT count(*) FROM task_read_audit r
         WHERE r.task_key IN (SELECT task_id FROM due)
            OR (r.window_start_ms <= @cutoff AND r.last_at_ms <= @cutoff AND (r.task_key = '' OR NOT EXISTS (SELECT 1 FROM tasks t WHERE t.task_id = r.task_key)))) AS audit_rows`,
} as const;

type AuditStatements = { readonly [K in keyof typeof SQL]: SqliteStatement };

interface ReadAuditDbRow {
  task_key: string;
  auth_key: string;
  surface: string;
  decision: string;
  window_start_ms: number;
  count: number;
  first_at_ms: number;
  last_at_ms: number;
  task_id: string | null;
  correlation_id: string;
  status: string | null;
  version: number | null;
  detail: string | null;
}

/** The read audit's statements, prepared once per connection. */
export function prepareAuditStatements(db: SqliteDatabase): AuditStatements {
  return Object.fromEntries(Object.entries(SQL).map(([name, text]) => [name, db.prepare(text)])) as AuditStatements;
}

/** Adds each row to its stored row (or stores it). Inside a write transaction. */
export function upsertReadAuditIn(sql: AuditStatements, batch: readonly ReadAuditRow[]): void {
  for (const r of batch) {
    sql.upsert.run(
      r.taskKey,
      r.authKey,
      r.surface,
      r.decision,
      r.windowStart,
      r.count,
      r.firstAt,
      r.lastAt,
      r.taskId,
      r.correlationId,
      r.status,
      r.version,
      r.detail,
    );
  }
}

/** The audit trail of one task, exact lines and aggregated rows, oldest first (`mergeTrail`). Inside a read transaction. */
export function auditTrailIn(sql: AuditStatements, taskId: string): AuditEntry[] {
  return mergeTrail((sql.selectLines.all(taskId) as AuditRow[]).map(rowToAudit), readAuditIn(sql, taskId));
}

function readAuditIn(sql: AuditStatements, taskId: string): AuditEntry[] {
  return (sql.select.all(taskId, taskId) as ReadAuditDbRow[]).map((row) =>
    readAuditEntry({
      taskKey: row.task_key,
      authKey: row.auth_key,
      surface: row.surface as AuditEntry['surface'],
      decision: row.decision as Decision,
      windowStart: row.window_start_ms,
      count: row.count,
      firstAt: row.first_at_ms,
      lastAt: row.last_at_ms,
      taskId: row.task_id,
      correlationId: row.correlation_id,
      status: row.status,
      version: row.version,
      detail: row.detail,
    }),
  );
}

export function retentionDueIn(sql: AuditStatements, input: { now: Millis; retentionMs: number }): RetentionDue {
  const row = sql.retentionDue.get({ cutoff: input.now - input.retentionMs }) as { tasks: number; audit_rows: number };
  return { tasks: row.tasks, auditRows: row.audit_rows };
}

/** One retention batch: tasks past retention with their trails, then orphaned audit rows. Inside a write transaction. */
export function sweepIn(sql: AuditStatements, input: { now: Millis; limit: number; retentionMs: number }): SweepOutcome {
  if (input.limit <= 0) return { tasks: 0, auditRows: 0, more: false };
  const bounds = { cutoff: input.now - input.retentionMs, limit: input.limit };
  const due = (sql.dueTasks.all(bounds) as Array<{ task_id: string }>).map((row) => row.task_id);
  let auditRows = 0;
  for (const taskId of due) {
    auditRows += sql.deleteLines.run(taskId).changes + sql.deleteReads.run(taskId).changes;
    sql.deleteTask.run(taskId);
  }
  // Orphans once the tasks due are gone: before that, the old rows of the tasks still to go
  // would be walked (and skipped) by every batch.
  if (due.length >= input.limit) return { tasks: due.length, auditRows, more: true };
  const lines = sql.orphanLines.run(bounds).changes;
  const reads = sql.orphanReads.run(bounds).changes;
  return { tasks: due.length, auditRows: auditRows + lines + reads, more: due.length >= input.limit || lines >= input.limit || reads >= input.limit };
}
