import type pg from 'pg';
import type { Decision } from '../../core/decisions.js';
import type { Millis } from '../../core/types.js';
import { mergeReadAuditRows, mergeTrail, readAuditColumns, readAuditEntry, type ReadAuditRow } from '../read-audit.js';
import type { RetentionDue } from '../task-operations.js';
import type { AuditEntry, SweepOutcome } from '../types.js';
import { rowToAudit, type AuditRow } from './row.js';

/**
 * The audit trail of the PostgreSQL store: a task's trail (exact lines and aggregated rows), the
 * aggregated read audit (`task_read_audit`) and the retention pass. Every statement here is one
 * round trip; the upsert restates `mergeReadAudit`.
 */

const READ_AUDIT_COLUMNS =
  'task_key, auth_key, surface, decision, window_start_ms, count, first_at_ms, last_at_ms, task_id, correlation_id, status, version, detail';

const SQL = {
  /** A task's exact lines, in the order written. */
  selectLines: `
  SELECT at_ms, surface, decision, auth_key, task_id, correlation_id, status, version, detail
    FROM task_audit WHERE task_id = $1 ORDER BY id`,

  /**
   * Any number of rows of distinct keys in one statement (one text for every batch size, so it is
   * prepared once per connection). Keys must be distinct: one statement cannot update a row twice.
   * The rows arrive as one JSON array of objects: node-postgres writes a JavaScript array as an
   * array literal in JavaScript, escaping each element (13 per row: ~4 % of a server's CPU at
   * 8,000 polls a second), where `JSON.stringify` is native.
   */
  upsertReadAudit: `
  INSERT INTO task_read_audit AS r (${READ_AUDIT_COLUMNS})
  SELECT ${READ_AUDIT_COLUMNS} FROM json_to_recordset($1::json) AS x(task_key text, auth_key text, surface text, decision text,
    window_start_ms bigint, count bigint, first_at_ms bigint, last_at_ms bigint, task_id text, correlation_id text, status text,
    version int, detail text)
  ON CONFLICT (task_key, auth_key, surface, decision, window_start_ms) DO UPDATE SET
    count = r.count + excluded.count,
    first_at_ms = least(r.first_at_ms, excluded.first_at_ms),
    last_at_ms = greatest(r.last_at_ms, excluded.last_at_ms),
    task_id = CASE WHEN excluded.last_at_ms >= r.last_at_ms THEN excluded.task_id ELSE r.task_id END,
    correlation_id = CASE WHEN excluded.last_at_ms >= r.last_at_ms THEN excluded.correlation_id ELSE r.correlation_id END,
    status = CASE WHEN excluded.last_at_ms >= r.last_at_ms THEN excluded.status ELSE r.status END,
    version = CASE WHEN excluded.last_at_ms >= r.last_at_ms THEN excluded.version ELSE r.version END,
    detail = CASE WHEN excluded.last_at_ms >= r.last_at_ms THEN excluded.detail ELSE r.detail END`,

  /** A task's rows: keyed by it, or naming it as the latest guess of a miss (rowConcerns). */
  selectReadAudit: `
  SELECT ${READ_AUDIT_COLUMNS} FROM task_read_audit
   WHERE task_key = $1 OR (task_key = '' AND task_id = $1)
   ORDER BY first_at_ms, window_start_ms`,

  /**
   * One retention batch: up to $2 tasks past retention (restates isPastRetention with $1 the
   * cutoff, now - retention), each with its outbox entry and questions (ON DELETE CASCADE) and
   * both its audit tables. SKIP LOCKED: two sweepers take different tasks. Each branch locks
   * under its own LIMIT, so a row another sweeper holds (or removed since this statement's
   * snapshot) is passed over for the next one due, and a batch comes back short only when fewer
   * than $2 are left to take: `more` stays true while any are. The expired take what they can;
   * the finished only the rest. A row past retention is expired or terminal, so no write can be
   * waiting to change it.
   */
  sweepTasks: `
  WITH expired AS (
    SELECT task_id FROM tasks WHERE expires_at_ms <= $1 ORDER BY expires_at_ms LIMIT $2 FOR UPDATE SKIP LOCKED
  ), finished AS (
    SELECT task_id FROM tasks
     WHERE expires_at_ms IS NULL AND status IN ('completed', 'failed', 'cancelled') AND last_updated_at_ms <= $1
     ORDER BY last_updated_at_ms LIMIT greatest($2 - (SELECT count(*) FROM expired), 0) FOR UPDATE SKIP LOCKED
  ), due AS (
    SELECT task_id FROM expired UNION ALL SELECT task_id FROM finished
  ), gone AS (
    DELETE FROM tasks t USING due WHERE t.task_id = due.task_id RETURNING t.task_id
  ), lines AS (
    DELETE FROM task_audit a USING gone WHERE a.task_id = gone.task_id COLLATE "default" RETURNING 1
  ), reads AS (
    DELETE FROM task_read_audit r USING gone WHERE r.task_key = gone.task_id RETURNING 1
  )
  SELECT (SELECT count(*) FROM gone)::int AS tasks, ((SELECT count(*) FROM lines) + (SELECT count(*) FROM reads))::int AS audit_rows`,

  /**
   * Up to $2 rows of each audit table older than the cutoff $1 whose task is gone (or that named
   * none): a task's rows usually go with it (`sweepTasks`); these are the rest (misses, lists,
   * refusals, lines of tasks removed before retention existed).
   */
  sweepOrphans: `
  WITH lines AS (
    DELETE FROM task_audit WHERE id IN (
      SELECT a.id FROM task_audit a
       WHERE a.at_ms <= $1 AND (a.task_id IS NULL OR NOT EXISTS (SELECT 1 FROM tasks t WHERE t.task_id = a.task_id COLLATE "C"))
       LIMIT $2)
    RETURNING 1
  ), reads AS (
    DELETE FROM task_read_audit WHERE (task_key, auth_key, surface, decision, window_start_ms) IN (
      SELECT r.task_key, r.auth_key, r.surface, r.decision, r.window_start_ms FROM task_read_audit r
       WHERE r.window_start_ms <= $1 AND r.last_at_ms <= $1 AND (r.task_key = '' OR NOT EXISTS (SELECT 1 FROM tasks t WHERE t.task_id = r.task_key))
       LIMIT $2)
    RETURNING 1
  )
  SELECT (SELECT count(*) FROM lines)::int AS lines, (SELECT count(*) FROM reads)::int AS reads`,

  /** What `sweepTasks` and `sweepOrphans` would remove with no bound, $1 the cutoff. */
  retentionDue: `
  WITH due AS (
    SELECT task_id FROM tasks
     WHERE expires_at_ms <= $1 OR (expires_at_ms IS NULL AND status IN ('completed', 'failed', 'cancelled') AND last_updated_at_ms <= $1)
  )
  SELECT (SELECT count(*) FROM due)::int AS tasks,
    ((SELECT count(*) FROM task_audit a
       WHERE a.task_id COLLATE "C" IN (SELECT task_id FROM due)
          OR (a.at_ms <= $1 AND (a.task_id IS NULL OR NOT EXISTS (SELECT 1 FROM tasks t WHERE t.task_id = a.task_id COLLATE "C"))))
     + (SELECT count(*) FROM task_read_audit r
       WHERE r.task_key IN (SELECT task_id FROM due)
          OR (r.window_start_ms <= $1 AND r.last_at_ms <= $1 AND (r.task_key = '' OR NOT EXISTS (SELECT 1 FROM tasks t WHERE t.task_id = r.task_key)))))::int AS audit_rows`,
} as const;

