import type pg from 'pg';
import { resultDigest } from '../../core/digest.js';
import { claimDetail, decideDispatch, type DispatchStep } from '../../core/dispatch-rules.js';
import { coerceError, TasklatchError } from '../../core/errors.js';
import type { Fence, Millis, TaskRecord } from '../../core/types.js';
import { versionGrantLists } from '../../core/version-rules.js';
import type { ClaimInput } from '../types.js';
import { inShortTransaction, type ShortTransaction, type Statement } from './transactions.js';
import type { Change } from './listener.js';
import { admitSlots } from './concurrency.js';
import { readById } from './reads.js';
import { appliedTaskRow, isInt4, rowToRecord, toJson, type TaskRow } from './row.js';
import { sql } from './statements.js';

/**
 * The dispatch operations of the PostgreSQL store. A claim walk runs in one short transaction
 * (`claimWalk`); heartbeat, release and the count of open entries are single statements. Each outbox entry due is looked at
 * once, in (available_at, id) order, until `limit` claims, and what happens to it is the core's
 * `decideDispatch`.
 */

/** A claim `claimTasks` wrote: its entry's id and the task as JSON. */
interface ClaimedRow {
  /** bigint columns arrive as strings; ids are passed back to PostgreSQL as they came. */
  outbox_id: string;
  task: TaskRow;
}

/** An outbox entry of the claim walk, with its task as JSON (dispatch-statements.ts `dueOutbox`). */
interface DueRow extends ClaimedRow {
  outbox_available_at_ms: string;
}

/** What the walk did with one entry, and the record when it claimed the task. */
interface Visit {
  step: DispatchStep;
  claimed: TaskRecord | null;
}

/** A claim the walk decided on: the entry and its task as read. */
interface Claim {
  outboxId: string;
  record: TaskRecord;
}

/** What a claim walk did: the tasks it claimed, and how many claims its committed last write refused. */
interface ClaimWalk {
  claimed: TaskRecord[];
  /**
   * Claims the guard refused in the write sent with COMMIT (`fast`), so that they could not be
   * judged again inside the transaction; the caller walks again with `fast` off.
   */
  refused: number;
}

/**
 * The planner's setting for a claim walk's transaction: no sequential scans where an index can
 * serve. A connection keeps the plan of the walk's locking read (the outbox in dispatch order,
 * each entry's task by its id) that it chose on its first walks, while the tables were small;
 * where autovacuum never analyzes them nothing tells the planner they grew, and the plan chosen
 * for a small table read every task for each entry walked. Every execution of the walk's
 * statements runs under this setting, so the plan a connection keeps is chosen under it too.
 */
export const CLAIM_SETTINGS = ['SET LOCAL enable_seqscan = off'];

/**
 * Claims up to `input.limit` due tasks: one walk, and a second when the guard refused a claim
 * in the write that committed the first. The tasks the walks ended (attempts used up) are added
 * to `abandoned`; `onProblem` hears of a second walk that failed after the first claimed tasks.
 */
export async function claimIn(
  pool: pg.Pool,
  input: ClaimInput,
  abandoned: Change[],
  onProblem: (message: string, fields: Record<string, unknown>) => void,
): Promise<TaskRecord[]> {
  const walk = await walkCommitted(pool, input, abandoned, true);
  let claimed = walk.claimed;
  if (walk.refused > 0) {
    // The guard refused a claim in the write that committed, where it could not be judged
    // again; a second walk keeps every write before its COMMIT and judges such an entry anew.
    try {
      const again = await walkCommitted(pool, Object.assign({}, input, { limit: input.limit - claimed.length }), abandoned, false);
      claimed = [...claimed, ...again.claimed];
    } catch (error) {
      // The first walk's claims are committed: returned, they run now instead of after their leases.
      if (claimed.length === 0) throw error;
      onProblem('second claim walk failed', { claimed: claimed.length, reason: coerceError(error).message });
    }
  }
  return claimed;
}

/**
 * SQLSTATEs of a transaction PostgreSQL rolled back whole to break a deadlock or a serialization
 * conflict: nothing of it is stored, so the walk runs again at once, as the claimer's next poll
 * would, instead of failing the claim. Up to WALK_ATTEMPTS walks; then the error is thrown.
 */
const ROLLED_BACK_WHOLE = new Set(['40P01', '40001']);
const WALK_ATTEMPTS = 3;

/** One claim walk in its own transaction, run again when PostgreSQL rolled it back whole; what it abandoned is added once it committed. */
async function walkCommitted(pool: pg.Pool, input: ClaimInput, abandoned: Change[], fast: boolean): Promise<ClaimWalk> {
  for (let attempt = 1; ; attempt++) {
    const ended: Change[] = [];
    try {
      // A walk that runs again (inShortTransaction) keeps nothing of the run that failed.
      const walk = await inShortTransaction(
        pool,
        (tx) => {
          ended.length = 0;
          return claimWalk(tx, input, ended, fast);
        },
        CLAIM_SETTINGS,
      );
      abandoned.push(...ended);
      return walk;
    } catch (error) {
      const code = (error as { code?: unknown } | null)?.code;
      if (attempt >= WALK_ATTEMPTS || typeof code !== 'string' || !ROLLED_BACK_WHOLE.has(code)) throw error;
    }
  }
}

