import pg from 'pg';
import { TasklatchError } from '../../core/errors.js';

/** Where a store URL points, with tasklatch's own `?schema=` parameter taken out. */
export interface PostgresTarget {
  /** The URL as pg should see it: without `schema`. */
  connectionString: string;
  /** The schema holding tasklatch's tables, or null for the server's search_path. */
  schema: string | null;
  /** `host:port`, for messages (never the password). */
  address: string;
  /** Startup `options` given in the URL (`?options=-c …`), kept alongside the search_path. */
  options: string | null;
}

// Lowercase on purpose: the name travels unquoted in `-c search_path=…`, where PostgreSQL folds
// case, so an uppercase letter would silently name a different schema.
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/** Checks a schema name and returns it; throws INVALID_STORE_URL otherwise. */
export function checkSchemaName(schema: string): string {
  if (schema.startsWith('pg_')) {
    // PostgreSQL reserves the prefix; CREATE SCHEMA would fail deep inside the migration.
    throw new TasklatchError('INVALID_STORE_URL', `invalid schema name ${JSON.stringify(schema)}: the pg_ prefix is reserved by PostgreSQL`);
  }
  if (!SCHEMA_NAME.test(schema)) {
    throw new TasklatchError('INVALID_STORE_URL', `invalid schema name ${JSON.stringify(schema)}: use lowercase letters, digits and _ (at most 63)`);
  }
  return schema;
}

/** Splits a `postgres://` URL into what pg needs and tasklatch's `?schema=NAME`. */
export function parsePostgresUrl(url: string): PostgresTarget {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch (cause) {
    throw new TasklatchError('INVALID_STORE_URL', 'not a valid postgres:// URL', { cause });
  }
  const schemaParam = parsed.searchParams.get('schema');
  parsed.searchParams.delete('schema');
  // Taken out and passed on explicitly: pg would let our own `options` replace the URL's.
  const options = parsed.searchParams.get('options');
  parsed.searchParams.delete('options');
  const host = parsed.searchParams.get('host') ?? (parsed.hostname === '' ? 'localhost' : parsed.hostname);
  return {
    connectionString: parsed.toString(),
    schema: schemaParam === null || schemaParam === '' ? null : checkSchemaName(schemaParam),
    address: `${host}:${parsed.port === '' ? '5432' : parsed.port}`,
    options: options === null || options === '' ? null : options,
  };
}

/** Opens a pool whose every connection resolves unqualified names in `target.schema`. */
export function createPool(target: PostgresTarget, max: number): pg.Pool {
  const options = [target.options, target.schema === null ? null : `-c search_path=${target.schema}`].filter((o) => o !== null);
  const pool = new pg.Pool({
    connectionString: target.connectionString,
    max,
    // Without a bound an unreachable host hangs `open` for the OS TCP timeout (minutes).
    connectionTimeoutMillis: 10_000,
    // A startup parameter, not a SET on 'connect': it applies before the first query of every
    // connection, with no window in which a query could run against the wrong schema.
    ...(options.length === 0 ? {} : { options: options.join(' ') }),
  });
  // An idle client that loses its server emits 'error' on the pool; unhandled, that would
  // crash the process. The pool already discards the client; the next query reconnects.
  pool.on('error', () => undefined);
  // A server shutting down sends every connection a FATAL message, and pg emits it as an 'error'
  // event on the client, sometimes twice (the message, then the closed socket). A client that is
  // checked out, or that the pool has just released after the first one, has no listener for it
  // then, and the process would crash. The statement in flight fails instead, and its caller
  // handles that; every client gets a listener for its whole life.
  pool.on('connect', (client) => {
    client.on('error', () => undefined);
  });
  return pool;
}

/** Errors that mean the server could not be reached or refused the session. */
export function unavailable(target: PostgresTarget, cause: unknown): TasklatchError {
  const code = (cause as { code?: unknown } | null)?.code;
  const message = cause instanceof Error ? cause.message : String(cause);
  // Node reports a refused localhost connection as an AggregateError with an empty message.
  const detail = [message, typeof code === 'string' ? `(${code})` : ''].filter((part) => part !== '').join(' ');
  return new TasklatchError('STORE_UNAVAILABLE', `cannot connect to PostgreSQL at ${target.address}: ${detail}`, {
    cause,
  });
}

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
 */
export async function inOneRoundTrip(pool: pg.Pool, statements: readonly string[]): Promise<pg.QueryResult[]> {
  return onClient(pool, async (client) => {
    const results = (await client.query(['BEGIN', ...statements, 'COMMIT'].join(';\n'))) as unknown as pg.QueryResult[];
    return results.slice(1, 1 + statements.length);
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
 * with their parameters as literals (`withLiterals`); a statement in that message that fails
 * skips the rest (COMMIT included), and the error is thrown. When a parameter has no exact
 * literal, the same statements go one by one with their parameters instead.
 */
export class ShortTransaction {
  private state: 'new' | 'open' | 'done' = 'new';

  constructor(readonly client: pg.PoolClient) {}

  /** Runs a statement of the transaction; the first one begins it, in the same round trip. */
  async query<R extends pg.QueryResultRow>(text: string, params: readonly unknown[]): Promise<pg.QueryResult<R>> {
    this.mustNotBeDone();
    if (this.state === 'new') {
      this.state = 'open';
      const literal = withLiterals(text, params);
      if (literal !== null) return (await this.send<R>(['BEGIN', literal]))[1]!;
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
    const literals = statements.map((s) => withLiterals(s.text, s.params));
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

  /** Statements as one simple-protocol message; pg answers with each one's result (one alone is not in an array). */
  private async send<R extends pg.QueryResultRow>(statements: readonly string[]): Promise<pg.QueryResult<R>[]> {
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
 * `value` as a SQL literal, for statements sent without parameters; null when it has none that
 * reads back exactly as the parameter would (a number that is not a safe integer, an object), so
 * the caller keeps the parameterised path. An array of strings and safe integers is written as
 * pg writes an array parameter; the statement casts it as it casts the parameter.
 */
export function sqlLiteral(value: unknown): string | null {
  if (value === null || value === undefined) return 'NULL';
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (typeof value === 'number') return Number.isSafeInteger(value) ? String(value) : null;
  if (typeof value === 'string') return pg.escapeLiteral(value);
  if (Array.isArray(value)) {
    const elements = value.map(arrayElement);
    return elements.some((element) => element === null) ? null : pg.escapeLiteral(`{${elements.join(',')}}`);
  }
  return null;
}

/**
 * An element of an array literal as pg writes an array parameter (`{"a","b"}`, NULL unquoted),
 * so that the literal reads back as the parameter would; null for anything but a string, a safe
 * integer or null.
 */
function arrayElement(value: unknown): string | null {
  if (value === null || value === undefined) return 'NULL';
  if (typeof value === 'number' && !Number.isSafeInteger(value)) return null;
  if (typeof value !== 'string' && typeof value !== 'number') return null;
  return `"${String(value).replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

/** `text` with each `$n` replaced by the literal of `params[n - 1]`; null when one has none. */
export function withLiterals(text: string, params: readonly unknown[]): string | null {
  const literals = params.map((value) => sqlLiteral(value));
  if (literals.some((literal) => literal === null)) return null;
  return text.replace(/\$(\d+)/g, (whole, n: string) => literals[Number(n) - 1] ?? whole);
}
