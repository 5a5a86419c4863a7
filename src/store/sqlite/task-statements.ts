import { LISTED_COLUMNS, TASK_COLUMNS } from '../task-columns.js';
import { NON_TERMINAL, UNEXPIRED } from './predicates.js';

/**
 * The statements of the records role in SQLite: admission, status writes, cancellation, the
 * caller's reads, seeding, and the audit line a write leaves. A guard that restates a core rule
 * names it (see predicates.ts).
 */

const COLUMNS = TASK_COLUMNS.join(', ');
const LISTED = LISTED_COLUMNS.join(', ');
const VALUES = TASK_COLUMNS.map((c) => `@${c}`).join(', ');
const PLACES = TASK_COLUMNS.map(() => '?').join(', ');
const UPSERT_SET = TASK_COLUMNS.filter((c) => c !== 'task_id')
  .map((c) => `${c} = excluded.${c}`)
  .join(', ');

/** The records role's statements, by name. */
export const taskSql = {
  /** An expired holder no longer owns its idempotency key (restates decideAdmission's expiry test). */
  releaseExpiredKey: 'UPDATE tasks SET idempotency_key = NULL WHERE auth_key = @auth_key AND idempotency_key = @idempotency_key AND expires_at_ms <= @now',
  /** Positional parameters: the task's columns in `TASK_COLUMNS` order, as `admitIn` binds them. */
  insertTask: `INSERT INTO tasks (${COLUMNS}) VALUES (${PLACES}) ON CONFLICT (auth_key, idempotency_key) DO NOTHING`,
  /**
   * The insert under the caller's bounds, in one statement: one scan of the auth key's unexpired
   * tasks counts both (index entries only: tasks_held_by_auth holds every column it reads), and
   * the row goes in only below each bound that is set (null for none; restates
   * decideLimitedAdmission's limits). Inside the admission's immediate transaction, so
   * count-then-insert is exact; an insert that changed nothing is classified afterwards (the
   * key's live holder, or a bound). Positional parameters, in the order they appear: the task's
   * columns, then auth key, now, the active limit twice, the stored bound twice (`admitIn`); the
   * scan's guard restates UNEXPIRED.
   */
  insertTaskBounded: `INSERT INTO tasks (${COLUMNS})
     SELECT ${PLACES} FROM (
       SELECT count(*) AS stored, count(*) FILTER (WHERE ${NON_TERMINAL}) AS active
         FROM tasks WHERE auth_key = ? AND (expires_at_ms IS NULL OR expires_at_ms > ?)
     ) AS held
     WHERE (? IS NULL OR held.active < ?) AND (? IS NULL OR held.stored < ?)
     ON CONFLICT (auth_key, idempotency_key) DO NOTHING`,
  selectByKey: 'SELECT * FROM tasks WHERE auth_key = ? AND idempotency_key = ?',
  countActive: `SELECT count(*) AS n FROM tasks WHERE auth_key = @auth_key AND ${NON_TERMINAL} AND ${UNEXPIRED}`,
  countStored: `SELECT count(*) AS n FROM tasks WHERE auth_key = @auth_key AND ${UNEXPIRED}`,
  insertOutbox: 'INSERT INTO task_outbox (task_id, created_at_ms, available_at_ms) VALUES (@task_id, @now, @now)',
  /**
   * The one conditional write of the transition surface; its WHERE restates decideTransition's
   * APPLY_TRANSITION. The CASE arms keep this a single
   * prepared statement: `set_message` and `terminal` are 0/1 flags computed by the caller.
   */
  applyTransition: `UPDATE tasks SET
       status = @status,
       version = version + 1,
       last_updated_at_ms = @now,
       status_message = CASE WHEN @set_message THEN @status_message ELSE status_message END,
       result = CASE WHEN @terminal THEN @result ELSE result END,
       result_digest = CASE WHEN @terminal THEN @result_digest ELSE result_digest END,
       lease_owner = CASE WHEN @terminal THEN NULL ELSE lease_owner END,
       lease_expires_at_ms = CASE WHEN @terminal THEN NULL ELSE lease_expires_at_ms END,
       parked_at_ms = CASE WHEN @terminal THEN NULL ELSE parked_at_ms END,
       parks = CASE WHEN @terminal THEN 0 ELSE parks END
     WHERE task_id = @task_id AND auth_key = @auth_key AND version = @expected_version
       AND ${NON_TERMINAL} AND ${UNEXPIRED}
     RETURNING *`,
  /** Restates decideCancel's CANCEL_TASK; a wait's or a park's message does not outlive the task. */
  applyCancel: `UPDATE tasks SET
       status = 'cancelled', cancel_requested = 1, version = version + 1, last_updated_at_ms = @now,
       lease_owner = NULL, lease_expires_at_ms = NULL, status_message = NULL, parked_at_ms = NULL, parks = 0
     WHERE task_id = @task_id AND auth_key = @auth_key AND ${NON_TERMINAL} AND ${UNEXPIRED}
     RETURNING *`,
  selectVisible: `SELECT * FROM tasks WHERE task_id = @task_id AND auth_key = @auth_key AND ${UNEXPIRED}`,
  /** `@ids` is a JSON array of ids: one statement for any number of them. */
  selectVisibleIds: `SELECT task_id FROM tasks WHERE task_id IN (SELECT value FROM json_each(@ids)) AND auth_key = @auth_key AND ${UNEXPIRED}`,
  /** Classification read only: its row is handed to the core rules, never to the caller as is. */
  selectById: 'SELECT * FROM tasks WHERE task_id = ?',
  /** Why a task is out of the caller's reach, without reading its payload (no timing difference by size). */
  selectGuardById: 'SELECT auth_key, status, version, expires_at_ms FROM tasks WHERE task_id = ?',
  /** A page of a listing reads the columns a listing shows (`ListedTask`), not the payloads. */
  listFirst: `SELECT ${LISTED} FROM tasks WHERE auth_key = @auth_key AND ${UNEXPIRED} AND parent_task_id IS NULL
     ORDER BY created_at_ms, task_id LIMIT @limit`,
  listAfter: `SELECT ${LISTED} FROM tasks WHERE auth_key = @auth_key AND ${UNEXPIRED} AND parent_task_id IS NULL
       AND (created_at_ms, task_id) > (@after_created_at_ms, @after_task_id)
     ORDER BY created_at_ms, task_id LIMIT @limit`,
  insertAudit: `INSERT INTO task_audit (at_ms, surface, decision, auth_key, task_id, correlation_id, status, version, detail)
     VALUES (@at_ms, @surface, @decision, @auth_key, @task_id, @correlation_id, @status, @version, @detail)`,
  /** Seeding imports records as they are: the seeded record takes its key over from any other holder. */
  releaseKeyForSeed: 'UPDATE tasks SET idempotency_key = NULL WHERE auth_key = @auth_key AND idempotency_key = @idempotency_key AND task_id <> @task_id',
  // An upsert, not INSERT OR REPLACE: REPLACE deletes the old row, and the cascade would take
  // its outbox entries with it.
  upsertTask: `INSERT INTO tasks (${COLUMNS}) VALUES (${VALUES}) ON CONFLICT (task_id) DO UPDATE SET ${UPSERT_SET}`,
  /** The secret every process on the file shares (cursor signing), written by the migrations. */
  selectSecret: "SELECT value FROM tasklatch_meta WHERE key = 'secret'",
} as const;