/**
 * Claims up to `input.limit` due tasks; the tasks it ended (attempts used up) are added to
 * `abandoned`. The first page's read begins the transaction in the same round trip; with `fast`,
 * the writes of the page that ends the walk go with COMMIT in one round trip, so that a walk of
 * one page takes two round trips.
 */
async function claimWalk(tx: ShortTransaction, input: ClaimInput, abandoned: Change[], fast: boolean): Promise<ClaimWalk> {
  const { client } = tx;
  const claimed: TaskRecord[] = [];
  // A keyset, not OFFSET: entries the walk leaves in place (a task in input_required) must not
  // come back in the next page, or a page full of them would loop forever.
  let after: { availableAt: Millis | string; id: string } = { availableAt: Number.MIN_SAFE_INTEGER, id: '0' };
  // An entry claimed with leaseMs 0 stays due at `now` and could reappear after the keyset; a
  // walk decides on each entry once, so it is skipped.
  const visited = new Set<string>();
  // The version grants as the walk's statement takes them (null: any version).
  const lists = input.versions === undefined ? null : versionGrantLists(input.versions);
  const grants = lists === null ? [null, [], []] : [lists.own, lists.newest, lists.live];
  while (claimed.length < input.limit) {
    // A page no larger than what is still wanted: every row read is locked until commit, and a
    // row locked here is one other claimers skip.
    const wanted = input.limit - claimed.length;
    const filter = [input.now, after.availableAt, after.id, wanted, input.tools ?? null];
    const page =
      input.app === undefined
        ? await tx.query<DueRow>(sql.dueOutbox, [...filter, ...grants])
        : await tx.query<DueRow>(sql.dueOutboxOfApp, [...filter, input.app, ...grants]);
    const close: string[] = [];
    const defer: { id: string; until: Millis }[] = [];
    const claimable: Claim[] = [];
    for (const row of page.rows) {
      if (visited.has(row.outbox_id)) continue;
      visited.add(row.outbox_id);
      const record = rowToRecord(row.task);
      const step = decideDispatch(record, input.now, input.maxAttempts);
      // Claims are written together after the page; every other step as before, in walk order.
      if (step.kind === 'claim') {
        claimable.push({ outboxId: row.outbox_id, record });
        continue;
      }
      const visit: Visit = step.kind === 'abandon' ? await dispatchOne(client, input, row.outbox_id, record, abandoned) : { step, claimed: null };
      if (visit.claimed !== null) claimed.push(visit.claimed);
      // An abandon closed its entry in its own statement; a leave touches nothing.
      else if (visit.step.kind === 'close') close.push(row.outbox_id);
      else if (visit.step.kind === 'defer') defer.push({ id: row.outbox_id, until: visit.step.until });
    }
    // Tasks of a concurrency key whose slots are taken stay due (concurrency.ts).
    const slotted = await admitSlots(client, input, claimable);
    const claims = slotted.take;
    const writes: Statement[] = [];
    if (claims.length > 0) writes.push({ text: sql.claimTasks, params: claimParams(input, claims) });
    if (close.length > 0) writes.push({ text: sql.closeOutboxEntries, params: [close, input.now] });
    if (defer.length > 0) writes.push({ text: sql.deferOutboxEntries, params: [defer.map((d) => d.id), defer.map((d) => d.until)] });
    if (slotted.waiting !== null) writes.push(slotted.waiting);
    // A short page means no more entries are due that this transaction can lock; a page whose
    // claims all hold fills the limit. Either way nothing follows these writes but COMMIT.
    const last = page.rows.at(-1);
    const ends = last === undefined || page.rows.length < wanted || claimed.length + claims.length >= input.limit;
    if (fast && ends) {
      const results = await tx.commitWith(writes);
      const taken = claims.length === 0 ? [] : inWalkOrder(claims, results[0]!.rows as ClaimedRow[]);
      claimed.push(...taken.filter((record) => record !== null));
      return { claimed, refused: taken.filter((record) => record === null).length };
    }
    for (const [i, write] of writes.entries()) {
      const result = await client.query<ClaimedRow>(write.text, write.params as unknown[]);
      if (i === 0 && claims.length > 0) claimed.push(...(await rejudged(client, input, claims, result.rows, abandoned)));
    }
    if (last === undefined || page.rows.length < wanted) break;
    after = { availableAt: last.outbox_available_at_ms, id: last.outbox_id };
  }
  return { claimed, refused: 0 };
}

