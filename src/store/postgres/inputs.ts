import type pg from 'pg';
import type { Decision } from '../../core/decisions.js';
import { jcsSha256, resultDigest } from '../../core/digest.js';
import { TasklatchError } from '../../core/errors.js';
import { answerMiss, deadlineDetail, deadlineOutcome, decideAnswer, decideAsk, outstanding, type StoredInput } from '../../core/input-rules.js';
import { checkJournalPosition } from '../../core/step-value.js';
import { classifyMiss } from '../../core/visibility.js';
import type { AnswerDecision } from '../../core/decisions.js';
import type { Millis, TaskRecord } from '../../core/types.js';
import { auditLine } from '../audit-line.js';
import type { AnswerInput, AnswerOutcome, AskInput, AskOutcome, AuditEntry, InputsOutcome, OverdueOutcome, TaskRef } from '../types.js';
import { inTransaction } from './transactions.js';
import { readById } from './reads.js';
import { auditColumns, auditToRow, inputToRow, isInt4, rowToInput, rowToRecord, toJson, type InputRow, type TaskRow } from './row.js';
import { sql } from './statements.js';

/**
 * The input operations of the PostgreSQL store. An ask is one statement (its own transaction);
 * an answer is one transaction that locks the task row before it reads the questions, so two
 * answers to one key never both find it outstanding.
 */

export async function askIn(pool: pg.Pool, input: AskInput): Promise<AskOutcome> {
  const { fence, now } = input;
  if (input.position !== undefined) checkJournalPosition(input.position);
  const keys = input.questions.map((q) => q.key);
  // A key twice in one ask, or a version no integer column holds, cannot apply: straight to the rules.
  if (new Set(keys).size === keys.length && isInt4(fence.version)) {
    const applied = await applyAsk(pool, input, keys);
    if (applied !== null) return { decision: 'APPLY_ASK', record: applied };
  }
  const found = await pool.query<TaskRow & { asked_keys: string[] }>(sql.selectAsked, [fence.taskId]);
  const row = found.rows[0];
  const task = row === undefined ? null : rowToRecord(row);
  const decision = decideAsk({ task, fence, keys, askedKeys: new Set(row?.asked_keys ?? []), now });
  if (decision === 'APPLY_ASK') throw new TasklatchError('INTERNAL', `task ${JSON.stringify(fence.taskId)} changed during its ask`);
  const visible = task !== null && task.authKey === fence.authKey ? task : null;
  await pool.query(sql.insertAudit, line(now, fence, input.correlationId, decision, visible));
  return { decision, record: visible };
}

/** The record after the ask, or null when it changed nothing (the guard failed, or a key was taken). */
async function applyAsk(pool: pg.Pool, input: AskInput, keys: string[]): Promise<TaskRecord | null> {
  const { fence, now } = input;
  const questions = input.questions.map((q) => ({ key: q.key, request: q.request, digest: jcsSha256(q.request), deadline: q.deadlineAt ?? null }));
  // The guard fixes what the write leaves: input_required at the fence's version + 1.
  const written = { status: 'input_required' as const, version: fence.version + 1 };
  const audit = line(now, fence, input.correlationId, 'APPLY_ASK', written, `ask ${keys.join(',')}`);
  try {
    const applied = await pool.query<TaskRow>(sql.applyAsk, [
      fence.taskId,
      fence.authKey,
      fence.version,
      fence.owner,
      now,
      keys,
      input.askSeq,
      toJson(questions),
      ...audit,
      input.position ?? null,
    ]);
    return applied.rows[0] === undefined ? null : rowToRecord(applied.rows[0]);
  } catch (error) {
    // A key the guard's snapshot did not see yet (a concurrent seed): the statement undid itself
    // and the rules classify it.
    const { code, constraint } = error as { code?: unknown; constraint?: unknown };
    if (code === '23505' && constraint === 'task_inputs_pkey') return null;
    throw error;
  }
}

