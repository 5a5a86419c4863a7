import { createHash } from 'node:crypto';
import type pg from 'pg';
import { staleFunctionOf, type FunctionCalls } from './pooled.js';
import { literalsOf } from './prepared.js';
import { inTransaction } from './transactions.js';

/** A statement the store executes by name (prepared.ts `Prepared`): its name and text. */
interface Statement {
  name: string;
  text: string;
}

/**
 * Behind a pooler in transaction mode (pooled.ts) no statement can be prepared by name: a
 * prepared statement is session state, and the next transaction may run on another server
 * connection. Sent as text, a statement is parsed and planned on every call, which for an
 * admission or a status write is about half of the backend's work.
 *
 * A PL/pgSQL function is not session state: it lives in the schema, and each server connection
 * keeps the plan of the statement in its body, as it keeps a prepared statement's (custom plans
 * first, then the generic plan once it costs no more). So on a transaction-pooled store, each
 * statement the store would execute by name (`callText`, and the reads it names for pg:
 * `callWithValues`) gets a function in the store's schema, created the first time the
 * statement is sent:
 * - its parameters have the types PostgreSQL infers for the statement's, and it returns a table
 *   of the statement's own columns and types, so its rows reach pg exactly as the statement's
 *   would (RETURN QUERY of the statement's text);
 * - both are read without running the statement: the server parses it as an unnamed statement
 *   and describes it (the extended protocol's Parse and Describe, which a pooler in transaction
 *   mode passes: nothing of it outlives the transaction);
 * - it is created in a transaction of its own, under an advisory lock on its name, unless another
 *   process created it first;
 * - until it exists, and for a statement that cannot have one (no rows, two columns of one name,
 *   or no right to create functions in the schema), the statement travels as text, as before;
 * - its name is a digest of the statement's text and of that shape, so processes of one version
 *   share their functions, and a changed statement, or the same statement once a migration has
 *   changed the columns it returns (`RETURNING *`), gets a function of its own. A function left
 *   by an older version stays unused; `DROP SCHEMA … CASCADE` takes them all with the tables.
 */
export class StatementFunctions implements FunctionCalls {
  /** The function of each statement (by the statement's name) that exists in the schema. */
  private readonly ready = new Map<string, string>();
  /** Statement names being created, or that cannot have one: not tried again by this process. */
  private readonly tried = new Set<string>();
  /** Creations under way. */
  private readonly creating = new Set<Promise<void>>();
  private closed = false;

  constructor(
    private readonly pool: pg.Pool,
    /** Whether an error means the server was out of reach (connection.ts: `STORE_UNAVAILABLE`, `isConnectionFailure`). */
    private readonly isOutage: (error: unknown) => boolean,
  ) {}

  /**
   * The call of `statement`'s function with `literals` (prepared.ts `sqlLiteral`), or null while
   * it has none: its creation then starts, and the caller sends the statement's text.
   */
  callOf(statement: Statement, literals: readonly string[]): string | null {
    const name = this.ready.get(statement.name);
    if (name !== undefined) return `SELECT * FROM ${name}(${literals.map(untyped).join(', ')})`;
    if (!this.tried.has(statement.name) && !this.closed) {
      this.tried.add(statement.name);
      const creation = this.create(statement).finally(() => this.creating.delete(creation));
      this.creating.add(creation);
    }
    return null;
  }

  /**
   * `callOf` for a statement sent with parameters (one the store names for pg: a read, a
   * notification), `values` written as literals; null while it has no function (its creation then
   * starts), when it cannot have one, and when a value has no literal.
   */
  callWithValues(statement: Statement, values: readonly unknown[]): string | null {
    if (this.tried.has(statement.name) && !this.ready.has(statement.name)) return null;
    const literals = literalsOf(values);
    return literals === null ? null : this.callOf(statement, literals);
  }

  /**
   * Rethrows `error`. When it is a function's answer that its statement no longer returns the
   * columns it was made with (a migration added one under `RETURNING *` since: 42804, "structure
   * of query does not match function result type"), the statement goes back to its text and
   * gets a function of its new columns on its next use. The call that failed fails; a write
   * batch or a short transaction is then sent again (prepared.ts `pastStaleStatements`), so no
   * write fails.
   */
  forgetFailed(error: unknown): never {
    const failed = staleFunctionOf(error);
    if (failed !== undefined) {
      for (const [statement, name] of this.ready) {
        if (name !== failed) continue;
        this.ready.delete(statement);
        this.tried.delete(statement);
      }
    }
    throw error;
  }

  /** No more functions are created (the store is closing). */
  close(): void {
    this.closed = true;
  }

  /** Resolves once the creations under way have ended, each created or given up. */
  async settled(): Promise<void> {
    while (this.creating.size > 0) await Promise.all(this.creating);
  }

  private async create(statement: Statement): Promise<void> {
    try {
      const name = await inTransaction(this.pool, async (client) => {
        const shape = await describe(client, statement.text);
        return shape === null ? null : createIn(client, statement.text, shape);
      });
      if (name !== null) this.ready.set(statement.name, name);
    } catch (error) {
      // An outage: tried again on the next call. Any other refusal stands for this process.
      if (this.isOutage(error) && !this.closed) this.tried.delete(statement.name);
    }
  }
}