interface ReadAuditDbRow {
  task_key: string;
  auth_key: string;
  surface: string;
  decision: string;
  window_start_ms: string;
  count: string;
  first_at_ms: string;
  last_at_ms: string;
  task_id: string | null;
  correlation_id: string;
  status: string | null;
  version: number | null;
  detail: string | null;
}

/** Stores a batch in one statement: rows of one key merged first, in key order (`mergeReadAuditRows`). */
export async function upsertReadAuditIn(pool: pg.Pool, batch: readonly ReadAuditRow[]): Promise<void> {
  const json = JSON.stringify(mergeReadAuditRows(batch).map(readAuditColumns));
  // Named: each connection of the audit pool parses and plans it once, whatever the batch size.
  await pool.query({ name: 'tasklatch_upsert_read_audit_json', text: SQL.upsertReadAudit, values: [json] });
}

/** The audit trail of one task, exact lines and aggregated rows, oldest first (`mergeTrail`). */
export async function auditTrailIn(pool: pg.Pool, taskId: string): Promise<AuditEntry[]> {
  const [lines, reads] = await Promise.all([pool.query<AuditRow>(SQL.selectLines, [taskId]), readAuditOf(pool, taskId)]);
  return mergeTrail(lines.rows.map(rowToAudit), reads);
}

