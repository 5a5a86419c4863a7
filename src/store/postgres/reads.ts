import type pg from 'pg';
import { classifyMiss } from '../../core/visibility.js';
import type { GuardedRecord } from '../../core/transition-rules.js';
import type { Millis, TaskRecord, TaskStatus } from '../../core/types.js';
import type { ListPage, ListPosition, LookupOutcome, TaskRef } from '../types.js';
import type { ReadBatcher } from './read-batcher.js';
import { rowToRecord, type TaskRow } from './row.js';
import { sql } from './statements.js';
import { listedOfRow, type ListedRow } from '../task-columns.js';

/**
 * The reads of the records role in PostgreSQL: the caller's task, its listing, which ids it may
 * see, and the two reads by id the other roles classify a write that changed nothing with. Each
 * is one statement, so one snapshot (read committed).
 */

/**
 * The caller's task: always the stored row, read by a statement sent after this call began, so
 * never an older version than a write any process acknowledged before it (see ReadBatcher).
 */
export async function getIn(pool: pg.Pool, reads: ReadBatcher, { authKey, taskId, now }: TaskRef & { now: Millis }): Promise<LookupOutcome> {
  const visible = await reads.visible(taskId, authKey, now);
  if (visible !== undefined) return { decision: 'FOUND', record: rowToRecord(visible) };
  // The visible read came back empty; a second, narrow read by id alone only says why.
  const miss = classifyMiss(await readGuard(pool, taskId), authKey, now);
  if (miss !== null) return { decision: miss, record: null };
  // Became visible between the two reads (admitted or seeded meanwhile).
  const stored = await readById(pool, taskId);
  return stored === null ? { decision: 'NOT_FOUND', record: null } : { decision: 'FOUND', record: stored };
}

/** Which of `taskIds` are the caller's unexpired tasks, in one statement. */
export async function visibleTaskIdsIn(
  pool: pg.Pool,
  { authKey, taskIds, now }: { authKey: string; taskIds: readonly string[]; now: Millis },
): Promise<string[]> {
  if (taskIds.length === 0) return [];
  const found = await pool.query<{ task_id: string }>(sql.selectVisibleIds, [[...new Set(taskIds)], authKey, now]);
  return found.rows.map((row) => row.task_id);
}

/** One page of the caller's unexpired tasks, in (createdAt, taskId) order. */
export async function listIn(pool: pg.Pool, page: { authKey: string; now: Millis; after: ListPosition | null; limit: number }): Promise<ListPage> {
  const { authKey, now, after, limit } = page;
  // One row more than asked tells whether another page exists.
  const params: unknown[] = [authKey, now, limit + 1];
  if (after !== null) params.push(after.createdAt, after.taskId);
  const found = await pool.query<ListedRow>(after === null ? sql.listFirst : sql.listAfter, params);
  const records = found.rows.map(listedOfRow);
  return { records: records.slice(0, limit), hasMore: records.length > limit };
}

/**
 * The columns the miss rules read (auth key, status, version, expiry) and nothing else: another
 * caller's task is refused after the same small read as a missing one, whatever its size, so
 * the time of the answer does not tell them apart.
 */
export async function readGuard(client: pg.ClientBase | pg.Pool, taskId: string): Promise<GuardedRecord | null> {
  const found = await client.query<Pick<TaskRow, 'auth_key' | 'status' | 'version' | 'expires_at_ms'>>(sql.selectGuardById, [taskId]);
  const row = found.rows[0];
  if (row === undefined) return null;
  return {
    authKey: row.auth_key,
    status: row.status as TaskStatus,
    version: row.version,
    expiresAt: row.expires_at_ms === null ? null : Number(row.expires_at_ms),
    result: null,
    resultDigest: null,
  };
}

/** Classification read only: its record is handed to the core rules, or to its own auth key. */
export async function readById(client: pg.ClientBase | pg.Pool, taskId: string): Promise<TaskRecord | null> {
  const found = await client.query<TaskRow>(sql.selectById, [taskId]);
  return found.rows[0] === undefined ? null : rowToRecord(found.rows[0]);
}
