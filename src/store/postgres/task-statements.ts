import { LISTED_COLUMNS, TASK_COLUMNS } from '../task-columns.js';
import { appliedAsJson, AUDIT_COLUMNS, OPEN_AND_VISIBLE, unexpired } from './predicates.js';

/**
 * The statements of the records role in PostgreSQL: admission, status writes, cancellation, the
 * caller's reads, seeding, and the audit line a write leaves. A guard that restates a core rule
 * names it (see predicates.ts).
 */

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
  'text',
  'text',
] as const;
const typedPlaceholders = TASK_COLUMN_TYPES.map((type, i) => `$${i + 1}::${type}`).join(', ');

/**
 * What admission writes besides the task's columns: the concurrency key and limit read out of its
 * request (`concurrency-rules.ts`), by the schema's own functions (migration 020), which the
 * planner inlines into the statement's plan. Any other write of a request (seeding) has them
 * filled in by the migration's triggers; an UPDATE that leaves the request as it is leaves them.
 */
const REQUEST = `$${TASK_COLUMNS.indexOf('request') + 1}::jsonb`;
const ADMITTED_COLUMNS = [...TASK_COLUMNS, 'concurrency_key', 'concurrency_limit'].join(', ');
const admittedValues = `${typedPlaceholders}, tasklatch_concurrency_key(${REQUEST}), tasklatch_concurrency_limit(${REQUEST})`;

/** The parameters after the task's columns in `admitTask`: the active limit, now, the stored bound. */
const LIMIT = `$${TASK_COLUMNS.length + 1}::int`;
const NOW = `$${TASK_COLUMNS.length + 2}::bigint`;
const STORED = `$${TASK_COLUMNS.length + 3}::int`;

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
 * One page of a listing, the columns a listing shows (`ListedTask`): $1 auth key, $2 now, $3
 * limit, then optionally $4/$5 the position.
 */
function listPage(afterPosition: boolean): string {
  const after = afterPosition ? 'AND (created_at_ms, task_id) > ($4, $5)' : '';
  return `SELECT ${LISTED_COLUMNS.join(', ')} FROM tasks WHERE auth_key = $1 AND ${unexpired(2)} AND parent_task_id IS NULL ${after}
   ORDER BY created_at_ms, task_id LIMIT $3`;
}

/**
 * A status write as one statement: the conditional task UPDATE (restating decideTransition's
 * APPLY_TRANSITION: this task and auth key, still open, the expected version, unexpired) and,
 * only when it changed the row, the close of its outbox entry (a terminal status), the
 * APPLY_TRANSITION audit line. It answers with the row as written in one JSON column
 * (`appliedAsJson`). `sets` are
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
  ${appliedAsJson}`;
}

/**
 * Admission as one statement: the task row (unless its key is taken, or the caller is at a
 * bound), its outbox entry (with the task's app, which the claim filters by) and the ACCEPT_TASK
 * audit line. Parameters: the task's columns ($1–$24, `TASK_COLUMNS` order), the limit ($25,
 * null for none), now ($26), the stored bound ($27, null for none). Under a bound the caller has
 * taken the auth key's advisory lock in an earlier statement, so this statement's snapshot
 * already sees every admission that committed before it. The count guards restate
 * decideLimitedAdmission's bounds; the key's live holder is classified in TS. The stored bound
 * first reads the caller's row count (task_caller_counts, kept by triggers: every row of the
 * caller, expired ones included, so never below the bound's count) and counts the unexpired
 * tasks only when that number is not below the bound: a caller well under it costs one index
 * lookup, not a read of each of its tasks.
 *
 * `claimed`: the admission leased to its claimer in the same statement (`AdmitInput.claim`).
 * The columns are then those of the task as the claim leaves it (version 2, attempt 1, the
 * lease), the outbox entry is written as the claim leaves it (due at the lease's end, the
 * claimer's), and the claim's APPLY_TRANSITION line follows the ACCEPT_TASK line ($28 its
 * correlation id, $29 its detail). The committed state is the one an insert and then the claim's
 * UPDATE leave in one transaction, without the row version, index entries and outbox update the
 * UPDATE cost.
 *
 * It answers with the stored request alone, one row when the task was inserted: every other
 * column holds the parameter as given, which the caller has already; the request comes back as
 * jsonb keeps it (its keys in jsonb's order), as any later read of the task gives it. A row of
 * every column cost the caller more to decode than the rest of the admission's answer.
 */
