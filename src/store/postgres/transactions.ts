import pg from 'pg';
import { TasklatchError } from '../../core/errors.js';
import { ensurePrepared, executeCall, prepared, type Prepared } from './connection.js';

/**
 * How the PostgreSQL store's statements become transactions: one on a checked-out client
 * (`inTransaction`), one message (`inOneRoundTrip`), one begun with its first read and committed
 * with its last writes (`ShortTransaction`), and concurrent writes sharing one (`WriteBatcher`).
 */
/**
 * Runs `work` in one transaction on one checked-out client: BEGIN, COMMIT, ROLLBACK on any
 * error, and the client always goes back to the pool.
 */
export async function inTransaction<T>(
  pool: pg.Pool,
  work: (client: pg.PoolClient) => Promise<T>,
  /** Statements without parameters to send with BEGIN in the same round trip (simple protocol). */
  prelude?: (client: pg.PoolClient) => string[],
): Promise<T> {
  return onClient(pool, async (client) => {
    await client.query(['BEGIN', ...(prelude?.(client) ?? [])].join('; '));
    const value = await work(client);
    await client.query('COMMIT');
    return value;
  });
}

/**
 * Runs `statements` (plain SQL, no parameters) as one transaction in one round trip: BEGIN, the
 * statements and COMMIT go to the server as one simple-protocol message, and it answers with
 * each statement's result. A statement that fails skips the rest; the transaction is then rolled
 * back and the error thrown. Returns the results of `statements` (without BEGIN and COMMIT).
 * `before` runs first on the checked-out client (to prepare statements the message executes).
 */
export async function inOneRoundTrip(
  pool: pg.Pool,
  statements: readonly string[],
  before?: (client: pg.PoolClient) => Promise<void>,
): Promise<pg.QueryResult[]> {
  return onClient(pool, async (client) => {
    await before?.(client);
    const results = (await client.query(['BEGIN', ...statements, 'COMMIT'].join(';\n'))) as unknown as pg.QueryResult[];
    return results.slice(1, 1 + statements.length);
  });
}

/** One plain statement that commits by itself, on a client `before` has run on. */
export async function onPreparedClient(pool: pg.Pool, statement: string, before: (client: pg.PoolClient) => Promise<void>): Promise<pg.QueryResult> {
  return onClient(pool, async (client) => {
    await before(client);
    return client.query(statement);
  });
}

/** A statement with its parameters. */
export interface Statement {
  text: string;
  params: readonly unknown[];
}

/**
 * Runs `work` in one transaction whose first statement goes to the server together with BEGIN,
 * and whose last statements may go together with COMMIT ({@link ShortTransaction}): a
 * transaction of one read and one write takes two round trips, not four. ROLLBACK on any error,
 * and the client always goes back to the pool.
 */
export async function inShortTransaction<T>(pool: pg.Pool, work: (tx: ShortTransaction) => Promise<T>): Promise<T> {
  return onClient(pool, async (client) => {
    const tx = new ShortTransaction(client);
    const value = await work(tx);
    await tx.commit();
    return value;
  });
}

/**
 * One transaction on a checked-out client, begun with its first statement and committed with
 * its last ones. Statements that travel with BEGIN or COMMIT go as one simple-protocol message
 * as `EXECUTE` of statements the connection prepared once, parameters as literals; a statement in that message that fails
 * skips the rest (COMMIT included), and the error is thrown. When a parameter has no exact
 * literal, the same statements go one by one with their parameters instead.
 */
export class ShortTransaction {
  private state: 'new' | 'open' | 'done' = 'new';
  /** Prepared statements the next message executes (the client prepares them first, once). */
  private needed: Prepared[] = [];

  constructor(readonly client: pg.PoolClient) {}

  /** Runs a statement of the transaction; the first one begins it, in the same round trip. */
  async query<R extends pg.QueryResultRow>(text: string, params: readonly unknown[]): Promise<pg.QueryResult<R>> {
    this.mustNotBeDone();
    if (this.state === 'new') {
      this.state = 'open';
      const call = this.call(text, params);
      if (call !== null) return (await this.send<R>(['BEGIN', call]))[1]!;
      await this.client.query('BEGIN');
    }
    return this.client.query<R>(text, params as unknown[]);
  }

