import type { SqliteDatabase, SqliteStatement } from './driver.js';
import { TasklatchError } from '../../core/errors.js';
import { decideStepRecord, stepNameSpace, type StepRecord } from '../../core/step-rules.js';
import { checkSuspension, prepareStepWrite } from '../../core/step-value.js';
import { classifyMiss } from '../../core/visibility.js';
import type { Millis } from '../../core/types.js';
import { auditLine } from '../audit-line.js';
import { stepDetail } from '../step-detail.js';
import { journalSizeOf, journalSizeSql, preparedToRow, rowToStep, STEP_COLUMNS, stepToRow, type StepRow } from '../step-row.js';
import type { RecordStepInput, RecordStepOutcome, StepsOutcome, TaskRef } from '../types.js';
import { auditToRow, rowToRecord, type TaskRow } from './row.js';
import type { Statements } from './statements.js';
import { readById } from './reads.js';

/**
 * The step operations of the SQLite store (`task_steps`). `recordStepIn` runs inside the
 * caller's `BEGIN IMMEDIATE` transaction: the write lock is held from the first read, so the
 * task and journal rows the rules judge are the ones the writes change.
 */

const VALUES = STEP_COLUMNS.map((c) => `@${c}`).join(', ');
const set = (columns: readonly string[]) => columns.map((c) => `${c} = excluded.${c}`).join(', ');

/** The statements of the step role in SQLite, by camelCase name as in the other roles' maps. */
const stepSql = {
  /** The rows the order rule reads: the one at the position and the one with the name. */
  selectAtOrNamed: 'SELECT * FROM task_steps WHERE task_id = @task_id AND (position = @position OR name = @name)',
  /** A write at a position: a replaced row keeps when it started. */
  upsert: `INSERT INTO task_steps (${STEP_COLUMNS.join(', ')}) VALUES (${VALUES})
     ON CONFLICT (task_id, position) DO UPDATE SET ${set(STEP_COLUMNS.filter((c) => c !== 'task_id' && c !== 'position' && c !== 'started_at_ms'))}`,
  /**
   * The suspension, on the fence the rules just judged under the write lock (restates holdsFence
   * on a working task): version + 1, a first attempt again, no lease, its status message.
   */
  suspend: `UPDATE tasks SET version = version + 1, last_updated_at_ms = @now, status_message = @status_message,
       attempt = 0, lease_owner = NULL, lease_expires_at_ms = NULL
     WHERE task_id = @task_id AND auth_key = @auth_key AND version = @version AND lease_owner = @owner AND status = 'working'
     RETURNING *`,
  selectJournal: 'SELECT * FROM task_steps WHERE task_id = ? ORDER BY position',
  /** The rest of the journal beside the row at the position: its rows and their values' bytes. */
  journalSize: journalSizeSql('@task_id', '@position'),
  /** Restates the sleeping-tasks count: a wait still to come on a working, unexpired task. */
  countSleeping: `SELECT count(DISTINCT s.task_id) AS n FROM task_steps s JOIN tasks t ON t.task_id = s.task_id
     WHERE s.status IN ('sleeping', 'retrying') AND s.wake_at_ms > @now
       AND t.status = 'working' AND (t.expires_at_ms IS NULL OR t.expires_at_ms > @now)`,
  /** Seeding: a row as it is replaces the task's rows at its position and with its name (in its namespace, `stepNameSpace`). */
  deleteNamed: `DELETE FROM task_steps WHERE task_id = @task_id AND name = @name AND position <> @position AND (kind = 'patch') = (@kind = 'patch')`,
  seed: `INSERT INTO task_steps (${STEP_COLUMNS.join(', ')}) VALUES (${VALUES})
     ON CONFLICT (task_id, position) DO UPDATE SET ${set(STEP_COLUMNS.filter((c) => c !== 'task_id' && c !== 'position'))}`,
} as const;

export type StepStatements = { readonly [K in keyof typeof stepSql]: SqliteStatement };

export function prepareStepStatements(db: SqliteDatabase): StepStatements {
  return Object.fromEntries(Object.entries(stepSql).map(([name, text]) => [name, db.prepare(text)] as const)) as StepStatements;
}

export function recordStepIn(sql: Statements, steps: StepStatements, input: RecordStepInput): RecordStepOutcome {
  const step = prepareStepWrite(input.step);
  checkSuspension(input.suspend);
  const { fence, now } = input;
  const task = readById(sql, fence.taskId);
  const rows = (steps.selectAtOrNamed.all({ task_id: fence.taskId, position: step.position, name: step.name }) as StepRow[]).map(rowToStep);
  const decision = decideStepRecord({
    record: task,
    auth: fence.authKey,
    fence,
    now,
    atPosition: rows.find((r) => r.position === step.position),
    byName: rows.find((r) => r.name === step.name && stepNameSpace(r.kind) === stepNameSpace(step.kind)),
    step,
    valueBytes: step.valueBytes,
    maxStepBytes: input.maxStepBytes,
    journal: journalSizeOf(steps.journalSize.get({ task_id: fence.taskId, position: step.position }) as { steps: number; bytes: number }, input),
  });
  let record = task !== null && task.authKey === fence.authKey ? task : null;
  if (decision === 'APPLY_STEP') {
    steps.upsert.run(sqliteRow(preparedToRow(fence.taskId, step, now)));
    if (input.suspend) {
      const params = {
        task_id: fence.taskId,
        auth_key: fence.authKey,
        version: fence.version,
        owner: fence.owner,
        now,
        status_message: input.suspend.statusMessage,
      };
      const row = steps.suspend.get(params) as TaskRow | undefined;
      if (row === undefined) throw new TasklatchError('INTERNAL', `task ${JSON.stringify(fence.taskId)} changed under the write lock of its step`);
      record = rowToRecord(row);
      // Due at the wake time, not before: no claim walk offers it until then.
      sql.moveOutboxEntry.run({ task_id: fence.taskId, available_at_ms: input.suspend.wakeAt, lease_expires_at_ms: null });
    }
  }
  const line = auditLine({
    at: now,
    surface: 'step',
    decision,
    authKey: fence.authKey,
    taskId: fence.taskId,
    correlationId: input.correlationId,
    record,
    detail: stepDetail(step),
  });
  sql.insertAudit.run(auditToRow(line));
  return { decision, record };
}

export function stepsIn(sql: Statements, steps: StepStatements, { authKey, taskId, now }: TaskRef & { now: Millis }): StepsOutcome {
  const miss = classifyMiss(readById(sql, taskId), authKey, now);
  if (miss !== null) return { decision: miss, steps: null };
  return { decision: 'FOUND', steps: (steps.selectJournal.all(taskId) as StepRow[]).map(rowToStep) };
}

/** The operator's read: a task's journal whatever its auth key. */
export function journalIn(steps: StepStatements, taskId: string): StepRecord[] {
  return (steps.selectJournal.all(taskId) as StepRow[]).map(rowToStep);
}

export function sleepingIn(steps: StepStatements, now: Millis): number {
  return (steps.countSleeping.get({ now }) as { n: number }).n;
}

export function seedStepsIn(steps: StepStatements, rows: readonly StepRecord[]): void {
  for (const step of rows) {
    const row = stepToRow(step);
    steps.deleteNamed.run({ task_id: row.task_id, name: row.name, position: row.position, kind: row.kind });
    steps.seed.run(sqliteRow(row));
  }
}

/** A row's parameters as SQLite binds them: the flag as 0 or 1 (the driver binds no booleans). */
function sqliteRow(row: StepRow): StepRow {
  return Object.assign({}, row, { concurrent: row.concurrent ? 1 : 0 });
}
