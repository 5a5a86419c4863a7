import pg from 'pg';
import { decideLimitedAdmission } from '../../core/create-rules.js';
import type { Decision } from '../../core/decisions.js';
import { resultDigest } from '../../core/digest.js';
import { TasklatchError } from '../../core/errors.js';
import { decideCancel } from '../../core/read-rules.js';
import { decideTransition, type GuardedRecord } from '../../core/transition-rules.js';
import { isTaskStatus, isTerminal, type Millis, type TaskRecord, type TaskStatus } from '../../core/types.js';
import { admissionRecord } from '../admission-record.js';
import { auditLine } from '../audit-line.js';
import type { AdmitInput, AdmitOutcome, AuditEntry, CancelOutcome, TransitionInput, TransitionOutcome } from '../types.js';
import { inOneRoundTrip, inTransaction, withLiterals } from './connection.js';
import { auditToRow, recordToRow, rowToRecord, toJson, type TaskRow } from './row.js';
import * as sql from './statements.js';

/**
 * The writing operations of the PostgreSQL store, each run by the caller inside one transaction
 * on `client`. The conditional write goes first; only when it changes nothing is the stored row
 * read and classified by the core, so two writers never both act on one read.
 */

// Enough for any real interleaving: a retry is needed only when the key's holder expired or
// gave the key up between our INSERT and our SELECT.
const ADMIT_ATTEMPTS = 5;

/**
 * Admission. Without a key and a bound (active or stored tasks) it is one statement (task, outbox entry, audit line,
 * notification). With either it is one transaction sent in one round trip: the per-auth-key
 * lock of the active-task limit, the release of an expired holder's key and the same insert, as
 * plain SQL in one message (`inOneRoundTrip`). When that inserts nothing, the key's holder or
 * the limit stopped it, and the parameterised transaction below runs: the holder is read, the
 * caller's active tasks counted, and the core's `decideLimitedAdmission` classifies (a retry of
 * an existing task is never refused by the limit). The first transaction changed nothing then
 * but the release of an expired key, which the second one makes as well.
 */
export async function admitIn(pool: pg.Pool, input: AdmitInput): Promise<AdmitOutcome> {
  const params = [...recordToRow(admissionRecord(input)), input.maxActive ?? null, input.now, input.maxStored ?? null];
  // Neither a key nor a limit: nothing to look up first, so the one statement is the whole
  // transaction (it cannot conflict: task ids are unique).
  if (input.idempotencyKey === null && input.maxActive == null && input.maxStored == null) {
    const inserted = await pool.query<TaskRow>(sql.ADMIT_TASK, params);
    if (inserted.rows[0] === undefined) throw new TasklatchError('INTERNAL', `admission of task ${input.taskId} inserted nothing`);
    return { decision: 'ACCEPT_TASK', record: rowToRecord(inserted.rows[0]) };
  }
  const statements = admissionStatements(input);
  if (statements !== null) {
    const results = await inOneRoundTrip(pool, statements);
    // The insert is the last statement; its row is the accepted task.
    const row = (results.at(-1)?.rows as TaskRow[] | undefined)?.[0];
    if (row !== undefined) return { decision: 'ACCEPT_TASK', record: rowToRecord(row) };
  }
  return inTransaction(
    pool,
    (client) => admitInTransaction(client, input, params),
    () => admissionPrelude(input),
  );
}

/**
 * The plain SQL of admission with a key or a limit, as `admitIn` sends it in one round trip
 * (without BEGIN and COMMIT); null when a value has no exact literal. The bench runs the same
 * statements through pgbench.
 */
export function admissionStatements(input: AdmitInput): string[] | null {
  const insert = withLiterals(sql.ADMIT_TASK, [...recordToRow(admissionRecord(input)), input.maxActive ?? null, input.now, input.maxStored ?? null]);
  return insert === null ? null : [...admissionPrelude(input), insert];
}

/**
 * What admission runs before its insert, as plain SQL: the per-auth-key lock of the active-task
 * limit (held to commit; a statement of its own, so the insert's snapshot is taken after it and
 * count-then-insert is exact), and the release of an expired holder's key. Values are escaped
 * literals; every one is a string or a checked number.
 */
