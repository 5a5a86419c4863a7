import { TASK_COLUMNS } from '../task-columns.js';

/**
 * The SQL of the PostgreSQL store. Unqualified names resolve through the connection's
 * search_path, which `?schema=` sets. Each WHERE clause that guards a write is a core rule
 * restated for one statement, and says which; every other decision is made in TypeScript by
 * the core. No statement notifies: the store sends the change notifications of a write after it
 * committed (`ChangeNotifier`, listener.ts), so NOTIFY's commit-time lock never serialises the writes.
 */

/** `(expires_at_ms IS NULL OR expires_at_ms > now)` with `now` as parameter `$n`: restates !isExpired. */
export function unexpired(n: number): string {
  return `(expires_at_ms IS NULL OR expires_at_ms > $${n})`;
}

/** An expired holder gives its idempotency key up (restates decideAdmission's expiry test). */
export const RELEASE_EXPIRED_KEY = `
  UPDATE tasks SET idempotency_key = NULL
   WHERE auth_key = $1 AND idempotency_key = $2 AND expires_at_ms <= $3`;

/** Column types of `TASK_COLUMNS`, for parameters outside a VALUES list (which would default to text). */
const TASK_COLUMN_TYPES = [
  'text',
  'text',
  'text',
  'text',
  'text',
  'int',
  'bigint',
  'bigint',
  'bigint',
  'bigint',
  'int',
  'text',
  'text',
  'jsonb',
  'boolean',
  'jsonb',
  'text',
  'text',
  'int',
  'text',
  'bigint',
  'text',
  'text',
] as const;
const typedPlaceholders = TASK_COLUMN_TYPES.map((type, i) => `$${i + 1}::${type}`).join(', ');

/** The parameters after the task's columns in ADMIT_TASK: the active limit, now, the stored bound. */
const LIMIT = `$${TASK_COLUMNS.length + 1}::int`;
const NOW = `$${TASK_COLUMNS.length + 2}::bigint`;
const STORED = `$${TASK_COLUMNS.length + 3}::int`;

/**
 * Admission as one statement: the task row (unless its key is taken, or the caller is at its
 * active-task limit), its outbox entry (with the task's app, which the claim filters by) and the
 * ACCEPT_TASK audit line. Parameters: the task's columns ($1–$23, `TASK_COLUMNS` order), the
 * limit ($24, null for none), now ($25), the stored bound ($26, null for none). Under a
 * limit the caller has taken the auth key's advisory lock in an earlier statement, so this
 * statement's snapshot already sees every admission that committed before it.
 */
// The count guard restates decideLimitedAdmission's limit; the key's live holder is classified in TS.
export const ADMIT_TASK = `
  WITH inserted AS (
    INSERT INTO tasks (${TASK_COLUMNS.join(', ')})
    SELECT ${typedPlaceholders}
     WHERE (${LIMIT} IS NULL
        OR (SELECT count(*) FROM tasks
             WHERE auth_key = $2::text AND status IN ('working', 'input_required')
               AND (expires_at_ms IS NULL OR expires_at_ms > ${NOW})) < ${LIMIT})
       AND (${STORED} IS NULL
        OR (SELECT count(*) FROM tasks
             WHERE auth_key = $2::text AND (expires_at_ms IS NULL OR expires_at_ms > ${NOW})) < ${STORED})
    ON CONFLICT (auth_key, idempotency_key) DO NOTHING
    RETURNING *
  ), queued AS (
    INSERT INTO task_outbox (task_id, app, created_at_ms, available_at_ms)
    SELECT task_id, app, created_at_ms, created_at_ms FROM inserted
  ), audited AS (
    INSERT INTO task_audit (at_ms, surface, decision, auth_key, task_id, correlation_id, status, version, detail)
    SELECT created_at_ms, 'create', 'ACCEPT_TASK', auth_key, task_id, correlation_id, NULL, NULL, NULL FROM inserted
  )
  SELECT inserted.* FROM inserted`;

export const SELECT_BY_KEY = `SELECT * FROM tasks WHERE auth_key = $1 AND idempotency_key = $2`;

