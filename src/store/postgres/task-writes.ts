import pg from 'pg';
import { decideLimitedAdmission } from '../../core/create-rules.js';
import type { Decision } from '../../core/decisions.js';
import { resultDigest } from '../../core/digest.js';
import { TasklatchError } from '../../core/errors.js';
import { decideCancel } from '../../core/read-rules.js';
import { decideDispatch } from '../../core/dispatch-rules.js';
import { decideTransition } from '../../core/transition-rules.js';
import { isTaskStatus, isTerminal, type Millis, type TaskRecord } from '../../core/types.js';
import { admissionRecord } from '../admission-record.js';
import { auditLine, cancelDetail } from '../audit-line.js';
import type { AdmitInput, AdmitOutcome, AuditEntry, CancelInput, CancelOutcome, TransitionInput, TransitionOutcome } from '../types.js';
import { callWith, prepared, withLiterals, type Call } from './prepared.js';
import { readById, readGuard } from './reads.js';
import { appliedTaskRow, auditToRow, isInt4, recordToRow, rowToRecord, toJson, type TaskRow } from './row.js';
import { sql } from './statements.js';
import { appliedTransition } from './task-statements.js';
import { inTransaction } from './transactions.js';
import { lockAll, type Announcement, type WriteBatcher } from './write-batcher.js';

/**
 * Both prepared once per connection that executes them, and executed with their generic plans
 * (see prepared.ts `prepared`): the plan is the same for any caller and bound.
 */
const preparedAdmit = prepared(sql.admitTask, { generic: true });
const preparedAdmitClaimed = prepared(sql.admitClaimedTask, { generic: true });

/**
 * The writing operations of the records role in PostgreSQL: admission, status writes,
 * cancellation, seeding. A write goes in the next write batch as one statement where it can
 * (`WriteBatcher`), else in a transaction of its own; the conditional write goes first, and only
 * when it changes nothing is the stored row read and classified by the core, so two writers
 * never both act on one read.
 */

// Enough for any real interleaving: a retry is needed only when the key's holder expired or
// gave the key up between our INSERT and our SELECT.
const ADMIT_ATTEMPTS = 5;

/**
 * Admission, in the next write batch (`WriteBatcher`: concurrent admissions and status writes
 * share one transaction and one round trip). Without a key or a bound (active or stored tasks)
 * it is one statement: task, outbox entry, audit line. With either it is the per-auth-key lock
 * of the bounds (a statement of its own, taken with every other lock of the batch) and the same
 * insert, which checks both bounds itself. When that inserts nothing, the key's holder or a
 * bound stopped it, or the holder of the key expired, and the parameterised transaction below
 * runs: the expired holder's key is released, the holder read, the caller's tasks counted, and
 * the core's `decideLimitedAdmission` classifies (a retry of an existing task is never refused
 * by a bound). The first attempt changed nothing then.
 */
export async function admitIn(pool: pg.Pool, batcher: WriteBatcher, input: AdmitInput): Promise<AdmitOutcome> {
  const admitted = admissionRecord(input);
  const bounds = [input.maxActive ?? null, input.now, input.maxStored ?? null];
  const params = [...recordToRow(admitted), ...bounds];
  const bare = input.idempotencyKey === null && input.maxActive == null && input.maxStored == null;
  const claimed = claimOnAdmission(pool, input, admitted, bounds);
  const insert = claimed === null ? callWith(preparedAdmit, params) : claimed.statement;
  if (insert !== null) {
    const [inserted] = await batcher.run({ statements: [insert], locks: admissionLocks(input), orderKey: `0:${input.authKey}` });
    const row = (inserted?.rows as AdmittedRow[] | undefined)?.[0];
    if (row !== undefined) {
      if (claimed === null) return { decision: 'ACCEPT_TASK', record: asStored(admitted, row), claimed: null };
      const record = asStored(claimed.leased, row);
      return { decision: 'ACCEPT_TASK', record: claimed.admitted(record), claimed: record };
    }
  } else if (bare) {
    // A value without an exact literal: the parameterised insert (it cannot conflict: task ids are unique).
    const inserted = await pool.query<AdmittedRow>(sql.admitTask, params);
    if (inserted.rows[0] !== undefined) return { decision: 'ACCEPT_TASK', record: asStored(admitted, inserted.rows[0]) };
  }
  if (bare) throw new TasklatchError('INTERNAL', `admission of task ${input.taskId} inserted nothing`);
  return inTransaction(
    pool,
    (client) => admitInTransaction(client, input, admitted, params),
    () => admissionPrelude(input),
  );
}

/** What the admission statement answers for an inserted task (see `sql.admitTask`). */
interface AdmittedRow {
  request: unknown;
}

/**
 * The record as the admission statement stored it: `written` (this admission's own record, set
 * in place), whose columns went in as its parameters and read back as they went in, with the
 * request as the store gave it back.
 */
