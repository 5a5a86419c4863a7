import type pg from 'pg';
import { isTasklatchError, TasklatchError } from '../../core/errors.js';
import type { Millis, TaskStatus } from '../../core/types.js';
import { pendingMigrations, type AppliedMigration } from '../migrations.js';
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
import { inTransaction } from './transactions.js';
import { sql } from './statements.js';
import { readPostgresMigrations } from './migrate.js';
import { parkMarkOf } from '../park-row.js';
import { rowToInput, rowToRecord, type InputRow, type TaskRow } from './row.js';

/**
 * The operator's reads of the PostgreSQL store: across every auth key, so never on a caller's
 * path. What reads several tables does so in one REPEATABLE READ, READ ONLY transaction: one
 * snapshot, no locks taken.
 */

const DIALECT: FilterDialect = {
  tenant: "split_part(auth_key, '/', 1)",
  subject: "substr(auth_key, strpos(auth_key, '/') + 1)",
};

const SNAPSHOT = () => ['SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY'];

const SQL = {
  taskById: 'SELECT * FROM tasks WHERE task_id = $1',
  outboxByTask: 'SELECT * FROM task_outbox WHERE task_id = $1 ORDER BY id DESC LIMIT 1',
  inputsByTask: 'SELECT * FROM task_inputs WHERE task_id = $1 ORDER BY ask_seq, input_ordinal',
  countsByTool: `SELECT tool_name, status, count(*)::int AS n FROM tasks GROUP BY tool_name, status ORDER BY coalesce(tool_name, '') COLLATE "C", status COLLATE "C"`,
  oldestWorking: `SELECT task_id, auth_key, created_at_ms FROM tasks
     WHERE status = 'working' AND (expires_at_ms IS NULL OR expires_at_ms > $1)
     ORDER BY created_at_ms, task_id LIMIT 1`,
  expired: 'SELECT count(*)::int AS n FROM tasks WHERE expires_at_ms IS NOT NULL AND expires_at_ms <= $1',
  pending: 'SELECT count(*)::int AS n FROM task_outbox WHERE done_at_ms IS NULL',
  lastAudit: 'SELECT coalesce(max(id), 0)::bigint AS id FROM task_audit',
  abandonedAfter: 'SELECT count(*)::int AS n FROM task_audit WHERE id > $1 AND id <= $2 AND detail = $3',
  // Through to_jsonb: the checksum column exists only from 004 on (as in migrate.ts).
  ledger: `SELECT name, to_jsonb(m) ->> 'checksum' AS checksum FROM tasklatch_migrations m ORDER BY name`,
} as const;

interface OutboxRow {
  created_at_ms: string;
  available_at_ms: string;
  claimed_by: string | null;
  lease_expires_at_ms: string | null;
  attempt: number;
  done_at_ms: string | null;
}

const numOrNull = (value: string | null): number | null => (value === null ? null : Number(value));

export async function findTasksIn(pool: pg.Pool, input: { filter: TaskFilter; after: OperatorPosition | null; limit: number }): Promise<OperatorPage> {
  const params: unknown[] = [];
  const param = (value: unknown): string => {
    params.push(value);
    return `$${params.length}`;
  };
  const where = filterConditions(input.filter, DIALECT, param);
  if (input.after !== null) where.push(`(created_at_ms, task_id) < (${param(input.after.createdAt)}::bigint, ${param(input.after.taskId)}::text)`);
  const text = `SELECT * FROM tasks ${where.length === 0 ? '' : `WHERE ${where.join(' AND ')}`} ORDER BY created_at_ms DESC, task_id DESC LIMIT ${param(input.limit + 1)}`;
  const found = await pool.query<TaskRow>(text, params);
  const records = found.rows.map(rowToRecord);
  return { records: records.slice(0, input.limit), hasMore: records.length > input.limit };
}