export const COUNT_ACTIVE = `
  SELECT count(*)::int AS n FROM tasks
   WHERE auth_key = $1 AND status IN ('working', 'input_required') AND ${unexpired(2)}`;

export const COUNT_STORED = `SELECT count(*)::int AS n FROM tasks WHERE auth_key = $1 AND ${unexpired(2)}`;

export const SELECT_BY_ID = `SELECT * FROM tasks WHERE task_id = $1`;

/** Which of the ids ($1, an array) are the caller's ($2) unexpired ($3) tasks: one statement for all. */
export const SELECT_VISIBLE_IDS = `SELECT task_id FROM tasks WHERE task_id = ANY($1::text[]) AND auth_key = $2 AND ${unexpired(3)}`;

/** Why a task is out of the caller's reach, without reading its payload (no timing difference by size). */
export const SELECT_GUARD_BY_ID = `SELECT auth_key, status, version, expires_at_ms FROM tasks WHERE task_id = $1`;

const AUDIT_COLUMNS = '(at_ms, surface, decision, auth_key, task_id, correlation_id, status, version, detail)';

export const INSERT_AUDIT = `INSERT INTO task_audit ${AUDIT_COLUMNS} VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`;

/**
 * Any number of audit lines in one INSERT, one text for every batch size (so it is prepared once
 * per connection): nine arrays, one per column, element i of each is line i (`auditColumns`).
 */
/** The name INSERT_AUDIT_LINES is prepared under on every connection that sends it. */
export const INSERT_AUDIT_LINES_NAME = 'tasklatch_insert_audit_lines';

export const INSERT_AUDIT_LINES = `
  INSERT INTO task_audit ${AUDIT_COLUMNS}
  SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::int[], $9::text[])`;

export const SELECT_AUDIT = `
  SELECT at_ms, surface, decision, auth_key, task_id, correlation_id, status, version, detail
    FROM task_audit WHERE task_id = $1 ORDER BY id`;

/** The guard of every applied write: this task, this auth key, still open (with unexpired: restates decideTransition's APPLY_TRANSITION). */
const OPEN_AND_VISIBLE = `task_id = $1 AND auth_key = $2 AND status IN ('working', 'input_required')`;

/**
 * A status write as one statement: the conditional task UPDATE (restating decideTransition's
 * APPLY_TRANSITION: this task and auth key, still open, the expected version, unexpired) and,
 * only when it changed the row, the close of its outbox entry (a terminal status), the
 * APPLY_TRANSITION audit line. `sets` are
 * extra assignments with their own parameters (from `$7` on); parameters: $1 task id, $2 auth
 * key, $3 expected version, $4 now, $5 status, $6 correlation id. The outbox row is locked after
 * the task row, the order every waiting writer keeps (see closeOutboxOf).
 */
export function appliedTransition(sets: readonly string[], terminal: boolean): string {
  const assignments = ['status = $5', 'version = version + 1', 'last_updated_at_ms = $4', ...sets].join(', ');
  return `
  WITH applied AS (
    UPDATE tasks SET ${assignments}
     WHERE ${OPEN_AND_VISIBLE} AND version = $3 AND ${unexpired(4)}
    RETURNING *
  )${terminal ? closeOutboxOf('$4') : ''}, audited AS (
    INSERT INTO task_audit ${AUDIT_COLUMNS}
    SELECT $4::bigint, 'transition', 'APPLY_TRANSITION', auth_key, task_id, $6::text, status, version, NULL FROM applied
  )
  SELECT applied.* FROM applied`;
}

/**
 * The CTE that closes the open outbox entry of the task in `applied` at the time `at`, so no
 * claimer dispatches it again. It reads `applied`, so it locks the outbox row after the task
 * row: every waiting writer locks in that order, and claimers (which lock both at once) never
 * wait, so the two orders never meet in a deadlock.
 */
function closeOutboxOf(at: string): string {
  return `, closed AS (
    UPDATE task_outbox o SET done_at_ms = ${at} FROM applied a WHERE o.task_id = a.task_id AND o.done_at_ms IS NULL
  )`;
}

