import type pg from 'pg';
import { isStatementError } from './connection.js';
import { callText, callWith, ensurePrepared, GENERIC_PLANS, pastStaleStatements, prepared, withLiterals, type Call } from './prepared.js';
import { noticesStatement, type Notice } from './listener.js';
import { ClosingRefused, inOneRoundTrip, inTwoRoundTrips, onPreparedClient } from './transactions.js';
import { Batcher, MemberQueue } from '../batcher.js';

/**
 * Group commit for the PostgreSQL store's one-message writes (admission, status writes,
 * cancellation). Concurrent writes share one transaction and one round trip: while `inFlight`
 * batches are at the server, new writes queue, and the next batch takes the whole queue. One
 * write alone goes out at once, as before; under load a commit and a round trip are paid once
 * per batch instead of once per write.
 *
 * What each write keeps:
 * - its own decision: its statements run in order inside the batch, and each statement sees
 *   what the writes before it wrote (READ COMMITTED takes a snapshot per statement), so two
 *   admissions of one idempotency key in one batch are a create and a replay, and a bound
 *   counts the tasks admitted just before it;
 * - nothing acknowledged before its commit: every write of a batch resolves after COMMIT;
 * - no deadlocks between batches: the advisory locks of every write are taken first, in one
 *   order (their 64-bit hashes), and writes run in `orderKey` order, so two batches that touch
 *   the same task rows lock them in the same order;
 * - no write failed by another: a write's parameters are checked while its statements are
 *   built, before it joins (prepared.ts `sqlLiteral`, row.ts `toJson`: a NUL or a lone
 *   surrogate is its caller's `INVALID_INPUT`); when the batch still fails as a whole with an
 *   error PostgreSQL reported about it (`isStatementError`: one write's statement failed, or
 *   the message was refused, and nothing of the batch is stored), each write runs again alone
 *   in its own transaction and gets its own answer. An outage (the connection lost or refused,
 *   the outcome unknown) fails every write of the batch, as it would fail a write sent alone.
 */

/**
 * One write: its statements, run in order inside the batch's transaction. Each is plain SQL or
 * the call of a prepared statement with literals (prepared.ts `Call`), whose text is formed when
 * the batch is sent: the connection prepares the statement first (or, behind a pooler, the call
 * goes to the statement's function, else as its text).
 */
export interface BatchedWrite {
  statements: ReadonlyArray<string | Call>;
  /** Advisory lock keys (text) the statements take; the batch takes them all first, sorted. */
  locks: readonly string[];
  /** Writes of one batch run in this order (admissions before status writes, tasks by id). */
  orderKey: string;
  /** Notifications to send inside the batch's transaction, made from the write's results (see {@link Announcement}). */
  announce?: Announcement;
}

/**
 * What a write announces from inside its transaction: `notices` makes the notifications of its
 * results (none when it changed nothing), and the batch sends them before its COMMIT, so they are
 * delivered when the write commits, by the server itself. `sent` tells the writer afterwards
 * whether they went: a batch whose notifications the server refused commits without them
 * (`ClosingRefused`), and the writer then sends them after the commit.
 */
export interface Announcement {
  notices(results: readonly pg.QueryResult[]): readonly Notice[];
  sent: boolean;
}

export interface WriteBatcherOptions {
  /** Batches at the server at once (default 2): one executes while the next is sent and decoded. */
  inFlight?: number;
  /** Most writes in one batch (default 64). */
  maxWrites?: number;
  /** Most SQL text in one batch (default 1 MiB); a larger write goes alone. */
  maxBytes?: number;
}

interface Queued {
  write: BatchedWrite;
  bytes: number;
  resolve: (results: pg.QueryResult[]) => void;
  reject: (error: unknown) => void;
}

/** The write batches of one store's pool (what each write keeps: see the top of this file). */
export class WriteBatcher {
  private readonly batcher: Batcher<Queued>;
  /** Batches at the server now. */
  private out = 0;

