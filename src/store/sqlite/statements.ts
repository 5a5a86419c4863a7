import type { SqliteDatabase, SqliteStatement } from './driver.js';
import { TASK_COLUMNS } from '../task-columns.js';

const COLUMNS = TASK_COLUMNS.join(', ');
const VALUES = TASK_COLUMNS.map((c) => `@${c}`).join(', ');
const UPSERT_SET = TASK_COLUMNS.filter((c) => c !== 'task_id')
  .map((c) => `${c} = excluded.${c}`)
  .join(', ');

const INPUT_COLUMN_NAMES = [
  'task_id',
  'input_key',
  'ask_seq',
  'request',
  'request_digest',
  'asked_at_ms',
  'response',
  'response_digest',
  'answered_at_ms',
  'deadline_ms',
  'position',
] as const;
const INPUT_COLUMNS = [...INPUT_COLUMN_NAMES, 'input_ordinal'].join(', ');
const INPUT_VALUES = [...INPUT_COLUMN_NAMES.map((c) => `@${c}`), 'coalesce(max(input_ordinal) + 1, 0)'].join(', ');
const INPUT_UPSERT_SET = INPUT_COLUMN_NAMES.filter((c) => c !== 'task_id' && c !== 'input_key')
  .map((c) => `${c} = excluded.${c}`)
  .join(', ');

/** The visibility predicate every caller-facing query carries, never a filter applied afterwards: restates !isExpired. */
const UNEXPIRED = '(expires_at_ms IS NULL OR expires_at_ms > @now)';
const NON_TERMINAL = "status IN ('working', 'input_required')";
/** A lease nobody holds any more: never taken, given back, or run out (restates !leaseHeld). */
const LEASE_FREE = '(lease_owner IS NULL OR lease_expires_at_ms IS NULL OR lease_expires_at_ms <= @now)';
/** The fence of heartbeat and release: the holder's version and owner on a live task (restates holdsFence). */
const FENCED = `task_id = @task_id AND auth_key = @auth_key AND version = @version AND lease_owner = @owner
       AND ${NON_TERMINAL} AND ${UNEXPIRED}`;