/**
 * Cancellation as one statement: latches `cancelled` and the intent (restates decideCancel's
 * CANCEL_TASK), closes the outbox entry and writes the CANCEL_TASK line; all only when
 * the UPDATE changed the row. $1 task id, $2 auth key, $3 now, $4 correlation id.
 */
export const CONDITIONAL_CANCEL = `
  WITH applied AS (
    UPDATE tasks SET status = 'cancelled', cancel_requested = true, version = version + 1,
           last_updated_at_ms = $3, lease_owner = NULL, lease_expires_at_ms = NULL
     WHERE ${OPEN_AND_VISIBLE} AND ${unexpired(3)}
    RETURNING *
  )${closeOutboxOf('$3')}, audited AS (
    INSERT INTO task_audit ${AUDIT_COLUMNS}
    SELECT $3::bigint, 'read', 'CANCEL_TASK', auth_key, task_id, $4::text, status, version, NULL FROM applied
  )
  SELECT applied.* FROM applied`;

/** One page of a listing: $1 auth key, $2 now, $3 limit, then optionally $4/$5 the position. */
export function listPage(afterPosition: boolean): string {
  const after = afterPosition ? 'AND (created_at_ms, task_id) > ($4, $5)' : '';
  return `SELECT * FROM tasks WHERE auth_key = $1 AND ${unexpired(2)} ${after}
   ORDER BY created_at_ms, task_id LIMIT $3`;
}

/** Seeding replaces a record verbatim; the key it carries moves to it from any other record. */
export const RELEASE_KEY_FOR_SEED = `
  UPDATE tasks SET idempotency_key = NULL
   WHERE auth_key = $1 AND idempotency_key = $2 AND task_id <> $3`;

export const UPSERT_TASK = `
  INSERT INTO tasks (${TASK_COLUMNS.join(', ')}) VALUES (${typedPlaceholders})
  ON CONFLICT (task_id) DO UPDATE SET ${TASK_COLUMNS.filter((c) => c !== 'task_id')
    .map((c) => `${c} = EXCLUDED.${c}`)
    .join(', ')}`;

export const SELECT_SECRET = `SELECT value FROM tasklatch_meta WHERE key = 'secret'`;

// Dispatch: claim, heartbeat, release. Claimers never wait for a row lock: a page of the outbox
// is read with FOR UPDATE SKIP LOCKED on each entry and its task together, and everything else a
// claim writes is a row it already holds. Every other writer (transition, cancel, heartbeat,
// release, sweep) locks the task row before the outbox row.

/**
 * One page of the claim walk: open entries due at $1, after the keyset position ($2, $3), at
 * most $4, each with its task, in dispatch order; $5 (null: any) the tools the claimer runs;
 * with `ofApp`, $6 the claimer's app. Both filters are part of the locking read (they restate
 * isForClaimer): an entry of another tool or app is never locked, so a worker it is for is not
 * made to skip it. The app is compared on the entry, so the walk reads only the claimer's
 * app's entries, through task_outbox_app_dispatch (app, available_at_ms, id); without an app
 * (a claim for any app) the open entries of every app are read and sorted.
 *
 * Locking the task as well as the entry is what keeps a claim out of deadlocks: a terminal
 * transition holds the task row and then waits for the entry (to close it); a claimer that held
 * the entry and then waited for the task would close the circle. An entry whose task is being
 * written is skipped like one another claimer holds, and the writer's notification wakes the workers.
 */
function dueOutbox(ofApp: boolean): string {
  return `
  SELECT o.id AS outbox_id, o.available_at_ms AS outbox_available_at_ms, t.*
    FROM task_outbox o JOIN tasks t ON t.task_id = o.task_id
   WHERE o.done_at_ms IS NULL AND o.available_at_ms <= $1
     AND (o.available_at_ms, o.id) > ($2::bigint, $3::bigint)
     AND ($5::text[] IS NULL OR t.tool_name = ANY($5::text[]))${ofApp ? '\n     AND o.app = $6::text AND t.app = $6::text' : ''}
   ORDER BY o.available_at_ms, o.id
   LIMIT $4
     FOR UPDATE OF o, t SKIP LOCKED`;
}

