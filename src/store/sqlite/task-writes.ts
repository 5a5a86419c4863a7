import { decideLimitedAdmission } from '../../core/create-rules.js';
import type { Decision } from '../../core/decisions.js';
import { resultDigest } from '../../core/digest.js';
import { TasklatchError } from '../../core/errors.js';
import { decideCancel } from '../../core/read-rules.js';
import { decideTransition } from '../../core/transition-rules.js';
import { isTaskStatus, isTerminal, type Millis, type TaskRecord } from '../../core/types.js';
import { admissionRecord } from '../admission-record.js';
import { auditLine, cancelDetail } from '../audit-line.js';
import { TASK_COLUMNS } from '../task-columns.js';
import type { AdmitInput, AdmitOutcome, AuditEntry, CancelInput, CancelOutcome, TransitionInput, TransitionOutcome } from '../types.js';
import { readById, readGuard } from './reads.js';
import { auditToRow, recordToRow, rowToRecord, toJson, type TaskRow } from './row.js';
import type { Statements } from './statements.js';

/**
 * The writing operations of the records role in SQLite (admission, status writes, cancellation,
 * seeding), each run by the caller inside one `BEGIN IMMEDIATE` transaction: the write lock is held from the first read, so what a function reads
 * is what its conditional write finds. The write goes first; only when it changes nothing is the
 * stored row read and classified by the core.
 */

export function admitIn(sql: Statements, input: AdmitInput): AdmitOutcome {
  const key = input.idempotencyKey;
  if (key !== null) sql.releaseExpiredKey.run({ auth_key: input.authKey, idempotency_key: key, now: input.now });
  // The insert goes first, under the bounds when there are any; only one that changed nothing
  // reads and classifies. The immediate transaction already serializes admissions, so what the
  // insert counted is what the classification counts.
  const row = recordToRow(admissionRecord(input));
  // Positional: binding 23 named parameters costs the driver a lookup each.
  const values = TASK_COLUMNS.map((column) => row[column]);
  const inserted =
    input.maxActive != null || input.maxStored != null
      ? sql.insertTaskBounded.run(
          ...values,
          input.authKey,
          input.now,
          input.maxActive ?? null,
          input.maxActive ?? null,
          input.maxStored ?? null,
          input.maxStored ?? null,
        )
      : sql.insertTask.run(...values);
  if (inserted.changes === 1) {
    sql.insertOutbox.run({ task_id: row.task_id, now: input.now });
    audit(sql, input, 'create', 'ACCEPT_TASK', row.task_id, null);
    // The record as the row holds it (its request read back from the stored JSON).
    return { decision: 'ACCEPT_TASK', record: rowToRecord(row) };
  }
  // A bound, or the key's live holder (only the (auth_key, idempotency_key) conflict is absorbed).
  const activeCount = input.maxActive == null ? 0 : (sql.countActive.get({ auth_key: input.authKey, now: input.now }) as { n: number }).n;
  const storedCount = input.maxStored == null ? 0 : (sql.countStored.get({ auth_key: input.authKey, now: input.now }) as { n: number }).n;
  const outcome = classifyAdmission(sql, input, activeCount, storedCount);
  if (outcome === null) throw new TasklatchError('INTERNAL', `insert of task ${input.taskId} was refused with no bound reached and no live holder of its key`);
  return outcome;
}

/**
 * What `decideLimitedAdmission` says of the key's holder and `activeCount` (a replay is answered
 * before the limit is looked at), audited; null when the answer is to insert the task.
 */
function classifyAdmission(sql: Statements, input: AdmitInput, activeCount: number, storedCount: number): AdmitOutcome | null {
  const priorRow = input.idempotencyKey === null ? undefined : (sql.selectByKey.get(input.authKey, input.idempotencyKey) as TaskRow | undefined);
  const prior = priorRow === undefined ? null : rowToRecord(priorRow);
  const decision = decideLimitedAdmission(Object.assign({}, input, { auth: input.authKey, prior, activeCount, storedCount }));
  if (decision === 'ACCEPT_TASK') return null;
  if (decision === 'BLOCK_TASK_LIMIT' || decision === 'BLOCK_STORED_LIMIT') {
    audit(sql, input, 'create', decision, null, null);
    return { decision, record: null };
  }
  if (prior === null) throw new TasklatchError('INTERNAL', `admission of task ${input.taskId} was classified ${decision} without a holder`);
  audit(sql, input, 'create', decision, prior.taskId, prior);
  return decision === 'REPLAY_TASK' ? { decision, record: prior } : { decision, record: null };
}

