import { TASK_COLUMNS } from './row.js';

/**
 * The SQL of the PostgreSQL store. Unqualified names resolve through the connection's
 * search_path, which `?schema=` sets. Each WHERE clause that guards a write is the core's rule
 * restated for one statement (task, auth key, version, non-terminal, unexpired); every other
 * decision is made in TypeScript by the core.
 */

const placeholders = TASK_COLUMNS.map((_, i) => `$${i + 1}`).join(', ');

/** `(expires_at_ms IS NULL OR expires_at_ms > now)` with `now` as parameter `$n`. */
export function unexpired(n: number): string {
  return `(expires_at_ms IS NULL OR expires_at_ms > $${n})`;
}

/** An expired holder gives its idempotency key up: it is gone for every operation. */
export const RELEASE_EXPIRED_KEY = `
  UPDATE tasks SET idempotency_key = NULL
   WHERE auth_key = $1 AND idempotency_key = $2 AND expires_at_ms <= $3`;

/**
 * Admission. A concurrent duplicate waits on the unique index until the first commits, then
 * does nothing; the transaction stays usable, unlike after a unique violation.
 */
export const INSERT_TASK_UNLESS_KEY_TAKEN = `
  INSERT INTO tasks (${TASK_COLUMNS.join(', ')}) VALUES (${placeholders})
  ON CONFLICT (auth_key, idempotency_key) DO NOTHING
  RETURNING *`;

export const SELECT_BY_KEY = `SELECT * FROM tasks WHERE auth_key = $1 AND idempotency_key = $2`;

/** Serializes the admissions of one auth key while an active-task limit is checked. */
export const LOCK_AUTH_KEY = `SELECT pg_advisory_xact_lock(hashtextextended('tasklatch:admit:' || $1, 0))`;

export const COUNT_ACTIVE = `
  SELECT count(*)::int AS n FROM tasks
   WHERE auth_key = $1 AND status IN ('working', 'input_required') AND ${unexpired(2)}`;

export const SELECT_BY_ID = `SELECT * FROM tasks WHERE task_id = $1`;

export const SELECT_VISIBLE = `SELECT * FROM tasks WHERE task_id = $1 AND auth_key = $2 AND ${unexpired(3)}`;

export const INSERT_OUTBOX = `
  INSERT INTO task_outbox (task_id, created_at_ms, available_at_ms) VALUES ($1, $2, $2)`;

export const INSERT_AUDIT = `
  INSERT INTO task_audit (at_ms, surface, decision, auth_key, task_id, correlation_id, status, version, detail)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`;

export const SELECT_AUDIT = `
  SELECT at_ms, surface, decision, auth_key, task_id, correlation_id, status, version, detail
    FROM task_audit WHERE task_id = $1 ORDER BY id`;

/** The guard of every applied write: this task, this auth key, still open, not expired. */
const OPEN_AND_VISIBLE = `task_id = $1 AND auth_key = $2 AND status IN ('working', 'input_required')`;

/**
 * A status write. `sets` are extra assignments with their own parameters (from `$6` on);
 * parameters: $1 task id, $2 auth key, $3 expected version, $4 now, $5 status.
 */
export function conditionalTransition(sets: readonly string[]): string {
  const assignments = ['status = $5', 'version = version + 1', 'last_updated_at_ms = $4', ...sets].join(', ');
  return `UPDATE tasks SET ${assignments}
   WHERE ${OPEN_AND_VISIBLE} AND version = $3 AND ${unexpired(4)}
   RETURNING *`;
}

/** Cancellation latches `cancelled` and the intent; parameters: $1 task id, $2 auth key, $3 now. */
export const CONDITIONAL_CANCEL = `
  UPDATE tasks SET status = 'cancelled', cancel_requested = true, version = version + 1,
         last_updated_at_ms = $3, lease_owner = NULL, lease_expires_at_ms = NULL
   WHERE ${OPEN_AND_VISIBLE} AND ${unexpired(3)}
   RETURNING *`;

/** One page of a listing: $1 auth key, $2 now, $3 limit, then optionally $4/$5 the position. */
export function listPage(afterPosition: boolean): string {
  const after = afterPosition ? 'AND (created_at_ms, task_id) > ($4, $5)' : '';
  return `SELECT * FROM tasks WHERE auth_key = $1 AND ${unexpired(2)} ${after}
   ORDER BY created_at_ms, task_id LIMIT $3`;
}

/** Deletes up to $2 records expired at $1; their outbox rows cascade, the audit stays. */
export const SWEEP_EXPIRED = `
  DELETE FROM tasks WHERE task_id IN (
    SELECT task_id FROM tasks WHERE expires_at_ms <= $1
     ORDER BY expires_at_ms LIMIT $2 FOR UPDATE SKIP LOCKED)`;

/** Seeding replaces a record verbatim; the key it carries moves to it from any other record. */
export const RELEASE_KEY_FOR_SEED = `
  UPDATE tasks SET idempotency_key = NULL
   WHERE auth_key = $1 AND idempotency_key = $2 AND task_id <> $3`;

export const UPSERT_TASK = `
  INSERT INTO tasks (${TASK_COLUMNS.join(', ')}) VALUES (${placeholders})
  ON CONFLICT (task_id) DO UPDATE SET ${TASK_COLUMNS.filter((c) => c !== 'task_id')
    .map((c) => `${c} = EXCLUDED.${c}`)
    .join(', ')}`;

export const SELECT_SECRET = `SELECT value FROM tasklatch_meta WHERE key = 'secret'`;