/** The claim walk's page for a claimer of any app. */
export const DUE_OUTBOX = dueOutbox(false);

/** The claim walk's page for a claimer of one app ($6). */
export const DUE_OUTBOX_OF_APP = dueOutbox(true);

/** Closes the entries of tasks that ended or expired: $1 outbox ids, $2 now. */
export const CLOSE_OUTBOX_ENTRIES = `UPDATE task_outbox SET done_at_ms = $2 WHERE id = ANY($1::bigint[])`;

/** Moves entries whose task is leased to the lease's expiry: $1 outbox ids, $2 expiries. */
export const DEFER_OUTBOX_ENTRIES = `
  UPDATE task_outbox o SET available_at_ms = d.available_at_ms
    FROM unnest($1::bigint[], $2::bigint[]) AS d (id, available_at_ms)
   WHERE o.id = d.id`;

/**
 * A dispatch write on one task as one statement: the conditional task UPDATE (the version read,
 * still working, unexpired, the lease free or run out) and, only when it changed the row, the
 * outbox entry and an audit line. It returns the
 * record after the write, or no row when the guard failed.
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
  SELECT applied.* FROM applied`;
}

/** A claim: a new attempt leased to $7 until $8; the entry comes due again at the lease's end. */
export const CLAIM_TASK = dispatchWrite(
  'attempt = attempt + 1, lease_owner = $7, lease_expires_at_ms = $8',
  'available_at_ms = a.lease_expires_at_ms, claimed_by = a.lease_owner, attempt = a.attempt, lease_expires_at_ms = a.lease_expires_at_ms',
);

/**
 * Several claims as one statement, each the same conditional write as CLAIM_TASK on the version
 * its walk read: $1 task ids, $2 versions, $3 outbox ids (in walk order), $4 now, $5 correlation
 * id, $6 audit detail, $7 lease owner, $8 lease expiry. It returns the records it claimed, each
 * with its `outbox_id`; a task whose guard failed is missing and is judged again on its own.
 */
export const CLAIM_TASKS = `
  WITH wanted AS (
    SELECT * FROM unnest($1::text[], $2::int[], $3::bigint[]) WITH ORDINALITY AS w (task_id, version, outbox_id, walk)
  ), applied AS (
    UPDATE tasks t SET version = t.version + 1, last_updated_at_ms = $4, attempt = t.attempt + 1, lease_owner = $7, lease_expires_at_ms = $8
      FROM wanted w
     -- restates decideDispatch's claim: working, unexpired, no lease held (leaseHeld)
     WHERE t.task_id = w.task_id AND t.version = w.version AND t.status = 'working'
       AND (t.expires_at_ms IS NULL OR t.expires_at_ms > $4)
       AND (t.lease_owner IS NULL OR t.lease_expires_at_ms IS NULL OR t.lease_expires_at_ms <= $4)
    RETURNING t.*, w.outbox_id, w.walk
  ), moved AS (
    UPDATE task_outbox o SET available_at_ms = a.lease_expires_at_ms, claimed_by = a.lease_owner, attempt = a.attempt, lease_expires_at_ms = a.lease_expires_at_ms
      FROM applied a WHERE o.id = a.outbox_id
  ), audited AS (
    INSERT INTO task_audit (at_ms, surface, decision, auth_key, task_id, correlation_id, status, version, detail)
    SELECT $4::bigint, 'transition', 'APPLY_TRANSITION', auth_key, task_id, $5::text, status, version, $6::text FROM applied ORDER BY walk
  )
  SELECT applied.* FROM applied`;

/**
 * The claim of a task in the transaction that admitted it (see `AdmitInput.claim`), the same
 * write as CLAIM_TASKS on the row the admission just inserted: $1 task id, $2 the admission's
 * correlation id (only the row this admission inserted, never a replayed one), $3 now, $4
 * correlation id, $5 audit detail, $6 lease owner, $7 lease expiry.
 */