/** The SQL of every statement the store runs, by name. */
const SQL = {
  /** An expired holder no longer owns its idempotency key (restates decideAdmission's expiry test). */
  releaseExpiredKey: 'UPDATE tasks SET idempotency_key = NULL WHERE auth_key = @auth_key AND idempotency_key = @idempotency_key AND expires_at_ms <= @now',
  insertTask: `INSERT INTO tasks (${COLUMNS}) VALUES (${VALUES}) ON CONFLICT (auth_key, idempotency_key) DO NOTHING RETURNING *`,
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
       lease_expires_at_ms = CASE WHEN @terminal THEN NULL ELSE lease_expires_at_ms END
     WHERE task_id = @task_id AND auth_key = @auth_key AND version = @expected_version
       AND ${NON_TERMINAL} AND ${UNEXPIRED}
     RETURNING *`,
  /** Restates decideCancel's CANCEL_TASK. */
  applyCancel: `UPDATE tasks SET
       status = 'cancelled', cancel_requested = 1, version = version + 1, last_updated_at_ms = @now,
       lease_owner = NULL, lease_expires_at_ms = NULL
     WHERE task_id = @task_id AND auth_key = @auth_key AND ${NON_TERMINAL} AND ${UNEXPIRED}
     RETURNING *`,
  selectVisible: `SELECT * FROM tasks WHERE task_id = @task_id AND auth_key = @auth_key AND ${UNEXPIRED}`,
  /** `@ids` is a JSON array of ids: one statement for any number of them. */
  selectVisibleIds: `SELECT task_id FROM tasks WHERE task_id IN (SELECT value FROM json_each(@ids)) AND auth_key = @auth_key AND ${UNEXPIRED}`,
  /** Classification read only: its row is handed to the core rules, never to the caller as is. */
  selectById: 'SELECT * FROM tasks WHERE task_id = ?',
  /** Why a task is out of the caller's reach, without reading its payload (no timing difference by size). */
  selectGuardById: 'SELECT auth_key, status, version, expires_at_ms FROM tasks WHERE task_id = ?',
  listFirst: `SELECT * FROM tasks WHERE auth_key = @auth_key AND ${UNEXPIRED}
     ORDER BY created_at_ms, task_id LIMIT @limit`,
  listAfter: `SELECT * FROM tasks WHERE auth_key = @auth_key AND ${UNEXPIRED}
       AND (created_at_ms, task_id) > (@after_created_at_ms, @after_task_id)
     ORDER BY created_at_ms, task_id LIMIT @limit`,
  insertAudit: `INSERT INTO task_audit (at_ms, surface, decision, auth_key, task_id, correlation_id, status, version, detail)
     VALUES (@at_ms, @surface, @decision, @auth_key, @task_id, @correlation_id, @status, @version, @detail)`,
  selectAudit: 'SELECT * FROM task_audit WHERE task_id = ? ORDER BY id',
  /** Seeding imports records as they are: the seeded record takes its key over from any other holder. */
  releaseKeyForSeed: 'UPDATE tasks SET idempotency_key = NULL WHERE auth_key = @auth_key AND idempotency_key = @idempotency_key AND task_id <> @task_id',
  // An upsert, not INSERT OR REPLACE: REPLACE deletes the old row, and the cascade would take
  // its outbox entries with it.
  upsertTask: `INSERT INTO tasks (${COLUMNS}) VALUES (${VALUES}) ON CONFLICT (task_id) DO UPDATE SET ${UPSERT_SET}`,
  /**
   * One page of the claim walk, in dispatch order after the keyset position `@after_*`. The
   * literal `done_at_ms IS NULL` lets SQLite use the partial index, whose entries end in the
   * rowid (`id`), so the ORDER BY costs no sort.
   */
  dueOutbox: `SELECT id, task_id, available_at_ms FROM task_outbox
     WHERE done_at_ms IS NULL AND available_at_ms <= @now
       AND (available_at_ms, id) > (@after_available_at_ms, @after_id)
     ORDER BY available_at_ms, id LIMIT @limit`,
  closeOutboxEntry: 'UPDATE task_outbox SET done_at_ms = @now WHERE id = @id',
  /** A held lease: offer the entry again when it runs out (a heartbeat moves it further). */
  deferOutboxEntry: 'UPDATE task_outbox SET available_at_ms = @available_at_ms WHERE id = @id',
  /** The claim's one conditional write (restates decideDispatch's claim): the version bump fences off every earlier holder. */
  applyClaim: `UPDATE tasks SET
       version = version + 1, attempt = attempt + 1, lease_owner = @owner,
       lease_expires_at_ms = @lease_expires_at_ms, last_updated_at_ms = @now
     WHERE task_id = @task_id AND version = @version AND status = 'working' AND ${UNEXPIRED} AND ${LEASE_FREE}
     RETURNING *`,
  markOutboxClaimed: `UPDATE task_outbox SET
       available_at_ms = @lease_expires_at_ms, lease_expires_at_ms = @lease_expires_at_ms,
       claimed_by = @owner, attempt = @attempt
     WHERE id = @id`,
  /** A task out of attempts ends `failed` with the abandoned result, in one conditional write (restates decideDispatch's abandon). */
  applyAbandon: `UPDATE tasks SET
       status = 'failed', version = version + 1, last_updated_at_ms = @now,
       result = @result, result_digest = @result_digest, lease_owner = NULL, lease_expires_at_ms = NULL
     WHERE task_id = @task_id AND version = @version AND status = 'working' AND ${UNEXPIRED} AND ${LEASE_FREE}
     RETURNING *`,
  extendLease: `UPDATE tasks SET lease_expires_at_ms = @lease_expires_at_ms WHERE ${FENCED}`,
  /** Heartbeat and release move the task's open entry along with its lease. */
  moveOutboxEntry: `UPDATE task_outbox SET available_at_ms = @available_at_ms, lease_expires_at_ms = @lease_expires_at_ms
     WHERE task_id = @task_id AND done_at_ms IS NULL`,
  releaseLease: `UPDATE tasks SET lease_owner = NULL, lease_expires_at_ms = NULL WHERE ${FENCED} RETURNING status, version`,
  /** Terminal transitions and cancel close the task's entry in their own transaction. */
  closeDispatch: 'UPDATE task_outbox SET done_at_ms = @now WHERE task_id = @task_id AND done_at_ms IS NULL',
  countPending: 'SELECT count(*) AS n FROM task_outbox WHERE done_at_ms IS NULL',
  /**
   * The ask's one conditional write, restating decideAsk's APPLY_ASK: the asker's fence (holdsFence)
   * on a `working` task, and none of `@keys` (a JSON array) asked before.
   */
  applyAsk: `UPDATE tasks SET status = 'input_required', version = version + 1, last_updated_at_ms = @now
     WHERE task_id = @task_id AND auth_key = @auth_key AND version = @version AND lease_owner = @owner
       AND status = 'working' AND ${UNEXPIRED}
       AND NOT EXISTS (SELECT 1 FROM task_inputs WHERE task_id = @task_id AND input_key IN (SELECT value FROM json_each(@keys)))
     RETURNING *`,
  /** A question after the task's others (the aggregate gives one row, ordinal 0 for the first). */
  insertInput: `INSERT INTO task_inputs (${INPUT_COLUMNS})
     SELECT ${INPUT_VALUES} FROM task_inputs WHERE task_id = @task_id`,
  /** Seeding: a question as it is; one already stored keeps its place. */
  upsertInput: `INSERT INTO task_inputs (${INPUT_COLUMNS})
     SELECT ${INPUT_VALUES} FROM task_inputs WHERE task_id = @task_id
     ON CONFLICT (task_id, input_key) DO UPDATE SET ${INPUT_UPSERT_SET}`,
  selectInputKeys: 'SELECT input_key FROM task_inputs WHERE task_id = ?',
  /** A task's questions in ask order, then the order asked within one ask. */
  selectInputs: 'SELECT * FROM task_inputs WHERE task_id = ? ORDER BY ask_seq, input_ordinal',
  /** One answer, only to a question still outstanding (decideAnswer's APPLY_ANSWER). */
  storeAnswer: `UPDATE task_inputs SET response = @response, response_digest = @response_digest, answered_at_ms = @now
     WHERE task_id = @task_id AND input_key = @input_key AND answered_at_ms IS NULL`,
  /**
   * The task's side of applied answers, on the version read under the write lock: version + 1
   * and, when nothing is left outstanding (@resume), back to `working` as a first attempt with no
   * lease.
   */
  applyAnswers: `UPDATE tasks SET version = version + 1, last_updated_at_ms = @now,
       status = CASE WHEN @resume THEN 'working' ELSE status END,
       attempt = CASE WHEN @resume THEN 0 ELSE attempt END,
       lease_owner = CASE WHEN @resume THEN NULL ELSE lease_owner END,
       lease_expires_at_ms = CASE WHEN @resume THEN NULL ELSE lease_expires_at_ms END
     WHERE task_id = @task_id AND auth_key = @auth_key AND version = @version AND ${NON_TERMINAL} AND ${UNEXPIRED}
     RETURNING *`,
  /**
   * Up to @limit tasks an input deadline ends, most overdue first: each with its question due
   * first (ask order breaking ties). Restates awaitsInput and overdueQuestion.
   */
  overdueInputs: `SELECT task_id, input_key, deadline_ms, version FROM (
       SELECT i.task_id, i.input_key, i.deadline_ms, t.version,
              row_number() OVER (PARTITION BY i.task_id ORDER BY i.deadline_ms, i.ask_seq, i.input_ordinal) AS n
         FROM task_inputs i JOIN tasks t ON t.task_id = i.task_id
        WHERE i.answered_at_ms IS NULL AND i.deadline_ms IS NOT NULL AND i.deadline_ms <= @now
          AND t.status = 'input_required' AND (t.expires_at_ms IS NULL OR t.expires_at_ms > @now))
     WHERE n = 1 ORDER BY deadline_ms, task_id LIMIT @limit`,
  /** The deadline's one conditional write: still waiting at the version read (restates awaitsInput). */
  applyInputDeadline: `UPDATE tasks SET status = 'failed', version = version + 1, last_updated_at_ms = @now,
       result = @result, result_digest = @result_digest, lease_owner = NULL, lease_expires_at_ms = NULL
     WHERE task_id = @task_id AND version = @version AND status = 'input_required' AND ${UNEXPIRED}
     RETURNING *`,
  selectSecret: "SELECT value FROM tasklatch_meta WHERE key = 'secret'",
} as const;

/** The store's statements, prepared once per connection. */
export type Statements = { readonly [K in keyof typeof SQL]: SqliteStatement };

export function prepareStatements(db: SqliteDatabase): Statements {
  const entries = Object.entries(SQL).map(([name, text]) => [name, db.prepare(text)] as const);
  return Object.fromEntries(entries) as Statements;
}