export async function answerIn(pool: pg.Pool, input: AnswerInput): Promise<AnswerOutcome> {
  return inTransaction(pool, async (client) => {
    const { authKey, taskId, now, correlationId } = input;
    const locked = await client.query<TaskRow>(sql.selectForAnswer, [taskId]);
    const task = locked.rows[0] === undefined ? null : rowToRecord(locked.rows[0]);
    const miss = answerMiss(task, authKey, now);
    if (miss !== null || task === null) {
      await client.query(sql.insertAudit, line(now, { authKey, taskId }, correlationId, miss ?? 'NOT_FOUND', miss === 'BLOCK_TERMINAL' ? task : null));
      return { decision: miss ?? 'NOT_FOUND', keys: {}, record: null };
    }
    const read = await client.query<InputRow>(sql.selectInputs, [taskId]);
    const asked = new Map(read.rows.map((r) => [r.input_key, rowToInput(r)] as const));
    const keys: Record<string, AnswerDecision> = {};
    const answers: { key: string; response: unknown; digest: string }[] = [];
    for (const [key, response] of Object.entries(input.responses)) {
      const question = asked.get(key) ?? null;
      const responseDigest = jcsSha256(response ?? null);
      const decision = decideAnswer({ task, auth: authKey, question, responseDigest, now });
      keys[key] = decision;
      if (decision !== 'APPLY_ANSWER') continue;
      answers.push({ key, response: response ?? null, digest: responseDigest });
      asked.set(key, Object.assign({}, question!, { response, responseDigest, answeredAt: now }));
    }
    const record = answers.length === 0 ? task : await applyAnswers(client, input, task, answers, outstanding([...asked.values()]).length === 0);
    const lines = Object.entries(keys).map(([key, decision]) =>
      auditLine({ at: now, surface: 'input', decision, authKey, taskId, correlationId, record, detail: `answer ${key}` }),
    );
    // Named: each connection parses and plans it once, whatever the number of lines.
    if (lines.length > 0) await client.query({ name: 'tasklatch_insert_audit_lines', text: sql.insertAuditLines, values: auditColumns(lines) });
    return { decision: answers.length > 0 ? 'APPLY_ANSWER' : 'IGNORE_ANSWER', keys, record };
  });
}

async function applyAnswers(client: pg.PoolClient, input: AnswerInput, task: TaskRecord, answers: unknown[], resume: boolean): Promise<TaskRecord> {
  const params = [task.taskId, task.authKey, task.version, input.now, resume, toJson(answers)];
  const applied = await client.query<TaskRow & { answered: number }>(sql.applyAnswers, params);
  const row = applied.rows[0];
  // The task row is locked since it was read: a miss here is a bug, not a race; the throw rolls back.
  if (row === undefined || row.answered !== answers.length) {
    throw new TasklatchError(
      'INTERNAL',
      `answers to task ${JSON.stringify(task.taskId)} changed ${row?.answered ?? 0} of ${answers.length} questions under its lock`,
    );
  }
  return rowToRecord(row);
}

export async function inputsIn(pool: pg.Pool, { authKey, taskId, now }: TaskRef & { now: Millis }): Promise<InputsOutcome> {
  const found = await pool.query<InputRow | { [K in keyof InputRow]: null }>(sql.selectVisibleInputs, [taskId, authKey, now]);
  if (found.rows.length > 0) {
    return { decision: 'FOUND', inputs: found.rows.filter((r): r is InputRow => r.input_key !== null).map(rowToInput) };
  }
  // Nothing visible; a second read by id alone only says why.
  const miss = classifyMiss(await readById(pool, taskId), authKey, now);
  if (miss !== null) return { decision: miss, inputs: null };
  // Became visible between the two reads (seeded meanwhile).
  const read = await pool.query<InputRow>(sql.selectInputs, [taskId]);
  return { decision: 'FOUND', inputs: read.rows.map(rowToInput) };
}

export async function seedInputsIn(client: pg.PoolClient, inputs: readonly StoredInput[]): Promise<void> {
  for (const input of inputs) await client.query(sql.upsertInput, inputToRow(input));
}

/**
 * Ends up to `limit` overdue tasks: one read of the candidates, then one statement each (its
 * own transaction) on the version read; a task that moved meanwhile changes nothing.
 */
export async function failOverdueIn(
  pool: pg.Pool,
  { now, limit, correlationId }: { now: Millis; limit: number; correlationId: string },
): Promise<OverdueOutcome> {
  if (limit <= 0) return [];
  const due = await pool.query<{ task_id: string; input_key: string; deadline_ms: string; version: number }>(sql.overdueInputs, [now, limit]);
  const ended: OverdueOutcome = [];
  for (const task of due.rows) {
    const result = deadlineOutcome({ key: task.input_key, deadlineAt: Number(task.deadline_ms) });
    const params = [task.task_id, task.version, now, toJson(result), resultDigest(result), correlationId, deadlineDetail(task.input_key)];
    const failed = await pool.query<{ task_id: string; version: number }>(sql.applyInputDeadline, params);
    const row = failed.rows[0];
    if (row !== undefined) ended.push({ taskId: row.task_id, version: row.version });
  }
  return ended;
}

function line(
  at: Millis,
  ref: TaskRef,
  correlationId: string,
  decision: Decision,
  record: Pick<TaskRecord, 'status' | 'version'> | null,
  detail?: string,
): unknown[] {
  const entry: AuditEntry = auditLine({ at, surface: 'input', decision, authKey: ref.authKey, taskId: ref.taskId, correlationId, record, detail });
  return auditToRow(entry);
}
