import { slotFree, slotOf, waitingMessage } from '../../core/concurrency-rules.js';
import { resultDigest } from '../../core/digest.js';
import { claimDetail, decideDispatch, isForClaimer } from '../../core/dispatch-rules.js';
import { TasklatchError } from '../../core/errors.js';
import type { Fence, Millis, TaskRecord } from '../../core/types.js';
import { auditLine } from '../audit-line.js';
import type { ClaimInput } from '../types.js';
import { auditToRow, rowToRecord, toJson, type TaskRow } from './row.js';
import { readById } from './reads.js';
import type { Statements } from './statements.js';

/**
 * The dispatch operations of the SQLite store. Each runs inside the caller's `BEGIN IMMEDIATE`
 * transaction: the write lock is held from the first read, so a claimer in another process
 * waits for this one to commit and then finds the leases it set. That is what SKIP LOCKED does
 * on PostgreSQL, with the whole file as the lock.
 */

/** An outbox row as the claim walk reads it. */
interface DueRow {
  id: number;
  task_id: string;
  available_at_ms: number;
}

/**
 * Rows read per page of the claim walk, per task wanted: closed, deferred and skipped entries
 * come before the claimable ones, and a page too small means more round trips under the lock.
 */
const PAGE_PER_CLAIM = 4;

export function claimIn(sql: Statements, input: ClaimInput): TaskRecord[] {
  const claimed: TaskRecord[] = [];
  const limit = Math.max(1, input.limit * PAGE_PER_CLAIM);
  // A keyset, not OFFSET: entries this walk leaves in place (a task in input_required) must not
  // be read again, or a page full of them would loop forever.
  let after = { available_at_ms: Number.MIN_SAFE_INTEGER, id: 0 };
  // An entry claimed with leaseMs 0 stays due at `now` and could reappear after the keyset; a
  // walk decides on each entry once, so it is skipped.
  const visited = new Set<number>();
  while (claimed.length < input.limit) {
    const page = sql.dueOutbox.all({ now: input.now, after_available_at_ms: after.available_at_ms, after_id: after.id, limit }) as DueRow[];
    for (const row of page) {
      if (claimed.length >= input.limit) break;
      if (visited.has(row.id)) continue;
      visited.add(row.id);
      const record = visitEntry(sql, input, row);
      if (record !== null) claimed.push(record);
    }
    if (page.length < limit) break;
    const last = page[page.length - 1]!;
    after = { available_at_ms: last.available_at_ms, id: last.id };
  }
  return claimed;
}

/**
 * Applies the core's `decideDispatch` to one due entry: the claimed record, or null when the
 * entry was closed, deferred, left or its task abandoned.
 */
function visitEntry(sql: Statements, input: ClaimInput, entry: DueRow): TaskRecord | null {
  const { now } = input;
  const task = readById(sql, entry.task_id);
  // A task of another app, or of a tool this claimer does not run, stays as it is, for a worker it is for.
  if (task !== null && !isForClaimer(task, input)) return null;
  const step = decideDispatch(task, now, input.maxAttempts);
  if (step.kind === 'close') sql.closeOutboxEntry.run({ id: entry.id, now });
  if (step.kind === 'defer') sql.deferOutboxEntry.run({ id: entry.id, available_at_ms: step.until });
  if (task === null || step.kind === 'close' || step.kind === 'leave' || step.kind === 'defer') return null;
  const target = { task_id: task.taskId, version: task.version, now };
  if (step.kind === 'abandon') {
    const ended = sql.applyAbandon.get(
      Object.assign({}, target, { result: toJson(input.abandonedResult), result_digest: resultDigest(input.abandonedResult) }),
    ) as TaskRow | undefined;
    const record = applied(ended, task.taskId);
    sql.closeOutboxEntry.run({ id: entry.id, now });
    audit(sql, input, record, 'abandoned');
    return null;
  }
  if (!takesSlot(sql, input, task)) return null;
  const lease = { owner: input.owner, lease_expires_at_ms: now + input.leaseMs };
  const record = applied(sql.applyClaim.get({ ...target, ...lease }) as TaskRow | undefined, task.taskId);
  sql.markOutboxClaimed.run({ id: entry.id, ...lease, attempt: record.attempt });
  audit(sql, input, record, claimDetail(task, input.owner));
  return record;
}

