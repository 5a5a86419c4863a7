import { NON_TERMINAL, UNEXPIRED } from './predicates.js';

/**
 * The statements of the dispatch role in SQLite: the claim walk, heartbeat and release, and the
 * outbox entry's moves. Every one runs inside a `BEGIN IMMEDIATE` transaction, so a claimer in
 * another process waits for the write lock instead of skipping rows.
 */

/** A lease nobody holds any more: never taken, given back, or run out (restates !leaseHeld). */
const LEASE_FREE = '(lease_owner IS NULL OR lease_expires_at_ms IS NULL OR lease_expires_at_ms <= @now)';
/** The fence of heartbeat and release: the holder's version and owner on a live task (restates holdsFence). */
const FENCED = `task_id = @task_id AND auth_key = @auth_key AND version = @version AND lease_owner = @owner
       AND ${NON_TERMINAL} AND ${UNEXPIRED}`;

/** A status message a concurrency wait wrote (restates isWaitingMessage): the claim that starts the task clears it. */
const WAITING = "substr(status_message, 1, 32) = 'waiting for a concurrency slot ('";

/** The dispatch role's statements, by name. */
export const dispatchSql = {
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
       lease_expires_at_ms = @lease_expires_at_ms, last_updated_at_ms = @now,
       status_message = CASE WHEN ${WAITING} THEN NULL ELSE status_message END
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
  /**
   * The tasks holding a slot of one concurrency key (restates holdsSlot): of the app and tool,
   * working, leased, unexpired. A claim counts them before it takes a task of the key.
   */
  countRunningOfKey: `SELECT count(*) AS n FROM tasks
     WHERE app = @app AND tool_name = @tool_name AND concurrency_key = @key
       AND status = 'working' AND lease_owner IS NOT NULL AND lease_expires_at_ms > @now AND ${UNEXPIRED}`,
  /** A task left waiting for a slot says so: a status write (version + 1), only when its message says something else. */
  markWaiting: `UPDATE tasks SET status_message = @message, version = version + 1, last_updated_at_ms = @now
     WHERE task_id = @task_id AND version = @version AND status_message IS NOT @message
     RETURNING *`,
  /** Outbox entries not yet closed, due or not. */
  countPending: 'SELECT count(*) AS n FROM task_outbox WHERE done_at_ms IS NULL',
} as const;