/**
 * $1–$8 of `claimTasks` for the claims of one page: each the same conditional write on the
 * version its walk read, with its audit detail (a takeover when the walk read another's lapsed lease). The tasks are locked by this transaction, so the guard holds for each.
 */
function claimParams(input: ClaimInput, claims: readonly Claim[]): unknown[] {
  return [
    claims.map((c) => c.record.taskId),
    claims.map((c) => c.record.version),
    claims.map((c) => c.outboxId),
    input.now,
    input.correlationId,
    claims.map((c) => claimDetail(c.record, input.owner)),
    input.owner,
    input.now + input.leaseMs,
  ];
}

/** The records `claimTasks` wrote, in walk order; null for a claim whose guard refused it. */
function inWalkOrder(claims: readonly Claim[], rows: readonly ClaimedRow[]): (TaskRecord | null)[] {
  const byOutbox = new Map(rows.map((row) => [String(row.outbox_id), rowToRecord(row.task)]));
  return claims.map((c) => byOutbox.get(c.outboxId) ?? null);
}

/**
 * The claims of one page as `claimTasks` wrote them, in walk order; one that the guard refused
 * all the same is read and judged again on its own (`dispatchOne`), inside the transaction.
 */
async function rejudged(
  client: pg.PoolClient,
  input: ClaimInput,
  claims: readonly Claim[],
  rows: readonly ClaimedRow[],
  abandoned: Change[],
): Promise<TaskRecord[]> {
  const written = inWalkOrder(claims, rows);
  const out: TaskRecord[] = [];
  for (const [i, { outboxId, record }] of claims.entries()) {
    const taken = written[i] ?? (await dispatchOne(client, input, outboxId, record, abandoned)).claimed;
    if (taken !== null) out.push(taken);
  }
  return out;
}

/**
 * Decides (`decideDispatch`) on one entry whose task (locked by this transaction) reads `read`
 * and applies a claim or an abandon. The task write is conditional all the same; should it
 * change nothing, the task is read again and judged again once, and a second miss is a bug, not
 * a race.
 */
async function dispatchOne(client: pg.PoolClient, input: ClaimInput, outboxId: string, read: TaskRecord, abandoned: Change[]): Promise<Visit> {
  let task: TaskRecord | null = read;
  for (let look = 0; look < 2; look++) {
    const step = decideDispatch(task, input.now, input.maxAttempts);
    if (task === null || (step.kind !== 'claim' && step.kind !== 'abandon')) return { step, claimed: null };
    const written = await writeDispatch(client, input, outboxId, task, step.kind);
    if (written !== null && step.kind === 'abandon') abandoned.push({ taskId: written.taskId, version: written.version });
    if (written !== null) return { step, claimed: step.kind === 'claim' ? written : null };
    task = await readById(client, task.taskId);
  }
  throw new TasklatchError('INTERNAL', `task ${JSON.stringify(read.taskId)} changed during its claim`);
}

/** The claim, or the end of a task that used up its attempts; null when the guard failed. */
async function writeDispatch(
  client: pg.PoolClient,
  input: ClaimInput,
  outboxId: string,
  task: TaskRecord,
  kind: 'claim' | 'abandon',
): Promise<TaskRecord | null> {
  const common = [task.taskId, task.version, input.now, outboxId, input.correlationId];
  const written =
    kind === 'abandon'
      ? await client.query(sql.abandonTask, [...common, 'abandoned', toJson(input.abandonedResult), resultDigest(input.abandonedResult)])
      : await client.query(sql.claimTask, [...common, claimDetail(task, input.owner), input.owner, input.now + input.leaseMs]);
  const row = appliedTaskRow(written);
  return row === undefined ? null : rowToRecord(row);
}

export async function heartbeatIn(pool: pg.Pool, fence: Fence, now: Millis, leaseMs: number): Promise<boolean> {
  if (!isInt4(fence.version)) return false;
  const renewed = await pool.query(sql.heartbeat, [...fenceParams(fence), now, now + leaseMs]);
  return renewed.rows.length > 0;
}

/** Gives a fenced lease back; the task and its (unchanged) version when the fence held, else null. */
export async function releaseIn(pool: pg.Pool, fence: Fence, now: Millis, correlationId: string): Promise<Change | null> {
  if (!isInt4(fence.version)) return null;
  const released = await pool.query<{ task_id: string; version: number }>(sql.releaseLease, [...fenceParams(fence), now, correlationId]);
  const row = released.rows[0];
  return row === undefined ? null : { taskId: row.task_id, version: row.version };
}

/** $1–$4 of the fence guard; a version no integer column holds was refused before. */
function fenceParams(fence: Fence): unknown[] {
  return [fence.taskId, fence.authKey, fence.version, fence.owner];
}

/** Outbox entries not yet closed, due or not. */
export async function pendingIn(pool: pg.Pool): Promise<number> {
  const counted = await pool.query<{ n: number }>(sql.countPending);
  return counted.rows[0]?.n ?? 0;
}