/**
 * Whether the claim may take `task` as far as its concurrency key goes (the write lock is held:
 * the count is exact, this walk's own claims included); a task left waiting says so in its
 * status message, written only when it says something else.
 */
function takesSlot(sql: Statements, input: ClaimInput, task: TaskRecord): boolean {
  const slot = slotOf(task.request);
  if (slot === null) return true;
  const counted = sql.countRunningOfKey.get({ app: task.app, tool_name: task.toolName, key: slot.key, now: input.now }) as { n: number };
  if (slotFree(slot.limit, counted.n)) return true;
  const message = waitingMessage(slot.key, counted.n, slot.limit);
  const row = sql.markWaiting.get({ task_id: task.taskId, version: task.version, message, now: input.now }) as TaskRow | undefined;
  if (row !== undefined) audit(sql, input, rowToRecord(row), 'concurrency wait');
  return false;
}

/** The row a conditional write returned; none means the row changed under the write lock. */
function applied(row: TaskRow | undefined, taskId: string): TaskRecord {
  if (row === undefined) {
    throw new TasklatchError('INTERNAL', `claim of task ${taskId} changed no row, yet it was read claimable in the same transaction`);
  }
  return rowToRecord(row);
}

function audit(sql: Statements, input: ClaimInput, record: TaskRecord, detail: string): void {
  const { authKey, taskId } = record;
  const line = auditLine({
    at: input.now,
    surface: 'transition',
    decision: 'APPLY_TRANSITION',
    authKey,
    taskId,
    correlationId: input.correlationId,
    record,
    detail,
  });
  sql.insertAudit.run(auditToRow(line));
}

/** Named parameters of the fence predicate (dispatch-statements.ts restates holdsFence); null when the fence cannot match any row. */
function fenceParams(fence: Fence, now: Millis): Record<string, unknown> | null {
  // SQLite would coerce a text '3' to match version 3; the fence compares strictly.
  if (!Number.isSafeInteger(fence.version)) return null;
  return { task_id: fence.taskId, auth_key: fence.authKey, owner: fence.owner, version: fence.version, now };
}

export function heartbeatIn(sql: Statements, fence: Fence, now: Millis, leaseMs: number): boolean {
  const params = fenceParams(fence, now);
  if (params === null) return false;
  const leaseExpiresAt = now + leaseMs;
  // Object.assign, not a spread followed by properties: V8's slow path on Node 20, once per heartbeat.
  if (sql.extendLease.run(Object.assign({}, params, { lease_expires_at_ms: leaseExpiresAt })).changes === 0) return false;
  sql.moveOutboxEntry.run({ task_id: fence.taskId, available_at_ms: leaseExpiresAt, lease_expires_at_ms: leaseExpiresAt });
  return true;
}

export function releaseIn(sql: Statements, fence: Fence, now: Millis, correlationId: string): boolean {
  const params = fenceParams(fence, now);
  if (params === null) return false;
  const released = sql.releaseLease.get(params) as { status: TaskRecord['status']; version: number } | undefined;
  if (released === undefined) return false;
  sql.moveOutboxEntry.run({ task_id: fence.taskId, available_at_ms: now, lease_expires_at_ms: null });
  // The line other processes' listeners read: the task is claimable again.
  const { authKey, taskId, owner } = fence;
  sql.insertAudit.run(
    auditToRow(
      auditLine({ at: now, surface: 'transition', decision: 'RELEASE_LEASE', authKey, taskId, correlationId, record: released, detail: `release ${owner}` }),
    ),
  );
  return true;
}

/** Outbox entries not yet closed, due or not. */
export function pendingIn(sql: Statements): number {
  return (sql.countPending.get() as { n: number }).n;
}