/** A statement's parameter types and columns, as the server describes them. */
interface Shape {
  params: number[];
  columns: { name: string; type: number; modifier: number }[];
}

/** The type of a column of `void` (`SELECT pg_notify(…)`), which no PL/pgSQL function can return. */
const VOID = 2278;

/**
 * Creates the function of `text` of `shape` unless it exists; its name, or null for a statement
 * of no rows, of two columns of one name (a table's columns are distinct) or of a `void` column.
 */
async function createIn(client: pg.PoolClient, text: string, shape: Shape): Promise<string | null> {
  const names = shape.columns.map((c) => c.name);
  if (names.length === 0 || new Set(names).size !== names.length || shape.columns.some((c) => c.type === VOID)) return null;
  const name = `tl_${createHash('sha256')
    .update(JSON.stringify([text, shape]))
    .digest('hex')
    .slice(0, 16)}`;
  await client.query(`SELECT pg_advisory_xact_lock(hashtext('tasklatch.statement-function'), hashtext('${name}'))`);
  const exists = await client.query(`SELECT 1 FROM pg_proc WHERE proname = '${name}' AND pronamespace = current_schema()::regnamespace`);
  if (exists.rows.length > 0) return name;
  const types = await client.query<{ args: string[]; cols: string[] }>(
    `SELECT ARRAY(SELECT format_type(t, NULL) FROM unnest($1::oid[]) WITH ORDINALITY AS p(t, i) ORDER BY i) AS args,
            ARRAY(SELECT format('%I %s', n, format_type(t, m)) FROM unnest($2::text[], $3::oid[], $4::int[]) WITH ORDINALITY AS c(n, t, m, i) ORDER BY i) AS cols`,
    [shape.params, names, shape.columns.map((c) => c.type), shape.columns.map((c) => c.modifier)],
  );
  const { args, cols } = types.rows[0] as { args: string[]; cols: string[] };
  // `#variable_conflict use_column`: the function's columns are also variables of its body, and
  // a name the statement uses is the statement's column.
  const body = `#variable_conflict use_column\nBEGIN\n  RETURN QUERY ${text};\nEND`;
  await client.query(`CREATE FUNCTION ${name}(${args.join(', ')}) RETURNS TABLE (${cols.join(', ')}) LANGUAGE plpgsql AS ${dollarQuoted(body)}`);
  return name;
}

/**
 * `text` parsed as the unnamed statement and described (Parse, Describe, Sync), not run: its
 * parameter types and its columns; null when it returns no rows.
 */
function describe(client: pg.PoolClient, text: string): Promise<Shape | null> {
  return new Promise((resolve, reject) => {
    let params: number[] = [];
    let columns: Shape['columns'] | null = null;
    let connection: DescribeConnection | null = null;
    const onParams = (message: { dataTypeIDs: number[] }) => (params = [...message.dataTypeIDs]);
    const submittable = {
      submit(to: DescribeConnection) {
        connection = to;
        to.once('parameterDescription', onParams);
        to.parse({ text, types: [] });
        to.describe({ type: 'S', name: '' });
        to.sync();
      },
      handleRowDescription(message: { fields: { name: string; dataTypeID: number; dataTypeModifier: number }[] }) {
        columns = message.fields.map((f) => ({ name: f.name, type: f.dataTypeID, modifier: f.dataTypeModifier }));
      },
      // pg ends the exchange here, whether the server refused the statement (its ReadyForQuery
      // then goes to no one, and the client's next query waits for it) or the connection is lost.
      handleError(error: Error) {
        connection?.removeListener('parameterDescription', onParams);
        reject(error);
      },
      handleReadyForQuery() {
        connection?.removeListener('parameterDescription', onParams);
        resolve(columns === null ? null : { params, columns });
      },
    };
    // A submittable: pg hands it the connection and the messages of the answer, and returns it.
    void client.query(submittable as unknown as pg.QueryConfig);
  });
}

/** The part of pg's connection a description uses. */
interface DescribeConnection {
  once(event: 'parameterDescription', listener: (message: { dataTypeIDs: number[] }) => void): void;
  removeListener(event: 'parameterDescription', listener: (message: { dataTypeIDs: number[] }) => void): void;
  parse(query: { text: string; types: number[] }): void;
  describe(message: { type: 'S'; name: string }): void;
  sync(): void;
}

/**
 * A literal as a string literal, of no type until the function's parameter gives it one: `2`
 * is an integer and would not match a `text` or `bigint` parameter, `'2'` matches either.
 */
function untyped(literal: string): string {
  return literal === 'NULL' || literal.endsWith("'") ? literal : `'${literal}'`;
}

/** `text` as a dollar-quoted string whose tag it does not contain. */
function dollarQuoted(text: string): string {
  let tag = 'tl';
  while (text.includes(`$${tag}$`)) tag += '_';
  return `$${tag}$${text}$${tag}$`;
}
