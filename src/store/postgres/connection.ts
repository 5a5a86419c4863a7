import pg from 'pg';
import { isTasklatchError, TasklatchError } from '../../core/errors.js';
import { localSettings, markPooled, poolClient } from './pooled.js';
import { StatementFunctions } from './statement-functions.js';
import { withLiterals } from './prepared.js';

/**
 * How the PostgreSQL store connects: a store URL read into what pg needs and tasklatch's own
 * `?schema=`, pools whose every connection resolves names in that schema, and a lost or refused
 * connection raised as `STORE_UNAVAILABLE` naming host:port.
 */

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
  /**
   * `?pgbouncer=true`: the URL points at a pooler in transaction mode, where no session state
   * lasts beyond a transaction (see pooled.ts).
   */
  pgbouncer: boolean;
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

/**
 * A URL's host as messages name it: a Unix socket's directory written percent-encoded
 * (`postgres://user@%2Fvar%2Frun%2Fpostgresql/db`) is named as its path.
 */
function hostText(hostname: string): string {
  try {
    return decodeURIComponent(hostname);
  } catch {
    return hostname;
  }
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
  const pgbouncer = parsed.searchParams.get('pgbouncer');
  parsed.searchParams.delete('pgbouncer');
  if (pgbouncer !== null && pgbouncer !== 'true' && pgbouncer !== 'false') {
    throw new TasklatchError('INVALID_STORE_URL', `invalid pgbouncer=${JSON.stringify(pgbouncer)}: use pgbouncer=true or pgbouncer=false`);
  }
  if (pgbouncer === 'true' && options !== null && options !== '') {
    // A pooler in transaction mode either refuses the startup parameter or applies it to a session nothing keeps.
    throw new TasklatchError('INVALID_STORE_URL', 'options= cannot be used with pgbouncer=true: a pooled connection keeps no session settings');
  }
  const host = parsed.searchParams.get('host') ?? (parsed.hostname === '' ? 'localhost' : hostText(parsed.hostname));
  return {
    connectionString: parsed.toString(),
    schema: schemaParam === null || schemaParam === '' ? null : checkSchemaName(schemaParam),
    address: `${host}:${parsed.port === '' ? '5432' : parsed.port}`,
    options: options === null || options === '' ? null : options,
    pgbouncer: pgbouncer === 'true',
  };
}

/**
 * Opens a pool whose every connection resolves unqualified names in `target.schema`, with
 * `settings` (`name=value`) too: startup options of each session on a direct connection, `SET
 * LOCAL` in each transaction behind a pooler (`target.pgbouncer`, see pooled.ts).
 */
export function createPool(target: PostgresTarget, max: number, settings: readonly string[] = []): pg.Pool {
  const all = [...(target.schema === null ? [] : [`search_path=${target.schema}`]), ...settings];
  const options = target.pgbouncer ? [] : [target.options, ...all.map((setting) => `-c ${setting}`)].filter((o) => o !== null);
  const pooled = target.pgbouncer ? localSettings(all) : null;
  const pool = new pg.Pool({
    connectionString: target.connectionString,
    max,
    // Without a bound an unreachable host hangs `open` for the OS TCP timeout (minutes).
    connectionTimeoutMillis: 10_000,
    // A startup parameter, not a SET on 'connect': it applies before the first query of every
    // connection, with no window in which a query could run against the wrong schema.
    ...(options.length === 0 ? {} : { options: options.join(' ') }),
  });
  // A refused or lost connection reaches the functions raised as STORE_UNAVAILABLE (the pool's
  // `connect`, a client's query) or as it is (a description, which pg answers on the connection).
  const functions =
    pooled === null ? null : new StatementFunctions(pool, (error) => isTasklatchError(error, 'STORE_UNAVAILABLE') || isConnectionFailure(error));
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
    if (pooled !== null) poolClient(client, pooled, withLiterals, functions);
    raisingUnavailableOn(client, target);
  });
  if (functions !== null) {
    markPooled(pool, functions);
    // No statement function is created on a pool that is ending.
    const end = pool.end.bind(pool) as (...args: unknown[]) => unknown;
    pool.end = ((...args: unknown[]) => {
      functions.close();
      return end(...args);
    }) as typeof pool.end;
  }
  return raisingUnavailable(pool, target);
}

/**
 * A checked-out client's statements (a transaction's) raise a lost connection as
 * `STORE_UNAVAILABLE` too. Only the promise form is wrapped: the pool's own `query` calls the
 * callback form, and its caller sees the error through `raisingUnavailable`.
 */