export async function inspectTaskIn(pool: pg.Pool, taskId: string): Promise<TaskInspection | null> {
  return inTransaction(
    pool,
    async (client) => {
      const row = (await client.query<TaskRow>(SQL.taskById, [taskId])).rows[0];
      if (row === undefined) return null;
      const entry = (await client.query<OutboxRow>(SQL.outboxByTask, [taskId])).rows[0];
      const inputs = (await client.query<InputRow>(SQL.inputsByTask, [taskId])).rows.map(rowToInput);
      return {
        record: rowToRecord(row),
        dispatch:
          entry === undefined
            ? null
            : {
                createdAt: Number(entry.created_at_ms),
                availableAt: Number(entry.available_at_ms),
                claimedBy: entry.claimed_by,
                leaseExpiresAt: numOrNull(entry.lease_expires_at_ms),
                attempt: entry.attempt,
                doneAt: numOrNull(entry.done_at_ms),
              },
        inputs,
        parked: parkMarkOf(row),
      };
    },
    SNAPSHOT,
  );
}

export async function taskStatsIn(pool: pg.Pool, now: Millis): Promise<TaskStats> {
  return inTransaction(
    pool,
    async (client) => {
      const stats = emptyStats();
      for (const row of (await client.query<{ tool_name: string | null; status: TaskStatus; n: number }>(SQL.countsByTool)).rows) {
        stats.byTool.push({ tool: row.tool_name, status: row.status, count: row.n });
        stats.byStatus[row.status] += row.n;
        stats.total += row.n;
      }
      const oldest = (await client.query<{ task_id: string; auth_key: string; created_at_ms: string }>(SQL.oldestWorking, [now])).rows[0];
      stats.oldestWorking = oldest === undefined ? null : { taskId: oldest.task_id, authKey: oldest.auth_key, createdAt: Number(oldest.created_at_ms) };
      stats.expiredAwaitingSweep = (await client.query<{ n: number }>(SQL.expired, [now])).rows[0]?.n ?? 0;
      stats.pendingDispatch = (await client.query<{ n: number }>(SQL.pending)).rows[0]?.n ?? 0;
      return stats;
    },
    SNAPSHOT,
  );
}

/**
 * Ids are taken from a sequence before commit, so a line committed late with a lower id than the
 * position already read is not counted: the tally is a lower bound, exact when writes are quiet.
 */
export async function auditTallyIn(pool: pg.Pool, after: number | null): Promise<AuditTally> {
  const position = Number((await pool.query<{ id: string }>(SQL.lastAudit)).rows[0]?.id ?? 0);
  if (after === null || position <= after) return { position, abandoned: 0 };
  const counted = await pool.query<{ n: number }>(SQL.abandonedAfter, [after, position, ABANDONED_DETAIL]);
  return { position, abandoned: counted.rows[0]?.n ?? 0 };
}

/** The ledger against this code's files, read without changing anything. */
export async function schemaStateOf(db: pg.Pool | pg.Client): Promise<SchemaState> {
  let applied: AppliedMigration[];
  try {
    applied = (await db.query<AppliedMigration>(SQL.ledger)).rows;
  } catch (error) {
    // 42P01: no ledger yet, nothing applied. Anything else (the server gone) is the caller's.
    if ((error as { code?: unknown }).code !== '42P01') throw error;
    applied = [];
  }
  try {
    return { pending: pendingMigrations(await readPostgresMigrations(), applied).map((f) => f.name), mismatch: null };
  } catch (error) {
    if (!isTasklatchError(error, 'SCHEMA_MISMATCH')) throw error;
    return { pending: [], mismatch: error.message };
  }
}

/** The schema's shared secret (`tasklatch_meta`); a schema without one has not been migrated. */
export async function secretIn(pool: pg.Pool): Promise<Uint8Array> {
  const found = await pool.query<{ value: string }>(sql.selectSecret);
  const hex = found.rows[0]?.value;
  if (hex === undefined) throw new TasklatchError('SCHEMA_MISMATCH', 'tasklatch_meta has no secret: run the migrations');
  return new Uint8Array(Buffer.from(hex, 'hex'));
}