function asStored(written: TaskRecord, row: AdmittedRow): TaskRecord {
  written.request = row.request;
  return written;
}

/**
 * The admission and its claim as one statement (`sql.admitClaimedTask`), when the admission
 * names a claimer and the dispatch rule would claim the task as admitted (it always does, for a
 * fresh working task with attempts left); null otherwise, or when a value has no exact literal.
 * The row goes in as the claim leaves it; `admitted` gives back, from that row as stored, the
 * record the admission alone would have left (version 1, no attempt, no lease), which is what
 * the admission answers.
 */
function claimOnAdmission(
  pool: pg.Pool,
  input: AdmitInput,
  admitted: TaskRecord,
  bounds: readonly unknown[],
): { statement: Call; leased: TaskRecord; admitted: (claimed: TaskRecord) => TaskRecord } | null {
  const claim = input.claim;
  if (claim == null) return null;
  if (decideDispatch(admitted, input.now, claim.maxAttempts).kind !== 'claim') return null;
  const leased = Object.assign({}, admitted, {
    version: admitted.version + 1,
    lastUpdatedAt: input.now,
    attempt: admitted.attempt + 1,
    leaseOwner: claim.owner,
    leaseExpiresAt: input.now + claim.leaseMs,
  });
  const statement = callWith(preparedAdmitClaimed, [...recordToRow(leased), ...bounds, claim.correlationId, `claim ${claim.owner}`]);
  if (statement === null) return null;
  return {
    statement,
    leased,
    admitted: (stored) =>
      Object.assign({}, stored, {
        version: admitted.version,
        lastUpdatedAt: admitted.lastUpdatedAt,
        attempt: admitted.attempt,
        leaseOwner: admitted.leaseOwner,
        leaseExpiresAt: admitted.leaseExpiresAt,
      }),
  };
}

/**
 * The plain SQL of one admission with a key or a bound as it reaches the server when no other
 * write shares its batch (without BEGIN and COMMIT): the lock, the insert. Null when a value has
 * no exact literal. The bench runs the same statements through pgbench.
 */
export function admissionStatements(input: AdmitInput): string[] | null {
  const insert = withLiterals(sql.admitTask, [...recordToRow(admissionRecord(input)), input.maxActive ?? null, input.now, input.maxStored ?? null]);
  const locks = admissionLocks(input);
  return insert === null ? null : [...(locks.length === 0 ? [] : [lockAll(locks)]), insert];
}

/**
 * What the slow path of admission runs before its insert, as plain SQL: the per-auth-key lock of
 * the bounds (held to commit; a statement of its own, so the insert's snapshot is taken after it
 * and count-then-insert is exact), and the release of an expired holder's key. Values are
 * escaped literals; every one is a string or a checked number.
 */
function admissionPrelude(input: AdmitInput): string[] {
  const statements: string[] = [];
  if (input.maxActive != null || input.maxStored != null) statements.push(lockAll([admitLockKey(input.authKey)]));
  if (input.idempotencyKey !== null) {
    if (!Number.isSafeInteger(input.now)) throw new TasklatchError('INVALID_INPUT', 'admission time must be whole milliseconds');
    statements.push(
      `UPDATE tasks SET idempotency_key = NULL WHERE auth_key = ${pg.escapeLiteral(input.authKey)} AND idempotency_key = ${pg.escapeLiteral(input.idempotencyKey)} AND expires_at_ms <= ${input.now}`,
    );
  }
  return statements;
}

/**
 * The advisory lock of an admission with a bound or a key: one per auth key, so count-then-insert
 * is exact and two admissions of one key never wait on each other's uncommitted row. Taken for a
 * key without a bound too, so that batches order every such wait by the same locks.
 */
function admissionLocks(input: AdmitInput): string[] {
  const bounded = input.maxActive != null || input.maxStored != null;
  return bounded || input.idempotencyKey !== null ? [admitLockKey(input.authKey)] : [];
}

function admitLockKey(authKey: string): string {
  return `tasklatch:admit:${authKey}`;
}

