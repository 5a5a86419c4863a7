import type { SqliteDatabase } from './driver.js';
import { TasklatchError, isTasklatchError } from '../../core/errors.js';
import type { Millis, TaskStatus } from '../../core/types.js';
import { readMigrationFiles, pendingMigrations, type AppliedMigration } from '../migrations.js';
import { filterConditions, type FilterDialect } from '../operator-filter.js';
import {
  ABANDONED_DETAIL,
  emptyStats,
  type AuditTally,
  type OperatorPage,
  type OperatorPosition,
  type SchemaState,
  type TaskFilter,
  type TaskInspection,
  type TaskStats,
} from '../task-operations.js';
import { parkMarkOf } from '../park-row.js';
import { rowToInput, rowToRecord, type InputRow, type TaskRow } from './row.js';

/**
 * The operator's reads of the SQLite store: across every auth key, so never on a caller's path.
 * Each is one deferred (read) transaction: a consistent snapshot that takes no write lock.
 */

const DIALECT: FilterDialect = {
  tenant: "substr(auth_key, 1, instr(auth_key, '/') - 1)",
  subject: "substr(auth_key, instr(auth_key, '/') + 1)",
};

const SQL = {
  taskById: 'SELECT * FROM tasks WHERE task_id = ?',
  outboxByTask: 'SELECT * FROM task_outbox WHERE task_id = ? ORDER BY id DESC LIMIT 1',
  inputsByTask: 'SELECT * FROM task_inputs WHERE task_id = ? ORDER BY ask_seq, input_ordinal',
  countsByTool: "SELECT tool_name, status, count(*) AS n FROM tasks GROUP BY tool_name, status ORDER BY coalesce(tool_name, ''), status",
  oldestWorking: `SELECT task_id, auth_key, created_at_ms FROM tasks
     WHERE status = 'working' AND (expires_at_ms IS NULL OR expires_at_ms > @now)
     ORDER BY created_at_ms, task_id LIMIT 1`,
  expired: 'SELECT count(*) AS n FROM tasks WHERE expires_at_ms IS NOT NULL AND expires_at_ms <= ?',
  pending: 'SELECT count(*) AS n FROM task_outbox WHERE done_at_ms IS NULL',
  lastAudit: 'SELECT coalesce(max(id), 0) AS id FROM task_audit',
  abandonedAfter: 'SELECT count(*) AS n FROM task_audit WHERE id > ? AND id <= ? AND detail = ?',
  ledgerExists: "SELECT count(*) AS n FROM sqlite_master WHERE type = 'table' AND name = 'tasklatch_migrations'",
  ledger: 'SELECT name, checksum FROM tasklatch_migrations ORDER BY name',
} as const;

const MIGRATIONS_DIR = new URL('../../../migrations/sqlite/', import.meta.url);

interface OutboxRow {
  created_at_ms: number;
  available_at_ms: number;
  claimed_by: string | null;
  lease_expires_at_ms: number | null;
  attempt: number;
  done_at_ms: number | null;
}

function read<T>(db: SqliteDatabase, work: () => T): T {
  return db.transaction(work).deferred();
}

export function findTasksIn(db: SqliteDatabase, input: { filter: TaskFilter; after: OperatorPosition | null; limit: number }): OperatorPage {
  const params: unknown[] = [];
  const param = (value: unknown): string => {
    params.push(value);
    return '?';
  };
  const where = filterConditions(input.filter, DIALECT, param);
  if (input.after !== null) where.push(`(created_at_ms, task_id) < (${param(input.after.createdAt)}, ${param(input.after.taskId)})`);
  const text = `SELECT * FROM tasks ${where.length === 0 ? '' : `WHERE ${where.join(' AND ')}`} ORDER BY created_at_ms DESC, task_id DESC LIMIT ${param(input.limit + 1)}`;
  const rows = db.prepare(text).all(...params) as TaskRow[];
  const records = rows.map(rowToRecord);
  return { records: records.slice(0, input.limit), hasMore: records.length > input.limit };
}

export function inspectTaskIn(db: SqliteDatabase, taskId: string): TaskInspection | null {
  return read(db, () => {
    const row = db.prepare(SQL.taskById).get(taskId) as TaskRow | undefined;
    if (row === undefined) return null;
    const entry = db.prepare(SQL.outboxByTask).get(taskId) as OutboxRow | undefined;
    return {
      record: rowToRecord(row),
      dispatch:
        entry === undefined
          ? null
          : {
              createdAt: entry.created_at_ms,
              availableAt: entry.available_at_ms,
              claimedBy: entry.claimed_by,
              leaseExpiresAt: entry.lease_expires_at_ms,
              attempt: entry.attempt,
              doneAt: entry.done_at_ms,
            },
      inputs: (db.prepare(SQL.inputsByTask).all(taskId) as InputRow[]).map(rowToInput),
      parked: parkMarkOf(row),
    };
  });
}

export function taskStatsIn(db: SqliteDatabase, now: Millis): TaskStats {
  return read(db, () => {
    const stats = emptyStats();
    for (const row of db.prepare(SQL.countsByTool).all() as Array<{ tool_name: string | null; status: TaskStatus; n: number }>) {
      stats.byTool.push({ tool: row.tool_name, status: row.status, count: row.n });
      stats.byStatus[row.status] += row.n;
      stats.total += row.n;
    }
    const oldest = db.prepare(SQL.oldestWorking).get({ now }) as { task_id: string; auth_key: string; created_at_ms: number } | undefined;
    stats.oldestWorking = oldest === undefined ? null : { taskId: oldest.task_id, authKey: oldest.auth_key, createdAt: oldest.created_at_ms };
    stats.expiredAwaitingSweep = (db.prepare(SQL.expired).get(now) as { n: number }).n;
    stats.pendingDispatch = (db.prepare(SQL.pending).get() as { n: number }).n;
    return stats;
  });
}

export function auditTallyIn(db: SqliteDatabase, after: number | null): AuditTally {
  return read(db, () => {
    const position = (db.prepare(SQL.lastAudit).get() as { id: number }).id;
    if (after === null || position <= after) return { position, abandoned: 0 };
    return { position, abandoned: (db.prepare(SQL.abandonedAfter).get(after, position, ABANDONED_DETAIL) as { n: number }).n };
  });
}

/** The ledger against this code's files, read without changing anything (a read-only handle may ask). */
export async function schemaStateOf(db: SqliteDatabase): Promise<SchemaState> {
  let applied: AppliedMigration[];
  try {
    const exists = (db.prepare(SQL.ledgerExists).get() as { n: number }).n > 0;
    applied = exists ? (db.prepare(SQL.ledger).all() as AppliedMigration[]) : [];
  } catch (error) {
    throw new TasklatchError('STORE_UNAVAILABLE', `cannot read SQLite store at ${db.name}: ${(error as Error).message}`, { cause: error });
  }
  const files = await readMigrationFiles(MIGRATIONS_DIR);
  try {
    return { pending: pendingMigrations(files, applied).map((f) => f.name), mismatch: null };
  } catch (error) {
    if (!isTasklatchError(error, 'SCHEMA_MISMATCH')) throw error;
    return { pending: [], mismatch: error.message };
  }
}
