import { appliedAsJson, ownerIs, unexpired } from './predicates.js';

/**
 * The statements of the dispatch role in PostgreSQL: claim, heartbeat, release. Claimers never
 * wait for a row lock: a page of the outbox is read with FOR UPDATE SKIP LOCKED on each entry
 * and its task together, and everything else a claim writes is a row it already holds. Every
 * other writer (transition, cancel, heartbeat, release, sweep) locks the task row before the
 * outbox row.
 */

/**
 * One page of the claim walk: open entries due at $1, after the keyset position ($2, $3), at
 * most $4, each with its task, in dispatch order; $5 (null: any) the tools the claimer runs;
 * with `ofApp`, $6 the claimer's app; then (from $6, or $7 with `ofApp`) the claimer's version
 * grants as `versionGrantLists` gives them: its own (tool, version) keys (null: any version),
 * the tools it is the newest live version of, and the live keys of those tools. The filters are
 * part of the locking read (they restate isForClaimer and mayClaimVersion): an entry of another
 * tool, app or version is never locked, so a worker it is for is not made to skip it. The app is
 * compared on the entry, so the walk reads only the claimer's app's entries, through task_outbox_app_dispatch (app, available_at_ms, id); without an app
 * (a claim for any app) the open entries of every app are read and sorted.
 *
 * Locking the task as well as the entry is what keeps a claim out of deadlocks: a terminal
 * transition holds the task row and then waits for the entry (to close it); a claimer that held
 * the entry and then waited for the task would close the circle. An entry whose task is being
 * written is skipped like one another claimer holds, and the writer's notification wakes the workers.
 *
 * Each entry comes with its task as one JSON value (`task`), as every statement of this role that
 * answers with task rows gives them (predicates.ts `appliedAsJson` says why).
 */
function dueOutbox(ofApp: boolean): string {
  const [own, newest, live] = ofApp ? ['$7', '$8', '$9'] : ['$6', '$7', '$8'];
  const key = `t.tool_name || chr(10) || t.tool_version`;
  return `
  SELECT o.id AS outbox_id, o.available_at_ms AS outbox_available_at_ms, to_json(t) AS task
    FROM task_outbox o JOIN tasks t ON t.task_id = o.task_id
   WHERE o.done_at_ms IS NULL AND o.available_at_ms <= $1
     AND (o.available_at_ms, o.id) > ($2::bigint, $3::bigint)
     AND ($5::text[] IS NULL OR t.tool_name = ANY($5::text[]))${ofApp ? '\n     AND o.app = $6::text AND t.app = $6::text' : ''}
     AND (t.tool_version IS NULL OR ${own}::text[] IS NULL OR ${key} = ANY(${own}::text[])
          OR (t.tool_name = ANY(${newest}::text[]) AND NOT ${key} = ANY(${live}::text[])))
   ORDER BY o.available_at_ms, o.id
   LIMIT $4
     FOR UPDATE OF o, t SKIP LOCKED`;
}

/**
 * A dispatch write on one task as one statement: the conditional task UPDATE (the version read,
 * still working, unexpired, the lease free or run out) and, only when it changed the row, the
 * outbox entry and an audit line. It returns the
 * record after the write as JSON (`appliedAsJson`), or no row when the guard failed.
 * Parameters: $1 task id, $2 version, $3 now, $4 outbox id, $5 correlation id, $6 audit detail;
 * `taskSets` use their own from $7.
 */
function dispatchWrite(taskSets: string, outboxSets: string): string {
  return `
  WITH applied AS (
    UPDATE tasks SET version = version + 1, last_updated_at_ms = $3, ${taskSets}
     -- restates decideDispatch's claim and abandon: working, unexpired, no lease held (leaseHeld)
     WHERE task_id = $1 AND version = $2 AND status = 'working' AND ${unexpired(3)}
       AND (lease_owner IS NULL OR lease_expires_at_ms IS NULL OR lease_expires_at_ms <= $3)
    RETURNING *
  ), moved AS (
    UPDATE task_outbox o SET ${outboxSets} FROM applied a WHERE o.id = $4
  ), audited AS (
    INSERT INTO task_audit (at_ms, surface, decision, auth_key, task_id, correlation_id, status, version, detail)
    SELECT $3::bigint, 'transition', 'APPLY_TRANSITION', auth_key, task_id, $5::text, status, version, $6::text FROM applied
  )
  ${appliedAsJson}`;
}

/** A claim clears the status message a concurrency wait wrote (restates isWaitingMessage), and keeps any other. */
function unwaited(column: string): string {
  return `CASE WHEN left(${column}, 32) = 'waiting for a concurrency slot (' THEN NULL ELSE ${column} END`;
}

/** The fence, restating holdsFence: $1 task, $2 auth key, $3 version, $4 lease owner; still open and unexpired at $5. */
const FENCED = `task_id = $1 AND ${ownerIs('$2')} AND version = $3 AND lease_owner = $4
     AND status IN ('working', 'input_required') AND ${unexpired(5)}`;