function admissionPrelude(input: AdmitInput): string[] {
  const statements: string[] = [];
  if (input.maxActive != null || input.maxStored != null) {
    statements.push(`SELECT pg_advisory_xact_lock(hashtextextended(${pg.escapeLiteral(`tasklatch:admit:${input.authKey}`)}, 0))`);
  }
  if (input.idempotencyKey !== null) {
    if (!Number.isSafeInteger(input.now)) throw new TasklatchError('INVALID_INPUT', 'admission time must be whole milliseconds');
    statements.push(
      `UPDATE tasks SET idempotency_key = NULL WHERE auth_key = ${pg.escapeLiteral(input.authKey)} AND idempotency_key = ${pg.escapeLiteral(input.idempotencyKey)} AND expires_at_ms <= ${input.now}`,
    );
  }
  return statements;
}

async function admitInTransaction(client: pg.PoolClient, input: AdmitInput, params: unknown[]): Promise<AdmitOutcome> {
  for (let attempt = 0; attempt < ADMIT_ATTEMPTS; attempt++) {
    if (attempt > 0 && input.idempotencyKey !== null) {
      await client.query(sql.RELEASE_EXPIRED_KEY, [input.authKey, input.idempotencyKey, input.now]);
    }
    // The insert checks both bounds itself, under the per-auth-key lock; the counts below only
    // classify an insert that did not happen.
    const inserted = await client.query<TaskRow>(sql.ADMIT_TASK, params);
    if (inserted.rows[0] !== undefined) return { decision: 'ACCEPT_TASK', record: rowToRecord(inserted.rows[0]) };
    const found = input.idempotencyKey === null ? null : await client.query<TaskRow>(sql.SELECT_BY_KEY, [input.authKey, input.idempotencyKey]);
    const prior = found?.rows[0] === undefined ? null : rowToRecord(found.rows[0]);
    const activeCount = input.maxActive == null ? 0 : await countActive(client, input);
    const storedCount = input.maxStored == null ? 0 : await countStored(client, input);
    const decision = decideLimitedAdmission({ ...input, auth: input.authKey, prior, activeCount, storedCount });
    if (decision === 'BLOCK_TASK_LIMIT' || decision === 'BLOCK_STORED_LIMIT') {
      await audit(client, 'create', input, decision, null, null);
      return { decision, record: null };
    }
    if (decision !== 'ACCEPT_TASK' && prior !== null) {
      await audit(client, 'create', input, decision, prior.taskId, prior);
      return decision === 'REPLAY_TASK' ? { decision, record: prior } : { decision, record: null };
    }
    // The key's holder expired or gave the key up between the insert and the read, or the
    // caller's active tasks fell below the limit meanwhile: again.
  }
  throw new TasklatchError('INTERNAL', `admission of idempotency key ${JSON.stringify(input.idempotencyKey)} did not settle`);
}

async function countStored(client: pg.PoolClient, input: AdmitInput): Promise<number> {
  const counted = await client.query<{ n: number }>(sql.COUNT_STORED, [input.authKey, input.now]);
  return counted.rows[0]?.n ?? 0;
}

async function countActive(client: pg.PoolClient, input: AdmitInput): Promise<number> {
  const counted = await client.query<{ n: number }>(sql.COUNT_ACTIVE, [input.authKey, input.now]);
  return counted.rows[0]?.n ?? 0;
}

/**
 * A status write: the usual path is one statement on the pool (the task, its outbox entry when
 * the status is terminal, the audit line, the notification), so it commits in one round trip.
 * When it changes nothing the row is read and `decideTransition` says why; the refusal's audit
 * line follows. Under READ COMMITTED the read after the miss sees no less than it would inside
 * one transaction: each statement takes its own snapshot either way, and versions only grow.
 */