function admission(claimed: boolean): string {
  const outbox = claimed
    ? `INSERT INTO task_outbox (task_id, app, created_at_ms, available_at_ms, claimed_by, attempt, lease_expires_at_ms)
    SELECT task_id, app, created_at_ms, lease_expires_at_ms, lease_owner, attempt, lease_expires_at_ms FROM inserted`
    : `INSERT INTO task_outbox (task_id, app, created_at_ms, available_at_ms)
    SELECT task_id, app, created_at_ms, created_at_ms FROM inserted`;
  const claimLine = claimed
    ? `
    UNION ALL
    SELECT last_updated_at_ms, 'transition', 'APPLY_TRANSITION', auth_key, task_id, $${TASK_COLUMNS.length + 4}::text, status, version, $${TASK_COLUMNS.length + 5}::text FROM inserted`
    : '';
  return `
  WITH inserted AS (
    INSERT INTO tasks (${ADMITTED_COLUMNS})
    SELECT ${admittedValues}
     WHERE (${LIMIT} IS NULL
        OR (SELECT count(*) FROM tasks
             WHERE auth_key = $2::text AND status IN ('working', 'input_required')
               AND (expires_at_ms IS NULL OR expires_at_ms > ${NOW})) < ${LIMIT})
       AND (${STORED} IS NULL
        OR coalesce((SELECT stored FROM task_caller_counts WHERE auth_key = $2::text), 0) < ${STORED}
        OR (SELECT count(*) FROM tasks
             WHERE auth_key = $2::text AND (expires_at_ms IS NULL OR expires_at_ms > ${NOW})) < ${STORED})
    ON CONFLICT (auth_key, idempotency_key) DO NOTHING
    RETURNING *
  ), queued AS (
    ${outbox}
  ), audited AS (
    INSERT INTO task_audit (at_ms, surface, decision, auth_key, task_id, correlation_id, status, version, detail)
    SELECT created_at_ms, 'create', 'ACCEPT_TASK', auth_key, task_id, correlation_id, NULL, NULL, NULL FROM inserted${claimLine}
  )
  SELECT inserted.request FROM inserted`;
}

/** The records role's statements, by name. */
export const taskSql = {
  /** An expired holder gives its idempotency key up (restates decideAdmission's expiry test). */
  releaseExpiredKey: `
  UPDATE tasks SET idempotency_key = NULL
   WHERE auth_key = $1 AND idempotency_key = $2 AND expires_at_ms <= $3`,

  /** Admission as one statement (see `admission`). */
  admitTask: admission(false),

  /** Admission and its claim as one statement (see `admission`): $27 the claim's correlation id, $28 its audit detail. */
  admitClaimedTask: admission(true),

  selectByKey: `SELECT * FROM tasks WHERE auth_key = $1 AND idempotency_key = $2`,

  countActive: `
  SELECT count(*)::int AS n FROM tasks
   WHERE auth_key = $1 AND status IN ('working', 'input_required') AND ${unexpired(2)}`,

  countStored: `SELECT count(*)::int AS n FROM tasks WHERE auth_key = $1 AND ${unexpired(2)}`,

  /** Classification read only: its row is handed to the core rules, or to its own auth key. */
  selectById: `SELECT * FROM tasks WHERE task_id = $1`,

  /** Which of the ids ($1, an array) are the caller's ($2) unexpired ($3) tasks: one statement for all. */
  selectVisibleIds: `SELECT task_id FROM tasks WHERE task_id = ANY($1::text[]) AND auth_key = $2 AND ${unexpired(3)}`,

  /** Why a task is out of the caller's reach, without reading its payload (no timing difference by size). */
  selectGuardById: `SELECT auth_key, status, version, expires_at_ms FROM tasks WHERE task_id = $1`,

  /** The first page of a listing: $1 auth key, $2 now, $3 limit. */
  listFirst: listPage(false),

  /** A later page of a listing: $1 auth key, $2 now, $3 limit, $4/$5 the position after which it starts. */
  listAfter: listPage(true),

  /**
   * Cancellation as one statement: latches `cancelled` and the intent (restates decideCancel's
   * CANCEL_TASK), closes the outbox entry and writes the CANCEL_TASK line; all only when
   * the UPDATE changed the row. $1 task id, $2 auth key, $3 now, $4 correlation id.
   */
  applyCancel: `
  WITH applied AS (
    UPDATE tasks SET status = 'cancelled', cancel_requested = true, version = version + 1,
           last_updated_at_ms = $3, lease_owner = NULL, lease_expires_at_ms = NULL,
           -- a wait's or a park's message does not outlive the task
           status_message = NULL, parked_at_ms = NULL, parks = 0
     WHERE ${OPEN_AND_VISIBLE} AND ${unexpired(3)}
    RETURNING *
  )${closeOutboxOf('$3')}, audited AS (
    INSERT INTO task_audit ${AUDIT_COLUMNS}
    SELECT $3::bigint, 'read', 'CANCEL_TASK', auth_key, task_id, $4::text, status, version, $5::text FROM applied
  )
  ${appliedAsJson}`,

  /** One audit line (`auditToRow`), with a write or after a refused one. */
  insertAudit: `INSERT INTO task_audit ${AUDIT_COLUMNS} VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,

  /**
   * Any number of audit lines in one INSERT, one text for every batch size (so it is prepared once
   * per connection): nine arrays, one per column, element i of each is line i (`auditColumns`).
   */
  insertAuditLines: `
  INSERT INTO task_audit ${AUDIT_COLUMNS}
  SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::int[], $9::text[])`,

  /** Seeding replaces a record verbatim; the key it carries moves to it from any other record. */
  releaseKeyForSeed: `
  UPDATE tasks SET idempotency_key = NULL
   WHERE auth_key = $1 AND idempotency_key = $2 AND task_id <> $3`,

  upsertTask: `
  INSERT INTO tasks (${TASK_COLUMNS.join(', ')}) VALUES (${typedPlaceholders})
  ON CONFLICT (task_id) DO UPDATE SET ${TASK_COLUMNS.filter((c) => c !== 'task_id')
    .map((c) => `${c} = EXCLUDED.${c}`)
    .join(', ')}`,

  /** The secret every process on the schema shares (cursor signing), written by the migrations. */
  selectSecret: `SELECT value FROM tasklatch_meta WHERE key = 'secret'`,
} as const;
