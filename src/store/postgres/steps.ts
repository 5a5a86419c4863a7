import type pg from 'pg';
import { TasklatchError } from '../../core/errors.js';
import { decideStepRecord, stepNameSpace, type StepRecord } from '../../core/step-rules.js';
import { checkSuspension, prepareStepWrite } from '../../core/step-value.js';
import { classifyMiss } from '../../core/visibility.js';
import type { Millis, TaskRecord } from '../../core/types.js';
import { auditLine } from '../audit-line.js';
import { stepDetail } from '../step-detail.js';
import { journalSizeOf, journalSizeSql, preparedToRow, rowToStep, STEP_COLUMNS, stepToRow, type StepRow } from '../step-row.js';
import type { RecordStepInput, RecordStepOutcome, StepsOutcome, TaskRef } from '../types.js';
import { appliedTaskRow, auditToRow, isInt4, rowToRecord, type TaskRow } from './row.js';
import { ownerIs } from './predicates.js';
import { inShortTransaction } from './transactions.js';
import { eventSql } from './events.js';
import { callWith, prepared } from './prepared.js';
import { readById } from './reads.js';
import type { WriteBatcher } from './write-batcher.js';

/**
 * The step operations of the PostgreSQL store (`task_steps`). Recording a step is one
 * transaction: the task row locked first (as every writer of a task's rows locks it, the
 * sweeper's cascade included), then the journal rows the order rule reads (both with BEGIN, in
 * one round trip), then the writes with COMMIT in one round trip. A fresh step that does not
 * suspend goes first as one conditional statement in the next write batch (`freshStep`): the
 * steps of concurrent runs share a transaction and a round trip, and only a write that statement
 * leaves undone takes the transaction, which reads and decides.
 */

const STEP_TYPES = ['text', 'int', 'text', 'text', 'text', 'int', 'text', 'text', 'int', 'bigint', 'boolean', 'bigint', 'bigint'] as const;
const STEP_VALUES = STEP_TYPES.map((type, i) => `$${i + 1}::${type}`).join(', ');
const n = STEP_COLUMNS.length;