  /**
   * Runs `statements` and commits, in one round trip when each parameter has a literal; their
   * results. Nothing is acknowledged before the COMMIT's answer: a failure of either is thrown.
   */
  async commitWith(statements: readonly Statement[]): Promise<pg.QueryResult[]> {
    this.mustNotBeDone();
    const literals = statements.map((s) => this.call(s.text, s.params));
    if (literals.every((literal) => literal !== null)) {
      const begin = this.state === 'new' ? ['BEGIN'] : [];
      this.state = 'done';
      const results = await this.send([...begin, ...literals, 'COMMIT']);
      return results.slice(begin.length, begin.length + statements.length);
    }
    const results: pg.QueryResult[] = [];
    for (const s of statements) results.push(await this.query(s.text, s.params));
    await this.commit();
    return results;
  }

  /** Commits, unless the transaction never began or was committed already. */
  async commit(): Promise<void> {
    const begun = this.state === 'open';
    this.state = 'done';
    if (begun) await this.client.query('COMMIT');
  }

  /**
   * `EXECUTE` of the statement prepared from `text`, with `params` as literals (parsed and
   * planned once per connection, not per claim); null when a parameter has no exact literal.
   */
  private call(text: string, params: readonly unknown[]): string | null {
    const statement = prepared(text);
    const call = executeCall(statement, params);
    if (call !== null) this.needed.push(statement);
    return call;
  }

  /** Statements as one simple-protocol message; pg answers with each one's result (one alone is not in an array). */
  private async send<R extends pg.QueryResultRow>(statements: readonly string[]): Promise<pg.QueryResult<R>[]> {
    if (this.needed.length > 0) {
      await ensurePrepared(this.client, this.needed);
      this.needed = [];
    }
    const answer = (await this.client.query(statements.join(';\n'))) as unknown as pg.QueryResult<R> | pg.QueryResult<R>[];
    return Array.isArray(answer) ? answer : [answer];
  }

  private mustNotBeDone(): void {
    if (this.state === 'done') throw new TasklatchError('INTERNAL', 'statement after the transaction ended');
  }
}

/**
 * Runs `work` on one checked-out client that began a transaction: ROLLBACK on any error, and the
 * client always goes back to the pool.
 */