async function admitInTransaction(client: pg.PoolClient, input: AdmitInput, admitted: TaskRecord, params: unknown[]): Promise<AdmitOutcome> {
  for (let attempt = 0; attempt < ADMIT_ATTEMPTS; attempt++) {
    if (attempt > 0 && input.idempotencyKey !== null) {
      await client.query(sql.releaseExpiredKey, [input.authKey, input.idempotencyKey, input.now]);
    }
    // The insert checks both bounds itself, under the per-auth-key lock; the counts below only
    // classify an insert that did not happen.
    const inserted = await client.query<AdmittedRow>(sql.admitTask, params);
    if (inserted.rows[0] !== undefined) return { decision: 'ACCEPT_TASK', record: asStored(admitted, inserted.rows[0]) };
    const found = input.idempotencyKey === null ? null : await client.query<TaskRow>(sql.selectByKey, [input.authKey, input.idempotencyKey]);
    const prior = found?.rows[0] === undefined ? null : rowToRecord(found.rows[0]);
    const activeCount = input.maxActive == null ? 0 : await countActive(client, input);
    const storedCount = input.maxStored == null ? 0 : await countStored(client, input);
    const decision = decideLimitedAdmission(Object.assign({}, input, { auth: input.authKey, prior, activeCount, storedCount }));
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
  const counted = await client.query<{ n: number }>(sql.countStored, [input.authKey, input.now]);
  return counted.rows[0]?.n ?? 0;
}

async function countActive(client: pg.PoolClient, input: AdmitInput): Promise<number> {
  const counted = await client.query<{ n: number }>(sql.countActive, [input.authKey, input.now]);
  return counted.rows[0]?.n ?? 0;
}

/**
 * A status write: the usual path is one statement on the pool (the task, its outbox entry when
 * the status is terminal, the audit line, the notification), so it commits in one round trip.
 * When it changes nothing the row is read and `decideTransition` says why; the refusal's audit
 * line follows. Under READ COMMITTED the read after the miss sees no less than it would inside
 * one transaction: each statement takes its own snapshot either way, and versions only grow.
 */
/** `announce`: the notifications of the write's row, sent inside its transaction (write-batcher.ts `Announcement`). */
export async function transitionIn(pool: pg.Pool, batcher: WriteBatcher, input: TransitionInput, announce?: Announcement): Promise<TransitionOutcome> {
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
      // A finished task is parked no more (park-rules.ts).
      sets.push('parked_at_ms = NULL', 'parks = 0');
    }
    const row = await appliedRow(pool, batcher, appliedTransition(sets, terminal), params, input.taskId, announce);
    if (row !== undefined) return { decision: 'APPLY_TRANSITION', record: rowToRecord(row) };
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
export async function cancelIn(pool: pg.Pool, batcher: WriteBatcher, input: CancelInput, announce?: Announcement): Promise<CancelOutcome> {
  const detail = cancelDetail(input);
  const params = [input.taskId, input.authKey, input.now, input.correlationId, detail];
  const cancelled = await appliedRow(pool, batcher, sql.applyCancel, params, input.taskId, announce);
  if (cancelled !== undefined) return { decision: 'CANCEL_TASK', record: rowToRecord(cancelled) };
  const decision = decideCancel(await readGuard(pool, input.taskId), input.authKey, input.now);
  if (decision === 'CANCEL_TASK') {
    throw new TasklatchError('INTERNAL', `task ${JSON.stringify(input.taskId)} changed during its cancellation`);
  }
  // Only the caller's own finished task is read in full, for the answer.
  const stored = decision === 'ALREADY_TERMINAL' ? await readById(pool, input.taskId) : null;
  if (decision === 'ALREADY_TERMINAL' && stored !== null) {
    await audit(pool, 'read', input, decision, input.taskId, stored, detail);
    return { decision, record: stored };
  }
  const miss = decision === 'ALREADY_TERMINAL' ? 'NOT_FOUND' : decision;
  await audit(pool, 'read', input, miss, input.taskId, null, detail);
  return { decision: miss, record: null };
}

/**
 * The row a conditional write changed (as JSON: predicates.ts `appliedAsJson`), or undefined
 * when it changed none: one statement, in the
 * next write batch (a prepared statement executed with literals), or with parameters where a
 * value has no exact literal.
 */
async function appliedRow(
  pool: pg.Pool,
  batcher: WriteBatcher,
  text: string,
  params: readonly unknown[],
  taskId: string,
  announce: Announcement | undefined,
): Promise<TaskRow | undefined> {
  const call = callWith(prepared(text), params);
  if (call === null) return appliedTaskRow(await pool.query(text, params as unknown[]));
  const [result] = await batcher.run({ statements: [call], locks: [], orderKey: `1:${taskId}`, ...(announce === undefined ? {} : { announce }) });
  return appliedTaskRow(result);
}

/**
 * Seeding: each record as it is, replacing a stored one of the same id; the key it carries moves
 * to it from any other record. Inside the caller's transaction.
 */
export async function seedTasksIn(client: pg.PoolClient, records: readonly TaskRecord[]): Promise<void> {
  for (const record of records) {
    if (record.idempotencyKey !== null) await client.query(sql.releaseKeyForSeed, [record.authKey, record.idempotencyKey, record.taskId]);
    await client.query(sql.upsertTask, recordToRow(record));
  }
}

/** One audit line, with the status and version of `record` when the caller may see it. */
async function audit(
  client: pg.PoolClient | pg.Pool,
  surface: AuditEntry['surface'],
  input: { now: Millis; authKey: string; correlationId: string },
  decision: Decision,
  taskId: string | null,
  record: TaskRecord | null,
  detail: string | null = null,
): Promise<void> {
  const line = auditLine({ at: input.now, surface, decision, authKey: input.authKey, taskId, correlationId: input.correlationId, record, detail });
  await client.query(sql.insertAudit, auditToRow(line));
}