/** The statements of the step role in PostgreSQL, by camelCase name as in the other roles' maps. */
export const stepSql = {
  /** The task, locked until commit; sent with BEGIN. */
  lockTask: `SELECT * FROM tasks WHERE task_id = $1 FOR UPDATE`,

  /**
   * The rows the order rule reads: the one at the position and the one with the name. A statement
   * of its own after the lock, so that its snapshot sees every step committed before the lock was
   * granted ($1 task id, $2 position, $3 name).
   */
  selectAtOrNamed: `SELECT * FROM task_steps WHERE task_id = $1 AND (position = $2 OR name = $3)`,

  /** The rest of the journal beside the row at the position, read with it: its rows and their values' bytes ($1 task id, $2 position). */
  journalSize: journalSizeSql('$1', '$2'),

  /**
   * An applied step as one statement, under the task's lock: the journal row at its position (a
   * replaced row keeps when it started), with `$${n + 2}` the suspension: version + 1, a first
   * attempt again, no lease, its status message, the open outbox entry due at the wake time (not
   * before). The audit line goes with it. Parameters: the row (`STEP_COLUMNS` order), the fence's
   * version, suspend, the status message, the wake time, the audit line (`auditToRow`).
   */
  applyStep: `
    WITH step AS (
      INSERT INTO task_steps (${STEP_COLUMNS.join(', ')}) VALUES (${STEP_VALUES})
      ON CONFLICT (task_id, position) DO UPDATE SET
        ${STEP_COLUMNS.filter((c) => c !== 'task_id' && c !== 'position' && c !== 'started_at_ms')
          .map((c) => `${c} = excluded.${c}`)
          .join(', ')}
    ), suspended AS (
      UPDATE tasks SET version = version + 1, last_updated_at_ms = $${n}::bigint, status_message = $${n + 3}::text,
             attempt = 0, lease_owner = NULL, lease_expires_at_ms = NULL, parked_at_ms = NULL, parks = 0
       WHERE $${n + 2}::boolean AND task_id = $1::text AND version = $${n + 1}::int
      RETURNING *
    ), unparked AS (
      -- A run that records a step got past the point its task parked at (park-rules.ts).
      UPDATE tasks SET parked_at_ms = NULL, parks = 0 WHERE NOT $${n + 2}::boolean AND task_id = $1::text AND parked_at_ms IS NOT NULL
    ), moved AS (
      UPDATE task_outbox o SET available_at_ms = $${n + 4}::bigint, claimed_by = NULL, lease_expires_at_ms = NULL
        FROM suspended s WHERE o.task_id = s.task_id AND o.done_at_ms IS NULL
    ), audited AS (
      INSERT INTO task_audit (at_ms, surface, decision, auth_key, task_id, correlation_id, status, version, detail)
      VALUES (${Array.from({ length: 9 }, (_, i) => `$${n + 5 + i}`).join(', ')})
    )
    SELECT * FROM suspended`,

  /**
   * A fresh step as one conditional statement: inserted only when the rules certainly apply it,
   * i.e. the task is the caller's, unexpired, `working`, not parked and held by the fence; no
   * journal row sits at the position or carries the name (in its namespace); the journal's bounds
   * hold. The task row is locked first (as every writer of its rows locks it). Anything else
   * inserts nothing, and the transaction of `recordStepIn` decides. Parameters: the row
   * (`STEP_COLUMNS` order), the fence's version, auth key and owner, now, the journal's bounds
   * (steps, bytes; NULL: none), the audit line (`auditToRow`). Returns the task when inserted, as
   * JSON (`task`, as predicates.ts `appliedAsJson` says why).
   */
  freshStep: `
    WITH task AS (
      SELECT * FROM tasks
       WHERE task_id = $1::text AND ${ownerIs(`$${n + 2}::text`)} AND version = $${n + 1}::int AND lease_owner = $${n + 3}::text
         AND status = 'working' AND parked_at_ms IS NULL AND (expires_at_ms IS NULL OR expires_at_ms > $${n + 4}::bigint)
       FOR UPDATE
    ), journal AS (
      SELECT count(*) AS steps, coalesce(sum(value_bytes), 0) AS bytes FROM task_steps WHERE task_id = $1::text AND position <> $2::int
    ), step AS (
      INSERT INTO task_steps (${STEP_COLUMNS.join(', ')})
      SELECT ${STEP_VALUES} FROM task, journal
       WHERE NOT EXISTS (
               SELECT 1 FROM task_steps s WHERE s.task_id = $1::text
                  AND (s.position = $2::int OR (s.name = $3::text AND (s.kind = 'patch') = ($4::text = 'patch'))))
         AND ($${n + 5}::bigint IS NULL OR journal.steps + 1 <= $${n + 5}::bigint)
         AND ($9::int = 0 OR $${n + 6}::bigint IS NULL OR journal.bytes + $9::int <= $${n + 6}::bigint)
      ON CONFLICT (task_id, position) DO NOTHING
      RETURNING task_id
    ), audited AS (
      INSERT INTO task_audit (at_ms, surface, decision, auth_key, task_id, correlation_id, status, version, detail)
      SELECT ${Array.from({ length: 9 }, (_, i) => `$${n + 7 + i}`).join(', ')} FROM step
    )
    SELECT to_json(task) AS task FROM task JOIN step ON step.task_id = task.task_id`,

  insertAudit: `INSERT INTO task_audit (at_ms, surface, decision, auth_key, task_id, correlation_id, status, version, detail)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,

  /** The caller's unexpired task's journal: no row when the task is out of reach, one row of NULLs when it has none. */
  selectVisibleSteps: `
    SELECT s.* FROM tasks t LEFT JOIN task_steps s ON s.task_id = t.task_id
     WHERE t.task_id = $1 AND ${ownerIs('$2', 't')} AND (t.expires_at_ms IS NULL OR t.expires_at_ms > $3)
     ORDER BY s.position`,

  selectJournal: `SELECT * FROM task_steps WHERE task_id = $1 ORDER BY position`,

  /** Restates the sleeping-tasks count: a wait still to come on a working, unexpired task ($1 now). */
  countSleeping: `
    SELECT count(DISTINCT s.task_id)::int AS n FROM task_steps s JOIN tasks t ON t.task_id = s.task_id
     WHERE s.status IN ('sleeping', 'retrying') AND s.wake_at_ms > $1
       AND t.status = 'working' AND (t.expires_at_ms IS NULL OR t.expires_at_ms > $1)`,

  /** Seeding: a row as it is replaces the task's rows at its position and with its name (in its namespace, `stepNameSpace`). */
  deleteNamed: `DELETE FROM task_steps WHERE task_id = $1 AND name = $2 AND position <> $3 AND (kind = 'patch') = ($4::text = 'patch')`,
  seedStep: `
    INSERT INTO task_steps (${STEP_COLUMNS.join(', ')}) VALUES (${STEP_VALUES})
    ON CONFLICT (task_id, position) DO UPDATE SET
      ${STEP_COLUMNS.filter((c) => c !== 'task_id' && c !== 'position')
        .map((c) => `${c} = excluded.${c}`)
        .join(', ')}`,
} as const;

/** `suspended`: the write suspended the task (its change is to be notified). */
export async function recordStepIn(pool: pg.Pool, batcher: WriteBatcher, input: RecordStepInput): Promise<RecordStepOutcome & { suspended: boolean }> {
  const step = prepareStepWrite(input.step);
  checkSuspension(input.suspend);
  const { fence, now } = input;
  const fresh = await freshStepIn(pool, batcher, input, step);
  if (fresh !== null) return fresh;
  return inShortTransaction(pool, async (tx) => {
    // The lock and the reads of the journal go with BEGIN in one round trip, as statements of
    // their own: each read's snapshot is taken once the lock is granted.
    const [locked, journal, size] = await tx.queryAll([
      { text: stepSql.lockTask, params: [fence.taskId] },
      { text: stepSql.selectAtOrNamed, params: [fence.taskId, step.position, step.name] },
      { text: stepSql.journalSize, params: [fence.taskId, step.position] },
    ]);
    const taskRow = (locked?.rows as TaskRow[] | undefined)?.[0];
    const task = taskRow === undefined ? null : rowToRecord(taskRow);
    const read = task === null ? [] : (journal?.rows as StepRow[]).map(rowToStep);
    const decision = decideStepRecord({
      record: task,
      auth: fence.authKey,
      fence,
      now,
      atPosition: read.find((r) => r.position === step.position),
      byName: read.find((r) => r.name === step.name && stepNameSpace(r.kind) === stepNameSpace(step.kind)),
      step,
      valueBytes: step.valueBytes,
      maxStepBytes: input.maxStepBytes,
      journal: journalSizeOf(size?.rows[0] as { steps: string; bytes: string } | undefined, input),
    });
    const visible = task !== null && task.authKey === fence.authKey ? task : null;
    const line = (record: Pick<TaskRecord, 'status' | 'version'> | null) =>
      auditToRow(
        auditLine({
          at: now,
          surface: 'step',
          decision,
          authKey: fence.authKey,
          taskId: fence.taskId,
          correlationId: input.correlationId,
          record,
          detail: stepDetail(step),
        }),
      );
    if (decision !== 'APPLY_STEP' || visible === null) {
      await tx.commitWith([{ text: stepSql.insertAudit, params: line(visible) }]);
      return { decision, record: visible, suspended: false };
    }
    const suspend = input.suspend ?? null;
    // Under the lock the rules just judged, the write leaves exactly this.
    const after = suspend === null ? visible : { status: visible.status, version: visible.version + 1 };
    const params = [
      ...rowParams(preparedToRow(fence.taskId, step, now)),
      fence.version,
      suspend !== null,
      suspend?.statusMessage ?? null,
      suspend?.wakeAt ?? null,
      ...line(after),
    ];
    // A wait that suspends with an event of its type already pending is due at once.
    const wake = suspend !== null && input.eventType != null ? [{ text: eventSql.wakeIfPending, params: [fence.taskId, now, input.eventType] }] : [];
    const [applied, woken] = await tx.commitWith([{ text: stepSql.applyStep, params }, ...wake]);
    if (suspend === null) return { decision, record: visible, suspended: false };
    const row = (applied?.rows as TaskRow[] | undefined)?.[0];
    if (row === undefined) throw new TasklatchError('INTERNAL', `task ${JSON.stringify(fence.taskId)} changed under the lock of its step`);
    // The wait found an event of its type pending: due now.
    const dueNow = (woken?.rowCount ?? 0) > 0;
    return Object.assign({ decision, record: rowToRecord(row), suspended: true }, dueNow ? { dueNow } : {});
  });
}

/** Prepared once per connection that executes it (see prepared.ts). */
const preparedFreshStep = prepared(stepSql.freshStep);

/**
 * A step that does not suspend, as one conditional statement in the next write batch
 * (`stepSql.freshStep`); null when it may not go that way (a suspension, a value over its
 * bound, a fence version no int4 holds, a value without an exact literal) or when the statement inserted nothing: the
 * transaction of `recordStepIn` then reads and decides, its audit line included.
 */
async function freshStepIn(
  pool: pg.Pool,
  batcher: WriteBatcher,
  input: RecordStepInput,
  step: ReturnType<typeof prepareStepWrite>,
): Promise<(RecordStepOutcome & { suspended: boolean }) | null> {
  const { fence, now } = input;
  // A version no int4 column holds matches no row: the transaction classifies it (a stale fence).
  if (input.suspend != null || input.eventType != null || step.valueBytes > input.maxStepBytes || !isInt4(fence.version)) return null;
  // Applied, the write leaves the task as the fence holds it: working, at the fence's version.
  const line = auditToRow(
    auditLine({
      at: now,
      surface: 'step',
      decision: 'APPLY_STEP',
      authKey: fence.authKey,
      taskId: fence.taskId,
      correlationId: input.correlationId,
      record: { status: 'working', version: fence.version },
      detail: stepDetail(step),
    }),
  );
  const params = [
    ...rowParams(preparedToRow(fence.taskId, step, now)),
    fence.version,
    fence.authKey,
    fence.owner,
    now,
    input.maxJournalSteps ?? null,
    input.maxJournalBytes ?? null,
    ...line,
  ];
  const call = callWith(preparedFreshStep, params);
  if (call === null) return null;
  const [result] = await batcher.run({ statements: [call], locks: [], orderKey: `1:${fence.taskId}` });
  const row = appliedTaskRow(result);
  return row === undefined ? null : { decision: 'APPLY_STEP', record: rowToRecord(row), suspended: false };
}

function rowParams(row: StepRow): unknown[] {
  return STEP_COLUMNS.map((c) => row[c]);
}

export async function stepsIn(pool: pg.Pool, { authKey, taskId, now }: TaskRef & { now: Millis }): Promise<StepsOutcome> {
  const found = await pool.query<StepRow | { [K in keyof StepRow]: null }>(stepSql.selectVisibleSteps, [taskId, authKey, now]);
  if (found.rows.length > 0) return { decision: 'FOUND', steps: found.rows.filter((r): r is StepRow => r.task_id !== null).map(rowToStep) };
  // Nothing visible; a second read by id alone only says why.
  const miss = classifyMiss(await readById(pool, taskId), authKey, now);
  if (miss !== null) return { decision: miss, steps: null };
  // Became visible between the two reads (seeded meanwhile).
  const read = await pool.query<StepRow>(stepSql.selectJournal, [taskId]);
  return { decision: 'FOUND', steps: read.rows.map(rowToStep) };
}

/** The operator's read: a task's journal whatever its auth key. */
export async function journalIn(pool: pg.Pool, taskId: string): Promise<StepRecord[]> {
  return (await pool.query<StepRow>(stepSql.selectJournal, [taskId])).rows.map(rowToStep);
}

export async function sleepingIn(pool: pg.Pool, now: Millis): Promise<number> {
  return (await pool.query<{ n: number }>(stepSql.countSleeping, [now])).rows[0]?.n ?? 0;
}

export async function seedStepsIn(client: pg.PoolClient, steps: readonly StepRecord[]): Promise<void> {
  for (const step of steps) {
    const row = stepToRow(step);
    await client.query(stepSql.deleteNamed, [row.task_id, row.name, row.position, row.kind]);
    await client.query(stepSql.seedStep, rowParams(row));
  }
}