export function transitionIn(sql: Statements, input: TransitionInput): TransitionOutcome {
  const { write } = input;
  let applied: TaskRow | undefined;
  // Only a well-formed write reaches SQL: SQLite would coerce a text '3' to match version 3,
  // where the rules compare strictly. Anything else goes straight to classification.
  if (isTaskStatus(write.status) && Number.isSafeInteger(write.expectedVersion)) {
    const terminal = isTerminal(write.status);
    const result = write.result ?? null;
    applied = sql.applyTransition.get({
      task_id: input.taskId,
      auth_key: input.authKey,
      expected_version: write.expectedVersion,
      now: input.now,
      status: write.status,
      set_message: write.statusMessage === undefined ? 0 : 1,
      status_message: write.statusMessage ?? null,
      terminal: terminal ? 1 : 0,
      result: terminal ? toJson(result) : null,
      result_digest: terminal && result !== null ? resultDigest(result) : null,
    }) as TaskRow | undefined;
  }
  if (applied !== undefined) {
    const record = rowToRecord(applied);
    // In the same transaction: a committed terminal status never leaves its task dispatchable.
    if (isTerminal(record.status)) sql.closeDispatch.run({ task_id: input.taskId, now: input.now });
    audit(sql, input, 'transition', 'APPLY_TRANSITION', input.taskId, record);
    return { decision: 'APPLY_TRANSITION', record };
  }
  const stored = readById(sql, input.taskId);
  const decision = decideTransition({ task: stored, auth: input.authKey, write, now: input.now });
  if (decision === 'APPLY_TRANSITION') {
    throw new TasklatchError('INTERNAL', `conditional write on task ${input.taskId} changed no row, yet the rules apply it`);
  }
  const visible = stored !== null && stored.authKey === input.authKey ? stored : null;
  audit(sql, input, 'transition', decision, input.taskId, visible);
  return { decision, record: visible };
}

export function cancelIn(sql: Statements, input: CancelInput): CancelOutcome {
  const detail = cancelDetail(input);
  const { authKey, taskId, now } = input;
  const row = sql.applyCancel.get({ task_id: taskId, auth_key: authKey, now }) as TaskRow | undefined;
  if (row !== undefined) {
    const record = rowToRecord(row);
    sql.closeDispatch.run({ task_id: taskId, now });
    audit(sql, input, 'read', 'CANCEL_TASK', taskId, record, detail);
    return { decision: 'CANCEL_TASK', record };
  }
  const decision = decideCancel(readGuard(sql, taskId), authKey, now);
  if (decision === 'CANCEL_TASK') throw new TasklatchError('INTERNAL', `cancel of live task ${taskId} changed no row`);
  // Only the caller's own finished task is read in full, for the answer.
  const stored = decision === 'ALREADY_TERMINAL' ? readById(sql, taskId) : null;
  if (decision === 'ALREADY_TERMINAL' && stored !== null) {
    audit(sql, input, 'read', decision, taskId, stored, detail);
    return { decision, record: stored };
  }
  const miss = decision === 'ALREADY_TERMINAL' ? 'NOT_FOUND' : decision;
  audit(sql, input, 'read', miss, taskId, null, detail);
  return { decision: miss, record: null };
}

/**
 * Seeding: each record as it is, replacing a stored one of the same id (an upsert, so its outbox
 * entries stay); the key it carries moves to it from any other record. Inside the caller's
 * write transaction.
 */
export function seedTasksIn(sql: Statements, records: readonly TaskRecord[]): void {
  for (const record of records) {
    const row = recordToRow(record);
    if (row.idempotency_key !== null) sql.releaseKeyForSeed.run(row);
    sql.upsertTask.run(row);
  }
}

/** One audit line in the write's own transaction. */
function audit(
  sql: Statements,
  input: { now: Millis; authKey: string; correlationId: string },
  surface: AuditEntry['surface'],
  decision: Decision,
  taskId: string | null,
  record: TaskRecord | null,
  detail: string | null = null,
): void {
  sql.insertAudit.run(
    auditToRow(auditLine({ at: input.now, surface, decision, authKey: input.authKey, taskId, correlationId: input.correlationId, record, detail })),
  );
}