  constructor(
    private readonly pool: pg.Pool,
    options: WriteBatcherOptions = {},
    /**
     * Whether a write may announce from inside its transaction now: not while notifications this
     * process queued before it are still on their way, which it would overtake.
     */
    private readonly mayAnnounce: () => boolean = () => true,
  ) {
    this.batcher = new Batcher<Queued>(
      {
        // One write alone goes out at once, as before; the writes that arrive while `inFlight`
        // batches are out share the next.
        schedule: { at: 'once' },
        inFlight: options.inFlight ?? 2,
        maxBatch: options.maxWrites ?? 64,
        flush: async (batch) => {
          // A write alone while no other batch is out announces from inside its transaction (see
          // `Announcement`): the round trip that adds keeps no other write waiting. Under load,
          // writes are announced after their commit, where concurrent ones share one statement.
          const announcing = batch.length === 1 && this.out === 0 && this.mayAnnounce();
          this.out += 1;
          try {
            const results = await runTogether(this.pool, batch, announcing).catch((error: unknown) => {
              if (!(error instanceof ClosingRefused)) throw error;
              // The server refused the notifications (its notification queue full, a payload too
              // long): the same write again, committed without them; its writer sends them after
              // the commit. Anything else (the connection lost, the outcome unknown) is the write's.
              if (!isStatementError(error.reason)) throw error.reason;
              return runTogether(this.pool, batch, false);
            });
            for (const [i, q] of batch.entries()) q.resolve(results[i] as pg.QueryResult[]);
          } finally {
            this.out -= 1;
          }
        },
        // Rolled back as a whole for one write's statement: each write on its own, so that only
        // the failing one fails.
        isMemberError: isStatementError,
        fail: (batch, error) => {
          for (const q of batch) q.reject(error);
        },
      },
      new MemberQueue<Queued>((q) => q.bytes, options.maxBytes ?? 1 << 20),
    );
  }

  /** Runs `write` in the next batch; resolves with the results of its statements once committed. */
  run(write: BatchedWrite): Promise<pg.QueryResult[]> {
    return new Promise((resolve, reject) => {
      const bytes = write.statements.reduce(
        (n, s) => n + (typeof s === 'string' ? s.length : s.literals.reduce((m, l) => m + l.length, s.statement.text.length)),
        0,
      );
      this.batcher.add({ write, bytes, resolve, reject });
    });
  }

  /** Resolves once no batch is queued or at the server. */
  drain(): Promise<void> {
    return this.batcher.drain();
  }
}

/**
 * The writes in one transaction, one round trip: their locks first, then each write's
 * statements in `orderKey` order; the results of each write's statements, in the order given.
 * A single statement without locks needs no transaction: it commits by itself.
 *
 * A statement that a migration left with other columns than its connection prepared it with,
 * or than its function behind a pooler was made with, fails the transaction, which stores
 * nothing: the batch is then sent again, prepared again or its statements formed anew
 * (`pastStaleStatements`), so the writes of an older process outlive the migration.
 */
async function runTogether(pool: pg.Pool, batch: Queued[], announcing: boolean): Promise<pg.QueryResult[][]> {
  return pastStaleStatements(() => sendTogether(pool, batch, announcing));
}