export const CLAIM_ADMITTED = `
  WITH applied AS (
    UPDATE tasks SET version = version + 1, last_updated_at_ms = $3, attempt = attempt + 1, lease_owner = $6, lease_expires_at_ms = $7
     -- restates decideDispatch's claim: working, unexpired, no lease held; and the admission's own row, at version 1
     WHERE task_id = $1 AND correlation_id = $2 AND version = 1 AND status = 'working'
       AND ${unexpired(3)} AND lease_owner IS NULL
    RETURNING *
  ), moved AS (
    UPDATE task_outbox o SET available_at_ms = a.lease_expires_at_ms, claimed_by = a.lease_owner, attempt = a.attempt, lease_expires_at_ms = a.lease_expires_at_ms
      FROM applied a WHERE o.task_id = a.task_id AND o.done_at_ms IS NULL
  ), audited AS (
    INSERT INTO task_audit (at_ms, surface, decision, auth_key, task_id, correlation_id, status, version, detail)
    SELECT $3::bigint, 'transition', 'APPLY_TRANSITION', auth_key, task_id, $4::text, status, version, $5::text FROM applied
  )
  SELECT applied.* FROM applied`;

/** Ends a task that used up its attempts `failed` with $7 (JSON) and its digest $8. */
export const ABANDON_TASK = dispatchWrite(
  `status = 'failed', result = $7, result_digest = $8, lease_owner = NULL, lease_expires_at_ms = NULL`,
  'done_at_ms = $3',
);

/** The fence, restating holdsFence: $1 task, $2 auth key, $3 version, $4 lease owner; still open and unexpired at $5. */
const FENCED = `task_id = $1 AND auth_key = $2 AND version = $3 AND lease_owner = $4
     AND status IN ('working', 'input_required') AND ${unexpired(5)}`;

/** Extends a fenced lease to $6, and the entry with it; returns a row when the fence held. */
export const HEARTBEAT = `
  WITH renewed AS (
    UPDATE tasks SET lease_expires_at_ms = $6 WHERE ${FENCED} RETURNING task_id
  ), moved AS (
    UPDATE task_outbox o SET available_at_ms = $6, lease_expires_at_ms = $6
      FROM renewed r WHERE o.task_id = r.task_id AND o.done_at_ms IS NULL
  )
  SELECT task_id FROM renewed`;

/**
 * Gives a fenced lease back: the entry is due again at once ($5), a RELEASE_LEASE line goes to
 * the trail ($6 correlation id) and idle workers are woken. The version stays: the next claim
 * bumps it.
 */
export const RELEASE = `
  WITH released AS (
    UPDATE tasks SET lease_owner = NULL, lease_expires_at_ms = NULL WHERE ${FENCED} RETURNING task_id, auth_key, status, version
  ), moved AS (
    UPDATE task_outbox o SET available_at_ms = $5, claimed_by = NULL, lease_expires_at_ms = NULL
      FROM released r WHERE o.task_id = r.task_id AND o.done_at_ms IS NULL
  ), audited AS (
    INSERT INTO task_audit (at_ms, surface, decision, auth_key, task_id, correlation_id, status, version, detail)
    SELECT $5::bigint, 'transition', 'RELEASE_LEASE', auth_key, task_id, $6::text, status, version, 'release ' || $4::text FROM released
  )
  SELECT task_id, version FROM released`;

export const COUNT_PENDING = `SELECT count(*)::int AS n FROM task_outbox WHERE done_at_ms IS NULL`;

// Inputs: ask, answer, the questions of a task. Every writer locks the task row before any of
// its questions, as the sweeper's cascade does.

/**
 * An ask as one statement: the conditional task UPDATE, restating decideAsk's APPLY_ASK (the
 * asker's fence, as holdsFence, on a `working` task, none of the keys asked before), the
 * questions after the task's others and the audit line; all only when
 * the UPDATE changed the row. Parameters: $1 task id, $2 auth key, $3 version, $4 lease owner,
 * $5 now, $6 keys, $7 ask seq, $8 the questions as JSON `[{ key, request, digest, deadline }]` in
 * ask order (deadline null for none), $9–$17 the audit line (`auditToRow`), $18 the ask's
 * journal position (null: not said).
 */