function raisingUnavailableOn(client: pg.PoolClient, target: PostgresTarget): void {
  const query = client.query.bind(client) as (...args: unknown[]) => unknown;
  client.query = ((...args: unknown[]) => {
    const result = query(...args);
    return result instanceof Promise
      ? result.catch((error: unknown) => {
          throw isConnectionFailure(error) ? unavailable(target, error) : error;
        })
      : result;
  }) as typeof client.query;
}

/**
 * The pool, with a connection it cannot open or loses during `pool.query` raised as
 * `STORE_UNAVAILABLE`: the callers (the wires, the CLI) tell an outage, which a later retry may
 * get through, from a fault. Wrapped at the two ways in (`connect` and `query`, which connects
 * through `connect`'s callback form); errors PostgreSQL reports about a statement pass as they are.
 */
function raisingUnavailable(pool: pg.Pool, target: PostgresTarget): pg.Pool {
  const classify = (error: unknown): unknown => (isConnectionFailure(error) ? unavailable(target, error) : error);
  const connect = pool.connect.bind(pool) as (callback?: (error: Error | undefined, client?: unknown, done?: unknown) => void) => unknown;
  pool.connect = ((callback?: (error: Error | undefined, client?: unknown, done?: unknown) => void) => {
    if (callback !== undefined)
      return connect((error, client, done) => callback(error === undefined || error === null ? error : (classify(error) as Error), client, done));
    return (connect() as Promise<pg.PoolClient>).catch((error: unknown) => {
      throw classify(error);
    });
  }) as typeof pool.connect;
  const query = pool.query.bind(pool) as (...args: unknown[]) => unknown;
  pool.query = ((...args: unknown[]) => {
    const result = query(...args);
    return result instanceof Promise
      ? result.catch((error: unknown) => {
          throw classify(error);
        })
      : result;
  }) as typeof pool.query;
  return pool;
}

/** Node's errors of a connection refused, reset, timed out or unroutable. */
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'EPIPE']);

/**
 * Whether an error means the server could not be reached or dropped the connection: a network
 * error (Node reports a refused localhost as an AggregateError of them), SQLSTATE class 08
 * (connection exception) or 57P01–57P03 (shutting down, starting up), or pg's own words for a
 * lost connection and a pool that could not connect in time.
 *
 * Not `08P01` (protocol violation): the server refused a message it was sent (a NUL inside a
 * statement's text ends it early), which is a fault of that statement, not an outage. PostgreSQL
 * closes the connection after it, but the next statement connects again and gets through;
 * called an outage, one caller's bad parameter answered every caller of its batch "store
 * unavailable" and sent an operator to the network.
 */
export function isConnectionFailure(error: unknown): boolean {
  if (error instanceof AggregateError && error.errors.some(isConnectionFailure)) return true;
  const code = (error as { code?: unknown } | null)?.code;
  if (code === '08P01') return false;
  if (typeof code === 'string' && (NETWORK_CODES.has(code) || code.startsWith('08') || /^57P0[123]$/.test(code))) return true;
  const message = error instanceof Error ? error.message : '';
  return /^Connection terminated|^timeout exceeded when trying to connect|^Client has encountered a connection error/.test(message);
}

/**
 * Whether PostgreSQL refused a statement (it reported an SQLSTATE, with a severity) for a reason
 * other than an outage: bad data (22…), a constraint (23…), a limit (54…), a malformed message
 * (`08P01`), a conflict or a timeout. The statement changed nothing (its transaction rolled
 * back), so the work of several callers it carried can be sent again one by one: only the
 * caller whose work it was fails again.
 */
export function isStatementError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  const severity = (error as { severity?: unknown } | null)?.severity;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) && typeof severity === 'string' && !isConnectionFailure(error);
}

/**
 * Errors that mean the server could not be reached or refused the session. An error that is
 * `STORE_UNAVAILABLE` already (the pool's `connect` raises it) is returned as it is: wrapped
 * again, its message would name the server twice.
 */
export function unavailable(target: PostgresTarget, cause: unknown): TasklatchError {
  if (isTasklatchError(cause, 'STORE_UNAVAILABLE')) return cause;
  const code = (cause as { code?: unknown } | null)?.code;
  const message = cause instanceof Error ? cause.message : String(cause);
  // Node reports a refused localhost connection as an AggregateError with an empty message.
  const detail = [message, typeof code === 'string' ? `(${code})` : ''].filter((part) => part !== '').join(' ');
  return new TasklatchError('STORE_UNAVAILABLE', `cannot connect to PostgreSQL at ${target.address}: ${detail}`, {
    cause,
  });
}
