import type { SqliteDatabase } from './driver.js';
import type { Decision } from '../../core/decisions.js';
import { jcsSha256, resultDigest } from '../../core/digest.js';
import { TasklatchError } from '../../core/errors.js';
import { answerMiss, deadlineDetail, deadlineOutcome, decideAnswer, decideAsk, outstanding, type StoredInput } from '../../core/input-rules.js';
import { checkJournalPosition } from '../../core/step-value.js';
import { classifyMiss } from '../../core/visibility.js';
import type { AnswerDecision } from '../../core/decisions.js';
import type { Millis, TaskRecord } from '../../core/types.js';
import { auditLine } from '../audit-line.js';
import type { AnswerInput, AnswerOutcome, AskInput, AskOutcome, InputsOutcome, OverdueOutcome, TaskRef } from '../types.js';
import { readById } from './reads.js';
import { auditToRow, inputToRow, rowToInput, rowToRecord, toJson, type InputRow, type TaskRow } from './row.js';
import type { Statements } from './statements.js';

/**
 * The input operations of the SQLite store. Ask and answer run inside the caller's `BEGIN
 * IMMEDIATE` transaction: the write lock is held from the first read, so the questions an
 * answer reads are the ones its writes find, and no other process answers in between.
 */

export function askIn(db: SqliteDatabase, sql: Statements, input: AskInput): AskOutcome {
  const { fence, now } = input;
  if (input.position !== undefined) checkJournalPosition(input.position);
  const keys = input.questions.map((q) => q.key);
  // A key twice in one ask, or a version SQLite would coerce, cannot apply: straight to the rules.
  const applied = new Set(keys).size === keys.length && Number.isSafeInteger(fence.version) ? applyAsk(db, sql, input, keys) : null;
  if (applied !== null) {
    audit(sql, input.now, fence, input.correlationId, 'APPLY_ASK', applied, `ask ${keys.join(',')}`);
    return { decision: 'APPLY_ASK', record: applied };
  }
  const task = readById(sql, fence.taskId);
  const askedKeys = new Set((sql.selectInputKeys.all(fence.taskId) as { input_key: string }[]).map((r) => r.input_key));
  const decision = decideAsk({ task, fence, keys, askedKeys, now });
  if (decision === 'APPLY_ASK') throw new TasklatchError('INTERNAL', `ask on task ${JSON.stringify(fence.taskId)} changed no row, yet the rules apply it`);
  const visible = task !== null && task.authKey === fence.authKey ? task : null;
  audit(sql, now, fence, input.correlationId, decision, visible);
  return { decision, record: visible };
}

/**
 * The task UPDATE and the question inserts, in a savepoint of their own: should an insert meet
 * a key the guard did not see, both are undone and the caller classifies (BLOCK_INPUT_KEY_REUSED)
 * instead of failing. Null when nothing was written.
 */
function applyAsk(db: SqliteDatabase, sql: Statements, input: AskInput, keys: string[]): TaskRecord | null {
  const { fence, now } = input;
  const guard = { task_id: fence.taskId, auth_key: fence.authKey, version: fence.version, owner: fence.owner, now, keys: JSON.stringify(keys) };
  try {
    return db.transaction(() => {
      const row = sql.applyAsk.get(guard) as TaskRow | undefined;
      if (row === undefined) return null;
      for (const q of input.questions) {
        const question: StoredInput = {
          taskId: fence.taskId,
          key: q.key,
          askSeq: input.askSeq,
          request: q.request,
          requestDigest: jcsSha256(q.request),
          askedAt: now,
          response: null,
          responseDigest: null,
          answeredAt: null,
          deadlineAt: q.deadlineAt ?? null,
          ...(input.position === undefined ? {} : { position: input.position }),
        };
        sql.insertInput.run(inputToRow(question));
      }
      return rowToRecord(row);
    })();
  } catch (error) {
    if ((error as { code?: unknown }).code === 'SQLITE_CONSTRAINT_PRIMARYKEY') return null;
    throw error;
  }
}