export const ASK = `
  WITH applied AS (
    UPDATE tasks SET status = 'input_required', version = version + 1, last_updated_at_ms = $5
     WHERE task_id = $1 AND auth_key = $2 AND version = $3 AND lease_owner = $4 AND status = 'working' AND ${unexpired(5)}
       AND NOT EXISTS (SELECT 1 FROM task_inputs i WHERE i.task_id = $1 AND i.input_key = ANY($6::text[]))
    RETURNING *
  ), asked AS (
    INSERT INTO task_inputs (task_id, input_key, ask_seq, input_ordinal, request, request_digest, asked_at_ms, deadline_ms, position)
    SELECT a.task_id, q.value ->> 'key', $7::int, base.n + q.n - 1, q.value -> 'request', q.value ->> 'digest', $5::bigint,
           (q.value ->> 'deadline')::bigint, $18::int
      FROM applied a
     CROSS JOIN (SELECT coalesce(max(input_ordinal) + 1, 0) AS n FROM task_inputs WHERE task_id = $1) base
     CROSS JOIN jsonb_array_elements($8::jsonb) WITH ORDINALITY AS q (value, n)
  ), audited AS (
    INSERT INTO task_audit ${AUDIT_COLUMNS}
    SELECT $9::bigint, $10::text, $11::text, $12::text, $13::text, $14::text, $15::text, $16::int, $17::text FROM applied
  )
  SELECT applied.* FROM applied`;

/** What an ask that changed nothing is classified by: the task and the keys it asked, in one snapshot. */
export const SELECT_ASKED = `
  SELECT t.*, ARRAY(SELECT input_key FROM task_inputs i WHERE i.task_id = t.task_id) AS asked_keys
    FROM tasks t WHERE t.task_id = $1`;

/** The task an answer reads, locked until commit: no other answer reads its questions meanwhile. */
export const SELECT_FOR_ANSWER = `SELECT * FROM tasks WHERE task_id = $1 FOR UPDATE`;

/** A task's questions in ask order, then the order asked within one ask. */
export const SELECT_INPUTS = `SELECT * FROM task_inputs WHERE task_id = $1 ORDER BY ask_seq, input_ordinal`;

/**
 * The caller's unexpired task's questions: no row when the task is out of reach, one row of
 * NULLs when it has none. $1 task id, $2 auth key, $3 now.
 */
export const SELECT_VISIBLE_INPUTS = `
  SELECT i.* FROM tasks t LEFT JOIN task_inputs i ON i.task_id = t.task_id
   WHERE t.task_id = $1 AND t.auth_key = $2 AND (t.expires_at_ms IS NULL OR t.expires_at_ms > $3)
   ORDER BY i.ask_seq, i.input_ordinal`;

/**
 * Applied answers as one statement, on the version read under the row lock: each answer only to
 * a question still outstanding (decideAnswer's APPLY_ANSWER), the task version + 1 and, when
 * nothing is left outstanding ($5), back to `working` as a first attempt with no lease and its
 * open outbox entry due at once. It returns the record and how
 * many answers it stored. Parameters: $1 task id, $2 auth key, $3 version, $4 now, $5 resume,
 * $6 the answers as JSON `[{ key, response, digest }]`.
 */