async function onClient<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    return await work(client);
  } catch (error) {
    try {
      await client.query('ROLLBACK');
    } catch (rollbackError) {
      // A client that cannot roll back is in an unknown state: destroy it instead of reusing it.
      broken = rollbackError as Error;
    }
    throw error;
  } finally {
    client.release(broken);
  }
}

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
 * - no write failed by another: when the batch fails as a whole with a database error (one
 *   write's statement failed and PostgreSQL rolled back all of them), each write runs again
 *   alone in its own transaction and gets its own answer. An error of the connection (the
 *   outcome unknown) fails every write of the batch, as it would fail a write sent alone.
 */

/** One write: plain SQL (literals, no parameters), run in order inside the batch's transaction. */
export interface BatchedWrite {
  statements: readonly string[];
  /** Advisory lock keys (text) the statements take; the batch takes them all first, sorted. */
  locks: readonly string[];
  /** Writes of one batch run in this order (admissions before status writes, tasks by id). */
  orderKey: string;
  /** The prepared statements `statements` execute; the connection prepares them first. */
  prepared: readonly Prepared[];
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

export class WriteBatcher {
  private readonly inFlight: number;
  private readonly maxWrites: number;
  private readonly maxBytes: number;
  private queue: Queued[] = [];
  private running = 0;
  private readonly idle = new Set<() => void>();

  constructor(
    private readonly pool: pg.Pool,
    options: WriteBatcherOptions = {},
  ) {
    this.inFlight = Math.max(1, options.inFlight ?? 2);
    this.maxWrites = Math.max(1, options.maxWrites ?? 64);
    this.maxBytes = options.maxBytes ?? 1 << 20;
  }

  /** Runs `write` in the next batch; resolves with the results of its statements once committed. */
  run(write: BatchedWrite): Promise<pg.QueryResult[]> {
    return new Promise((resolve, reject) => {
      const bytes = write.statements.reduce((n, s) => n + s.length, 0);
      this.queue.push({ write, bytes, resolve, reject });
      this.pump();
    });
  }

  /** Resolves once no batch is queued or at the server. */
  async drain(): Promise<void> {
    if (this.running === 0 && this.queue.length === 0) return;
    await new Promise<void>((resolve) => this.idle.add(resolve));
  }

  private pump(): void {
    while (this.running < this.inFlight && this.queue.length > 0) {
      const batch = this.take();
      this.running++;
      void this.send(batch).finally(() => {
        this.running--;
        this.pump();
        if (this.running === 0 && this.queue.length === 0) {
          for (const done of this.idle) done();
          this.idle.clear();
        }
      });
    }
  }

  /** The oldest queued writes, up to the bounds (always at least one). */
  private take(): Queued[] {
    let bytes = 0;
    let n = 0;
    while (n < this.queue.length && n < this.maxWrites) {
      const next = this.queue[n] as Queued;
      if (n > 0 && bytes + next.bytes > this.maxBytes) break;
      bytes += next.bytes;
      n++;
    }
    return this.queue.splice(0, n);
  }

  private async send(batch: Queued[]): Promise<void> {
    try {
      const results = await runTogether(this.pool, batch);
      for (const [i, q] of batch.entries()) q.resolve(results[i] as pg.QueryResult[]);
    } catch (error) {
      if (batch.length === 1 || !isDatabaseError(error)) {
        for (const q of batch) q.reject(error);
        return;
      }
      // Rolled back as a whole: each write on its own, so that only the failing one fails.
      await Promise.all(batch.map((q) => runTogether(this.pool, [q]).then((r) => q.resolve(r[0] as pg.QueryResult[]), q.reject)));
    }
  }
}

/**
 * The writes in one transaction, one round trip: their locks first, then each write's
 * statements in `orderKey` order; the results of each write's statements, in the order given.
 * A single statement without locks needs no transaction: it commits by itself.
 */
async function runTogether(pool: pg.Pool, batch: Queued[]): Promise<pg.QueryResult[][]> {
  const prepare = (client: pg.PoolClient) => ensurePrepared(client, [...new Set(batch.flatMap((q) => q.write.prepared))]);
  const only = batch.length === 1 ? (batch[0] as Queued).write : null;
  if (only !== null && only.locks.length === 0 && only.statements.length === 1) return [[await onPreparedClient(pool, only.statements[0] as string, prepare)]];
  const ordered = [...batch].sort((a, b) => (a.write.orderKey < b.write.orderKey ? -1 : a.write.orderKey > b.write.orderKey ? 1 : 0));
  const locks = [...new Set(ordered.flatMap((q) => q.write.locks))];
  const statements = [...(locks.length === 0 ? [] : [lockAll(locks)]), ...ordered.flatMap((q) => q.write.statements)];
  const results = await inOneRoundTrip(pool, statements, prepare);
  const byWrite = new Map<Queued, pg.QueryResult[]>();
  let at = locks.length === 0 ? 0 : 1;
  for (const q of ordered) {
    byWrite.set(q, results.slice(at, at + q.write.statements.length));
    at += q.write.statements.length;
  }
  return batch.map((q) => byWrite.get(q) as pg.QueryResult[]);
}

/**
 * Takes every advisory lock of a batch, in the order of the keys' 64-bit hashes: a statement of
 * its own, so the statements after it take their snapshots once the locks are held.
 */
export function lockAll(keys: readonly string[]): string {
  const literals = keys.map((k) => pg.escapeLiteral(k)).join(', ');
  return `SELECT pg_advisory_xact_lock(h) FROM (SELECT DISTINCT hashtextextended(k, 0) AS h FROM unnest(ARRAY[${literals}]::text[]) AS k) AS keys ORDER BY h`;
}

/** An error PostgreSQL reported (it has an SQLSTATE), as opposed to a lost or refused connection. */
function isDatabaseError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  const severity = (error as { severity?: unknown } | null)?.severity;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) && typeof severity === 'string' && !code.startsWith('08') && !code.startsWith('57P');
}