async function readAuditOf(pool: pg.Pool, taskId: string): Promise<AuditEntry[]> {
  const found = await pool.query<ReadAuditDbRow>(SQL.selectReadAudit, [taskId]);
  return found.rows.map((row) =>
    readAuditEntry({
      taskKey: row.task_key,
      authKey: row.auth_key,
      surface: row.surface as AuditEntry['surface'],
      decision: row.decision as Decision,
      windowStart: Number(row.window_start_ms),
      count: Number(row.count),
      firstAt: Number(row.first_at_ms),
      lastAt: Number(row.last_at_ms),
      taskId: row.task_id,
      correlationId: row.correlation_id,
      status: row.status,
      version: row.version,
      detail: row.detail,
    }),
  );
}

export async function retentionDueIn(pool: pg.Pool, input: { now: Millis; retentionMs: number }): Promise<RetentionDue> {
  const found = await pool.query<{ tasks: number; audit_rows: number }>(SQL.retentionDue, [input.now - input.retentionMs]);
  return { tasks: found.rows[0]?.tasks ?? 0, auditRows: found.rows[0]?.audit_rows ?? 0 };
}

/** One retention batch: tasks past retention with their trails, then orphaned audit rows. */
export async function sweepIn(pool: pg.Pool, input: { now: Millis; limit: number; retentionMs: number }): Promise<SweepOutcome> {
  if (input.limit <= 0) return { tasks: 0, auditRows: 0, more: false };
  const cutoff = input.now - input.retentionMs;
  const swept = await pool.query<{ tasks: number; audit_rows: number }>(SQL.sweepTasks, [cutoff, input.limit]);
  // Orphans once the tasks due are gone: before that, the old rows of the tasks still to go
  // would be walked (and skipped) by every batch.
  if ((swept.rows[0]?.tasks ?? 0) >= input.limit) return { tasks: input.limit, auditRows: swept.rows[0]?.audit_rows ?? 0, more: true };
  const orphans = await pool.query<{ lines: number; reads: number }>(SQL.sweepOrphans, [cutoff, input.limit]);
  const tasks = swept.rows[0]?.tasks ?? 0;
  const lines = orphans.rows[0]?.lines ?? 0;
  const reads = orphans.rows[0]?.reads ?? 0;
  return {
    tasks,
    auditRows: (swept.rows[0]?.audit_rows ?? 0) + lines + reads,
    more: tasks >= input.limit || lines >= input.limit || reads >= input.limit,
  };
}

/**
 * Whether an error writing audit lines belongs to the lines: data exceptions (22…), integrity
 * (23…), program limits (54…, an index row too big) and a message the server refused (08P01);
 * anything else (a connection, a restart) is the database's.
 */
export function isAuditLineError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^(22|23|54|08P01$)/.test(code);
}