/** `runTogether`'s message, its statements formed now (and with `announcing`, the notifications of its writes before COMMIT). */
async function sendTogether(pool: pg.Pool, batch: Queued[], announcing: boolean): Promise<pg.QueryResult[][]> {
  const textOf = (s: string | Call) => (typeof s === 'string' ? s : callText(s, pool));
  const needed = new Set(batch.flatMap((q) => q.write.statements.flatMap((s) => (typeof s === 'string' ? [] : [s.statement]))));
  // A statement that must keep its generic plan (prepared.ts `prepared`): every statement of the
  // batch does, as the writes batched with it (point writes by key) do anyway.
  const generic = [...needed].some((statement) => statement.generic);
  // Run on the connection before the message goes: reads `needed` then, the batch's lock statement included.
  const prepare = (client: pg.PoolClient) => ensurePrepared(client, [...needed]);
  const announced = announcing ? batch.filter((q) => q.write.announce !== undefined) : [];
  const only = batch.length === 1 && announced.length === 0 ? (batch[0] as Queued).write : null;
  if (only !== null && only.locks.length === 0 && only.statements.length === 1) {
    const text = textOf(only.statements[0] as string | Call);
    if (!generic) return [[await onPreparedClient(pool, text, prepare)]];
    // Two statements in one message: one implicit transaction, the setting local to it.
    const answers = (await onPreparedClient(pool, `${GENERIC_PLANS};\n${text}`, prepare)) as unknown as pg.QueryResult[];
    return [[answers[1] as pg.QueryResult]];
  }
  const ordered = [...batch].sort((a, b) => (a.write.orderKey < b.write.orderKey ? -1 : a.write.orderKey > b.write.orderKey ? 1 : 0));
  const locks = [...new Set(ordered.flatMap((q) => q.write.locks))];
  if (locks.length > 0) needed.add(preparedLockAll);
  // An array of strings always has its literal.
  const lockCall = locks.length === 0 ? [] : [callWith(preparedLockAll, [locks]) as Call];
  const settings = generic ? [GENERIC_PLANS] : [];
  const statements = [...settings, ...[...lockCall, ...ordered.flatMap((q) => q.write.statements)].map(textOf)];
  const byWrite = new Map<Queued, pg.QueryResult[]>();
  const split = (results: readonly pg.QueryResult[]) => {
    let at = settings.length + lockCall.length;
    for (const q of ordered) {
      byWrite.set(q, results.slice(at, at + q.write.statements.length));
      at += q.write.statements.length;
    }
  };
  if (announced.length === 0) {
    split(await inOneRoundTrip(pool, statements, prepare));
    return batch.map((q) => byWrite.get(q) as pg.QueryResult[]);
  }
  // The writes, then their notifications with COMMIT: delivered as the writes commit.
  const sending: Announcement[] = [];
  await inTwoRoundTrips(pool, statements, prepare, (results) => {
    split(results);
    const notices: Notice[] = [];
    for (const q of ordered) {
      const announce = q.write.announce;
      if (announce === undefined) continue;
      const made = announce.notices(byWrite.get(q) as pg.QueryResult[]);
      if (made.length === 0) continue;
      notices.push(...made);
      sending.push(announce);
    }
    const statement = notices.length === 0 ? null : noticesStatement(notices);
    // Without a statement (no literal) the writes commit alone, and their writers send after.
    if (statement === null) sending.length = 0;
    return statement === null ? [] : [statement];
  });
  for (const announce of sending) announce.sent = true;
  return batch.map((q) => byWrite.get(q) as pg.QueryResult[]);
}

/** The batch's own statement. */
const batchSql = {
  /** The advisory locks of the keys in $1 (a text array), in the order of their 64-bit hashes. */
  lockAll: `SELECT pg_advisory_xact_lock(h) FROM (SELECT DISTINCT hashtextextended(k, 0) AS h FROM unnest($1::text[]) AS k) AS keys ORDER BY h`,
} as const;

/**
 * A batch's locks as a prepared statement: parsed and planned once per connection, where the
 * statement text of `lockAll` was parsed and planned for every batch (the planner's share of the
 * server's work in the lifecycle, measured with perf, went mostly to it).
 */
const preparedLockAll = prepared(batchSql.lockAll);

/**
 * The statement of `batchSql.lockAll` with the keys written in, for a transaction of its own
 * (the slow path of an admission) and for pgbench: a statement of its own, so the statements
 * after it take their snapshots once the locks are held.
 */
export function lockAll(keys: readonly string[]): string {
  // An array of strings always has its literal.
  return withLiterals(batchSql.lockAll, [keys]) as string;
}