export async function transitionIn(pool: pg.Pool, input: TransitionInput): Promise<TransitionOutcome> {
  const { write } = input;
  // An int4 column cannot compare with 1.5 or 2^40; such a version matches no row, which is
  // what the classification below says too (without the statement failing).
  if (isTaskStatus(write.status) && isInt4(write.expectedVersion)) {
    const params: unknown[] = [input.taskId, input.authKey, write.expectedVersion, input.now, write.status, input.correlationId];
    const sets: string[] = [];
    if (write.statusMessage !== undefined) sets.push(`status_message = $${params.push(write.statusMessage)}`);
    const terminal = isTerminal(write.status);
    if (terminal) {
      const result = write.result ?? null;
      sets.push(`result = $${params.push(toJson(result))}`);
      sets.push(`result_digest = $${params.push(result === null ? null : resultDigest(result))}`);
      // A finished task holds no lease: a worker still running it must not renew it.
      sets.push('lease_owner = NULL', 'lease_expires_at_ms = NULL');
    }
    const applied = await pool.query<TaskRow>(sql.appliedTransition(sets, terminal), params);
    if (applied.rows[0] !== undefined) return { decision: 'APPLY_TRANSITION', record: rowToRecord(applied.rows[0]) };
  }
  const stored = await readById(pool, input.taskId);
  const decision = decideTransition({ task: stored, auth: input.authKey, write, now: input.now });
  if (decision === 'APPLY_TRANSITION') {
    // The conditional write found nothing to change, yet the rules would apply: the row changed
    // under us in a way versions forbid (a concurrent seed). Refuse rather than guess.
    throw new TasklatchError('INTERNAL', `task ${JSON.stringify(input.taskId)} changed during its transition`);
  }
  const visible = stored !== null && stored.authKey === input.authKey ? stored : null;
  await audit(pool, 'transition', input, decision, input.taskId, visible);
  return { decision, record: visible };
}

/** Cancellation: one statement when it applies; a miss is read, classified and audited after it. */
export async function cancelIn(pool: pg.Pool, input: { authKey: string; taskId: string; now: Millis; correlationId: string }): Promise<CancelOutcome> {
  const cancelled = await pool.query<TaskRow>(sql.CONDITIONAL_CANCEL, [input.taskId, input.authKey, input.now, input.correlationId]);
  if (cancelled.rows[0] !== undefined) return { decision: 'CANCEL_TASK', record: rowToRecord(cancelled.rows[0]) };
  const decision = decideCancel(await readGuard(pool, input.taskId), input.authKey, input.now);
  if (decision === 'CANCEL_TASK') {
    throw new TasklatchError('INTERNAL', `task ${JSON.stringify(input.taskId)} changed during its cancellation`);
  }
  // Only the caller's own finished task is read in full, for the answer.
  const stored = decision === 'ALREADY_TERMINAL' ? await readById(pool, input.taskId) : null;
  if (decision === 'ALREADY_TERMINAL' && stored !== null) {
    await audit(pool, 'read', input, decision, input.taskId, stored);
    return { decision, record: stored };
  }
  const miss = decision === 'ALREADY_TERMINAL' ? 'NOT_FOUND' : decision;
  await audit(pool, 'read', input, miss, input.taskId, null);
  return { decision: miss, record: null };
}

/**
 * The columns the miss rules read (auth key, status, version, expiry) and nothing else: another
 * caller's task is refused after the same small read as a missing one, whatever its size, so
 * the time of the answer does not tell them apart.
 */
export async function readGuard(client: pg.ClientBase | pg.Pool, taskId: string): Promise<GuardedRecord | null> {
  const found = await client.query<Pick<TaskRow, 'auth_key' | 'status' | 'version' | 'expires_at_ms'>>(sql.SELECT_GUARD_BY_ID, [taskId]);
  const row = found.rows[0];
  if (row === undefined) return null;
  return {
    authKey: row.auth_key,
    status: row.status as TaskStatus,
    version: row.version,
    expiresAt: row.expires_at_ms === null ? null : Number(row.expires_at_ms),
    result: null,
    resultDigest: null,
  };
}

export async function readById(client: pg.ClientBase | pg.Pool, taskId: string): Promise<TaskRecord | null> {
  const found = await client.query<TaskRow>(sql.SELECT_BY_ID, [taskId]);
  return found.rows[0] === undefined ? null : rowToRecord(found.rows[0]);
}

/** Whether `value` fits an integer column; anything else matches no stored version. */
export function isInt4(value: number): boolean {
  return Number.isInteger(value) && value >= -2_147_483_648 && value <= 2_147_483_647;
}

/** One audit line, with the status and version of `record` when the caller may see it. */
async function audit(
  client: pg.PoolClient | pg.Pool,
  surface: AuditEntry['surface'],
  input: { now: Millis; authKey: string; correlationId: string },
  decision: Decision,
  taskId: string | null,
  record: TaskRecord | null,
): Promise<void> {
  const line = auditLine({ at: input.now, surface, decision, authKey: input.authKey, taskId, correlationId: input.correlationId, record });
  await client.query(sql.INSERT_AUDIT, auditToRow(line));
}
