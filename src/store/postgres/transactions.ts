import type pg from 'pg';
import { TasklatchError } from '../../core/errors.js';
import { ensurePrepared, executeCall, pastStaleStatements, prepared, type Prepared } from './prepared.js';

/**
 * How the PostgreSQL store's statements become transactions: one on a checked-out client
 * (`inTransaction`), one message (`inOneRoundTrip`), and one begun with its first read and
 * committed with its last writes (`ShortTransaction`). Concurrent writes share one through
 * `WriteBatcher` (write-batcher.ts), which sends its batches with `inOneRoundTrip`.
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

/**
 * The closing message of `inTwoRoundTrips` (its closing statements and COMMIT) failed with
 * `reason`: the transaction is rolled back where the server is still there to say so, and
 * where it refused a closing statement (a statement error), nothing of it is stored and its
 * first statements may run again without them.
 */
export class ClosingRefused extends Error {
  constructor(readonly reason: unknown) {
    super(`closing statements refused: ${reason instanceof Error ? reason.message : String(reason)}`);
  }
}

/**
 * `inOneRoundTrip` with statements formed from the answers before COMMIT: BEGIN and `statements`
 * go as one message, then what `closing` makes of their results goes with COMMIT as a second.
 * A failure of the closing message, when it carries statements, is a `ClosingRefused`.
 */
export async function inTwoRoundTrips(
  pool: pg.Pool,
  statements: readonly string[],
  before: (client: pg.PoolClient) => Promise<void>,
  closing: (results: pg.QueryResult[]) => readonly string[],
): Promise<pg.QueryResult[]> {
  return onClient(pool, async (client) => {
    await before(client);
    const answer = (await client.query(['BEGIN', ...statements].join(';\n'))) as unknown as pg.QueryResult[];
    const results = answer.slice(1, 1 + statements.length);
    const last = closing(results);
    try {
      await client.query([...last, 'COMMIT'].join(';\n'));
    } catch (error) {
      throw last.length > 0 ? new ClosingRefused(error) : error;
    }
    return results;
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
 *
 * A statement that a migration left with other columns than its connection prepared it with,
 * or than its function behind a pooler was made with, fails the transaction, which stores
 * nothing: `work` then runs again in a new transaction (`pastStaleStatements`). So `work` keeps
 * nothing of a failed run outside its transaction.
 */
export async function inShortTransaction<T>(
  pool: pg.Pool,
  work: (tx: ShortTransaction) => Promise<T>,
  /** Statements without parameters that go with BEGIN, ahead of the first statement (settings of the transaction). */
  settings: readonly string[] = [],
): Promise<T> {
  return pastStaleStatements(() =>
    onClient(pool, async (client) => {
      const tx = new ShortTransaction(client, ['BEGIN', ...settings]);
      const value = await work(tx);
      await tx.commit();
      return value;
    }),
  );
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

  constructor(
    readonly client: pg.PoolClient,
    /** What begins the transaction: BEGIN and any settings of the transaction after it. */
    private readonly opening: readonly string[] = ['BEGIN'],
  ) {}

  /** Runs a statement of the transaction; the first one begins it, in the same round trip. */
  async query<R extends pg.QueryResultRow>(text: string, params: readonly unknown[]): Promise<pg.QueryResult<R>> {
    this.mustNotBeDone();
    if (this.state === 'new') {
      this.state = 'open';
      const call = this.call(text, params);
      if (call !== null) return (await this.send<R>([...this.opening, call]))[this.opening.length]!;
      await this.client.query(this.opening.join(';\n'));
    }
    return this.client.query<R>(text, params as unknown[]);
  }

  /**
   * Runs `statements`, each a statement of its own (under READ COMMITTED each takes its snapshot
   * when it starts, so a read after a lock sees what committed before the lock was granted),
   * beginning the transaction if it has not begun: in one round trip when each parameter has a
   * literal, else one by one. Their results.
   */
  async queryAll(statements: readonly Statement[]): Promise<pg.QueryResult[]> {
    return this.run(statements, false);
  }

  /**
   * Runs `statements` and commits, in one round trip when each parameter has a literal; their
   * results. Nothing is acknowledged before the COMMIT's answer: a failure of either is thrown.
   */
  async commitWith(statements: readonly Statement[]): Promise<pg.QueryResult[]> {
    return this.run(statements, true);
  }

  /** `queryAll`, and `commitWith` when `commit`: one round trip when every parameter has a literal. */
  private async run(statements: readonly Statement[], commit: boolean): Promise<pg.QueryResult[]> {
    this.mustNotBeDone();
    const literals = statements.map((s) => this.call(s.text, s.params));
    if (literals.every((literal) => literal !== null)) {
      const begin = this.state === 'new' ? this.opening : [];
      this.state = commit ? 'done' : 'open';
      const results = await this.send([...begin, ...literals, ...(commit ? ['COMMIT'] : [])]);
      return results.slice(begin.length, begin.length + statements.length);
    }
    const results: pg.QueryResult[] = [];
    for (const s of statements) results.push(await this.query(s.text, s.params));
    if (commit) await this.commit();
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
    const call = executeCall(statement, params, this.client);
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