export function answerIn(sql: Statements, input: AnswerInput): AnswerOutcome {
  const { authKey, taskId, now, correlationId } = input;
  const task = readById(sql, taskId);
  const miss = answerMiss(task, authKey, now);
  if (miss !== null || task === null) {
    audit(sql, now, { authKey, taskId }, correlationId, miss ?? 'NOT_FOUND', miss === 'BLOCK_TERMINAL' ? task : null);
    return { decision: miss ?? 'NOT_FOUND', keys: {}, record: null };
  }
  const asked = new Map((sql.selectInputs.all(taskId) as InputRow[]).map((row) => [row.input_key, rowToInput(row)] as const));
  const keys: Record<string, AnswerDecision> = {};
  for (const [key, response] of Object.entries(input.responses)) {
    const question = asked.get(key) ?? null;
    const responseDigest = jcsSha256(response ?? null);
    const decision = decideAnswer({ task, auth: authKey, question, responseDigest, now });
    keys[key] = decision;
    if (decision !== 'APPLY_ANSWER') continue;
    const stored = sql.storeAnswer.run({ task_id: taskId, input_key: key, response: toJson(response), response_digest: responseDigest, now });
    if (stored.changes !== 1)
      throw new TasklatchError('INTERNAL', `answer to ${JSON.stringify(key)} of task ${JSON.stringify(taskId)} changed no row under the write lock`);
    asked.set(key, Object.assign({}, question!, { response, responseDigest, answeredAt: now }));
  }
  const applied = Object.values(keys).includes('APPLY_ANSWER');
  let record = task;
  if (applied) {
    const resume = outstanding([...asked.values()]).length === 0;
    const row = sql.applyAnswers.get({ task_id: taskId, auth_key: authKey, version: task.version, now, resume: resume ? 1 : 0 }) as TaskRow | undefined;
    if (row === undefined) throw new TasklatchError('INTERNAL', `task ${JSON.stringify(taskId)} changed under the write lock of its answer`);
    record = rowToRecord(row);
    // A worker claims it at once: the entry comes due now.
    if (resume) sql.moveOutboxEntry.run({ task_id: taskId, available_at_ms: now, lease_expires_at_ms: null });
  }
  for (const [key, decision] of Object.entries(keys)) audit(sql, now, { authKey, taskId }, correlationId, decision, record, `answer ${key}`);
  return { decision: applied ? 'APPLY_ANSWER' : 'IGNORE_ANSWER', keys, record };
}

export function inputsIn(sql: Statements, { authKey, taskId, now }: TaskRef & { now: Millis }): InputsOutcome {
  const visible = sql.selectVisible.get({ task_id: taskId, auth_key: authKey, now }) as TaskRow | undefined;
  if (visible === undefined) {
    const miss = classifyMiss(readById(sql, taskId), authKey, now);
    if (miss === null) throw new TasklatchError('INTERNAL', `task ${taskId} is visible to the rules but not to the query`);
    return { decision: miss, inputs: null };
  }
  return { decision: 'FOUND', inputs: (sql.selectInputs.all(taskId) as InputRow[]).map(rowToInput) };
}

export function seedInputsIn(sql: Statements, inputs: readonly StoredInput[]): void {
  for (const input of inputs) sql.upsertInput.run(inputToRow(input));
}

/** A task an input deadline ends, as the deadline query read it. */
export interface OverdueRow {
  task_id: string;
  input_key: string;
  deadline_ms: number;
  version: number;
}

export function overdueIn(sql: Statements, now: Millis, limit: number): OverdueRow[] {
  return sql.overdueInputs.all({ now, limit: Math.max(0, limit) }) as OverdueRow[];
}

/**
 * Ends one overdue task, inside the caller's write transaction: its conditional write on the
 * version read, the outbox entry closed, the audit line (which the change listeners read).
 * Nothing when the task moved since it was read (answered, cancelled, finished).
 */
export function failOverdueIn(sql: Statements, due: OverdueRow, now: Millis, correlationId: string): OverdueOutcome[number] | null {
  const result = deadlineOutcome({ key: due.input_key, deadlineAt: due.deadline_ms });
  const params = { task_id: due.task_id, version: due.version, now, result: toJson(result), result_digest: resultDigest(result) };
  const row = sql.applyInputDeadline.get(params) as TaskRow | undefined;
  if (row === undefined) return null;
  const record = rowToRecord(row);
  sql.closeDispatch.run({ task_id: record.taskId, now });
  const line = auditLine({
    at: now,
    surface: 'transition',
    decision: 'APPLY_TRANSITION',
    authKey: record.authKey,
    taskId: record.taskId,
    correlationId,
    record,
    detail: deadlineDetail(due.input_key),
  });
  sql.insertAudit.run(auditToRow(line));
  return { taskId: record.taskId, version: record.version };
}

function audit(sql: Statements, at: Millis, ref: TaskRef, correlationId: string, decision: Decision, record: TaskRecord | null, detail?: string): void {
  const line = auditLine({ at, surface: 'input', decision, authKey: ref.authKey, taskId: ref.taskId, correlationId, record, detail });
  sql.insertAudit.run(auditToRow(line));
}
