import { TasklatchError } from '../../core/errors.js';
import { classifyMiss } from '../../core/visibility.js';
import type { GuardedRecord } from '../../core/transition-rules.js';
import type { Millis, TaskRecord } from '../../core/types.js';
import type { ListPage, ListPosition, LookupOutcome, TaskRef } from '../types.js';
import type { SqliteDatabase } from './driver.js';
import { rowToRecord, type TaskRow } from './row.js';
import type { RecordCache, Stamp } from './record-cache.js';
import type { Statements } from './statements.js';
import { listedOfRow, type ListedRow } from '../task-columns.js';

/**
 * The reads of the records role in SQLite: the caller's task, its listing, which ids it may see,
 * and the two reads by id the other roles classify a write that changed nothing with. One
 * statement is its own snapshot; where two reads must agree they share a read transaction.
 */

export function getIn(
  db: SqliteDatabase,
  sql: Statements,
  rows: RecordCache,
  { authKey, taskId, now }: TaskRef & { now: Millis },
  stamp: Stamp | null,
): LookupOutcome {
  // The file's stamp, taken after this read began (ReadBatcher), then the row: a row kept from an
  // unchanged file is what the SELECT would return (RecordCache), and is checked against the
  // caller and the clock as the SELECT's WHERE would check it.
  const kept = rows.get(taskId, stamp);
  if (kept !== undefined && kept.auth_key === authKey && (kept.expires_at_ms === null || kept.expires_at_ms > now)) {
    return { decision: 'FOUND', record: rowToRecord(kept) };
  }
  // A visible row is the whole answer, and one statement is its own snapshot: the poll's usual
  // case pays no BEGIN/COMMIT.
  const visible = sql.selectVisible.get({ task_id: taskId, auth_key: authKey, now }) as TaskRow | undefined;
  if (visible !== undefined) {
    rows.set(visible, stamp);
    return { decision: 'FOUND', record: rowToRecord(visible) };
  }
  // A miss: both reads in one read transaction, so a row another process inserts between
  // them cannot make the classification disagree with the query.
  return db
    .transaction((): LookupOutcome => {
      const row = sql.selectVisible.get({ task_id: taskId, auth_key: authKey, now }) as TaskRow | undefined;
      if (row !== undefined) return { decision: 'FOUND', record: rowToRecord(row) };
      const miss = classifyMiss(readGuard(sql, taskId), authKey, now);
      if (miss === null) throw new TasklatchError('INTERNAL', `task ${taskId} is visible to the rules but not to the query`);
      return { decision: miss, record: null };
    })
    .deferred();
}

/** Which of `taskIds` are the caller's unexpired tasks, in one statement. */
export function visibleTaskIdsIn(sql: Statements, { authKey, taskIds, now }: { authKey: string; taskIds: readonly string[]; now: Millis }): string[] {
  if (taskIds.length === 0) return [];
  const rows = sql.selectVisibleIds.all({ ids: JSON.stringify([...new Set(taskIds)]), auth_key: authKey, now }) as Array<{ task_id: string }>;
  return rows.map((row) => row.task_id);
}

/** One page of the caller's unexpired tasks, in (createdAt, taskId) order. */
export function listIn(sql: Statements, page: { authKey: string; now: Millis; after: ListPosition | null; limit: number }): ListPage {
  const { authKey, now, after } = page;
  // One row past the page says whether another page exists, without a COUNT.
  const base = { auth_key: authKey, now, limit: page.limit + 1 };
  const rows = (
    after === null ? sql.listFirst.all(base) : sql.listAfter.all(Object.assign({}, base, { after_created_at_ms: after.createdAt, after_task_id: after.taskId }))
  ) as ListedRow[];
  return { records: rows.slice(0, page.limit).map(listedOfRow), hasMore: rows.length > page.limit };
}

/**
 * The columns the miss rules read (auth key, status, version, expiry) and nothing else: another
 * caller's task is refused after the same small read as a missing one, whatever its size, so
 * the time of the answer does not tell them apart.
 */
export function readGuard(sql: Statements, taskId: string): GuardedRecord | null {
  const row = sql.selectGuardById.get(taskId) as Pick<TaskRow, 'auth_key' | 'status' | 'version' | 'expires_at_ms'> | undefined;
  return row === undefined
    ? null
    : { authKey: row.auth_key, status: row.status, version: row.version, expiresAt: row.expires_at_ms, result: null, resultDigest: null };
}

/** Classification read only: its record is handed to the core rules, or to its own auth key. */
export function readById(sql: Statements, taskId: string): TaskRecord | null {
  const row = sql.selectById.get(taskId) as TaskRow | undefined;
  return row === undefined ? null : rowToRecord(row);
}