/** The dispatch role's statements, by name. */
export const dispatchSql = {
  /** The claim walk's page for a claimer of any app. */
  dueOutbox: dueOutbox(false),

  /** The claim walk's page for a claimer of one app ($6). */
  dueOutboxOfApp: dueOutbox(true),

  /** Closes the entries of tasks that ended or expired: $1 outbox ids, $2 now. */
  closeOutboxEntries: `UPDATE task_outbox SET done_at_ms = $2 WHERE id = ANY($1::bigint[])`,

  /** Moves entries whose task is leased to the lease's expiry: $1 outbox ids, $2 expiries. */
  deferOutboxEntries: `
  UPDATE task_outbox o SET available_at_ms = d.available_at_ms
    FROM unnest($1::bigint[], $2::bigint[]) AS d (id, available_at_ms)
   WHERE o.id = d.id`,

  /** A claim: a new attempt leased to $7 until $8; the entry comes due again at the lease's end. */
  claimTask: dispatchWrite(
    `attempt = attempt + 1, lease_owner = $7, lease_expires_at_ms = $8, status_message = ${unwaited('status_message')}`,
    'available_at_ms = a.lease_expires_at_ms, claimed_by = a.lease_owner, attempt = a.attempt, lease_expires_at_ms = a.lease_expires_at_ms',
  ),

  /**
   * Several claims as one statement, each the same conditional write as `claimTask` on the version
   * its walk read: $1 task ids, $2 versions, $3 outbox ids (in walk order), $4 now, $5 correlation
   * id, $6 the audit details (in walk order), $7 lease owner, $8 lease expiry. It returns the records it claimed, each
   * as JSON (`task`) with its `outbox_id`; a task whose guard failed is missing and is judged again on its own.
   */
  claimTasks: `
  WITH wanted AS (
    SELECT * FROM unnest($1::text[], $2::int[], $3::bigint[], $6::text[]) WITH ORDINALITY AS w (task_id, version, outbox_id, detail, walk)
  ), applied AS (
    UPDATE tasks t SET version = t.version + 1, last_updated_at_ms = $4, attempt = t.attempt + 1, lease_owner = $7, lease_expires_at_ms = $8,
           status_message = ${unwaited('t.status_message')}
      FROM wanted w
     -- restates decideDispatch's claim: working, unexpired, no lease held (leaseHeld)
     WHERE t.task_id = w.task_id AND t.version = w.version AND t.status = 'working'
       AND (t.expires_at_ms IS NULL OR t.expires_at_ms > $4)
       AND (t.lease_owner IS NULL OR t.lease_expires_at_ms IS NULL OR t.lease_expires_at_ms <= $4)
    RETURNING t.*, w.outbox_id, w.walk, w.detail AS claim_detail
  ), moved AS (
    UPDATE task_outbox o SET available_at_ms = a.lease_expires_at_ms, claimed_by = a.lease_owner, attempt = a.attempt, lease_expires_at_ms = a.lease_expires_at_ms
      FROM applied a WHERE o.id = a.outbox_id
  ), audited AS (
    INSERT INTO task_audit (at_ms, surface, decision, auth_key, task_id, correlation_id, status, version, detail)
    SELECT $4::bigint, 'transition', 'APPLY_TRANSITION', auth_key, task_id, $5::text, status, version, claim_detail FROM applied ORDER BY walk
  )
  SELECT outbox_id, to_json(applied) AS task FROM applied`,

  /** Ends a task that used up its attempts `failed` with $7 (JSON) and its digest $8. */
  abandonTask: dispatchWrite(`status = 'failed', result = $7, result_digest = $8, lease_owner = NULL, lease_expires_at_ms = NULL`, 'done_at_ms = $3'),

  /** Extends a fenced lease to $6, and the entry with it; returns a row when the fence held. */
  heartbeat: `
  WITH renewed AS (
    UPDATE tasks SET lease_expires_at_ms = $6 WHERE ${FENCED} RETURNING task_id
  ), moved AS (
    UPDATE task_outbox o SET available_at_ms = $6, lease_expires_at_ms = $6
      FROM renewed r WHERE o.task_id = r.task_id AND o.done_at_ms IS NULL
  )
  SELECT task_id FROM renewed`,

  /**
   * Gives a fenced lease back: the entry is due again at once ($5), a RELEASE_LEASE line goes to
   * the trail ($6 correlation id) and idle workers are woken. The version stays: the next claim
   * bumps it.
   */
  releaseLease: `
  WITH released AS (
    UPDATE tasks SET lease_owner = NULL, lease_expires_at_ms = NULL WHERE ${FENCED} RETURNING task_id, auth_key, status, version
  ), moved AS (
    UPDATE task_outbox o SET available_at_ms = $5, claimed_by = NULL, lease_expires_at_ms = NULL
      FROM released r WHERE o.task_id = r.task_id AND o.done_at_ms IS NULL
  ), audited AS (
    INSERT INTO task_audit (at_ms, surface, decision, auth_key, task_id, correlation_id, status, version, detail)
    SELECT $5::bigint, 'transition', 'RELEASE_LEASE', auth_key, task_id, $6::text, status, version, 'release ' || $4::text FROM released
  )
  SELECT task_id, version FROM released`,

  /** Outbox entries not yet closed, due or not. */
  countPending: `SELECT count(*)::int AS n FROM task_outbox WHERE done_at_ms IS NULL`,
} as const;