export const APPLY_ANSWERS = `
  WITH answered AS (
    UPDATE task_inputs i SET response = a.response, response_digest = a.digest, answered_at_ms = $4
      FROM jsonb_to_recordset($6::jsonb) AS a (key text, response jsonb, digest text)
     WHERE i.task_id = $1 AND i.input_key = a.key AND i.answered_at_ms IS NULL
    RETURNING i.input_key
  ), applied AS (
    UPDATE tasks SET version = version + 1, last_updated_at_ms = $4,
           status = CASE WHEN $5::boolean THEN 'working' ELSE status END,
           attempt = CASE WHEN $5::boolean THEN 0 ELSE attempt END,
           lease_owner = CASE WHEN $5::boolean THEN NULL ELSE lease_owner END,
           lease_expires_at_ms = CASE WHEN $5::boolean THEN NULL ELSE lease_expires_at_ms END
     WHERE ${OPEN_AND_VISIBLE} AND version = $3 AND ${unexpired(4)}
    RETURNING *
  ), moved AS (
    UPDATE task_outbox o SET available_at_ms = $4, claimed_by = NULL, lease_expires_at_ms = NULL
      FROM applied a WHERE $5::boolean AND o.task_id = a.task_id AND o.done_at_ms IS NULL
  )
  SELECT applied.*, (SELECT count(*)::int FROM answered) AS answered
    FROM applied`;

/** Seeding: a question as it is (inputToRow); one already stored keeps its place. */
export const UPSERT_INPUT = `
  INSERT INTO task_inputs (task_id, input_key, ask_seq, input_ordinal, request, request_digest, asked_at_ms, response, response_digest, answered_at_ms,
    deadline_ms, position)
  SELECT $1::text, $2::text, $3::int, coalesce(max(input_ordinal) + 1, 0), $4::jsonb, $5::text, $6::bigint, $7::jsonb, $8::text, $9::bigint, $10::bigint,
         $11::int
    FROM task_inputs WHERE task_id = $1::text
  ON CONFLICT (task_id, input_key) DO UPDATE SET ask_seq = EXCLUDED.ask_seq, request = EXCLUDED.request,
    request_digest = EXCLUDED.request_digest, asked_at_ms = EXCLUDED.asked_at_ms, response = EXCLUDED.response,
    response_digest = EXCLUDED.response_digest, answered_at_ms = EXCLUDED.answered_at_ms, deadline_ms = EXCLUDED.deadline_ms,
    position = EXCLUDED.position`;

/**
 * Up to $2 tasks an input deadline ends at $1, most overdue first: each with its question due
 * first (ask order breaking ties). Restates awaitsInput and overdueQuestion.
 */
export const OVERDUE_INPUTS = `
  SELECT task_id, input_key, deadline_ms, version FROM (
    SELECT DISTINCT ON (i.task_id) i.task_id, i.input_key, i.deadline_ms, t.version
      FROM task_inputs i JOIN tasks t ON t.task_id = i.task_id
     WHERE i.answered_at_ms IS NULL AND i.deadline_ms IS NOT NULL AND i.deadline_ms <= $1
       AND t.status = 'input_required' AND (t.expires_at_ms IS NULL OR t.expires_at_ms > $1)
     ORDER BY i.task_id, i.deadline_ms, i.ask_seq, i.input_ordinal) overdue
   ORDER BY deadline_ms, task_id LIMIT $2`;

/**
 * Ends one overdue task as one statement: the conditional write on the version read (still
 * waiting and unexpired: awaitsInput), its outbox entry closed, the audit line. Parameters: $1 task id, $2 version, $3 now, $4 the outcome (JSON), $5 its
 * digest, $6 correlation id, $7 audit detail.
 */
export const FAIL_OVERDUE = `
  WITH applied AS (
    UPDATE tasks SET status = 'failed', version = version + 1, last_updated_at_ms = $3, result = $4, result_digest = $5,
           lease_owner = NULL, lease_expires_at_ms = NULL
     WHERE task_id = $1 AND version = $2 AND status = 'input_required' AND ${unexpired(3)}
    RETURNING *
  ), closed AS (
    UPDATE task_outbox o SET done_at_ms = $3 FROM applied a WHERE o.task_id = a.task_id AND o.done_at_ms IS NULL
  ), audited AS (
    INSERT INTO task_audit ${AUDIT_COLUMNS}
    SELECT $3::bigint, 'transition', 'APPLY_TRANSITION', auth_key, task_id, $6::text, status, version, $7::text FROM applied
  )
  SELECT applied.task_id, applied.version FROM applied`;
