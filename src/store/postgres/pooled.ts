import type pg from 'pg';

/**
 * Connections through a pooler in transaction mode (PgBouncer's `pool_mode = transaction`, RDS
 * Proxy, Supavisor): each transaction may run on a different server connection, so nothing may
 * outlive one. A store URL says so with `pgbouncer=true`; its pools and their clients are then
 * marked here, and
 * - no statement is prepared by name: pg's `name:` is dropped, and `PREPARE`/`EXECUTE` or a
 *   named statement become the call of the statement's function once it has one
 *   (statement-functions.ts), else the statement's text with its literals (see `callText`,
 *   `ensurePrepared`);
 * - what a direct connection sets once per session (the `?schema=` search_path, the audit pool's
 *   asynchronous commit) is set per transaction instead: `SET LOCAL …` goes ahead of every
 *   message that begins one, in the same message;
 * - LISTEN needs a session: notifications come from a direct connection (`listenUrl`), or waiters
 *   poll (the store's `listenNotify` is false).
 */

/**
 * What a pooled pool and its clients ask of the pool's statement functions
 * (statement-functions.ts `StatementFunctions`), which build their transactions on this file.
 */
export interface FunctionCalls {
  /** The call of the statement's function with `literals`, or null while it has none. */
  callOf(statement: { name: string; text: string }, literals: readonly string[]): string | null;
  /** `callOf` with `values` written as literals; null also when a value has none. */
  callWithValues(statement: { name: string; text: string }, values: readonly unknown[]): string | null;
  /** Rethrows `error`, forgetting the function it names when its columns no longer match. */
  forgetFailed(error: unknown): never;
}

/**
 * The name of the statement function that `error` says no longer returns its statement's columns
 * (42804, "structure of query does not match function result type", raised from its body: a
 * migration added a column under `RETURNING *` since it was made); undefined for any other error.
 * Nothing of the transaction it failed was stored.
 */
export function staleFunctionOf(error: unknown): string | undefined {
  const { code, where } = (error ?? {}) as { code?: unknown; where?: unknown };
  // The context names the function as `tl_…(argument types)`, in whatever language the server speaks.
  return code === '42804' && typeof where === 'string' ? /\b(tl_[0-9a-f]{16})\(/.exec(where)?.[1] : undefined;
}

/** Each transaction-pooled pool and client, with the statement functions of its pool (none for a lone client). */
const pooled = new WeakMap<object, FunctionCalls | null>();

/** Whether `db` (a pool or a client of one) is behind a transaction-pooling proxy. */
export function isTransactionPooled(db: object): boolean {
  return pooled.has(db);
}

/** The statement functions of `db`'s pool (statement-functions.ts); null off a pooler and for a client of no pool. */
export function functionsOf(db: object): FunctionCalls | null {
  return pooled.get(db) ?? null;
}

/** Marks `pool` as transaction-pooled, with its statement functions. */
export function markPooled(pool: pg.Pool, functions: FunctionCalls): void {
  pooled.set(pool, functions);
}

/** `SET LOCAL` of each `name=value` setting: what a direct connection's startup `-c` options set. */
export function localSettings(settings: readonly string[]): string[] {
  return settings.map((setting) => {
    const at = setting.indexOf('=');
    return `SET LOCAL ${setting.slice(0, at)} TO ${setting.slice(at + 1)}`;
  });
}

type Callback = (error: Error | null | undefined, result?: unknown) => void;
type QueryConfig = pg.QueryConfig & { name?: string; submit?: unknown };

/**
 * Marks `client` as transaction-pooled and rewrites what it sends: no statement names, and
 * `settings` (`SET LOCAL …`) ahead of every message sent outside a transaction, their results
 * taken off the answer. A statement with a parameter that has no exact literal goes in a
 * transaction of its own (settings and BEGIN, the statement, COMMIT): three round trips, only
 * for such values.
 */
export function poolClient(
  client: pg.PoolClient,
  settings: readonly string[],
  /** `text` with each `$n` replaced by its literal; null when one has none (prepared.ts `withLiterals`). */
  withLiterals: (text: string, values: readonly unknown[]) => string | null,
  /** Its pool's statement functions (statement-functions.ts); none for a client of no pool. */
  functions: FunctionCalls | null = null,
): void {
  pooled.set(client, functions);
  const query = client.query.bind(client) as (...args: unknown[]) => unknown;
  const send = (config: QueryConfig): Promise<unknown> => query(config) as Promise<unknown>;
  client.query = ((...args: unknown[]) => {
    const [first, second, third] = args;
    // A cursor or another submittable carries its own protocol: passed as it is.
    if (typeof first === 'object' && first !== null && typeof (first as QueryConfig).submit === 'function') return query(...args);
    const config: QueryConfig = typeof first === 'string' ? { text: first } : { ...(first as QueryConfig) };
    const name = config.name;
    delete config.name;
    if (Array.isArray(second)) config.values = second;
    const callback = (typeof second === 'function' ? second : typeof third === 'function' ? third : undefined) as Callback | undefined;
    const status = client.getTransactionStatus();
    let run: Promise<unknown>;
    if (settings.length === 0 || status === 'T' || status === 'E') {
      run = send(config);
    } else {
      const values = config.values ?? [];
      // A statement the store names (a read, a notification) goes through its function once it has one, as the writes do.
      const call = name === undefined || functions === null ? null : functions.callWithValues({ name, text: config.text }, values);
      const text = call ?? (values.length === 0 ? config.text : withLiterals(config.text, values));
      if (text !== null) {
        run = send(Object.assign({}, config, { text: [...settings, text].join(';\n'), values: [] })).then((answer) => {
          const rest = (answer as unknown[]).slice(settings.length);
          return rest.length === 1 ? rest[0] : rest;
        });
      } else {
        run = inOwnTransaction(send, settings, config);
      }
    }
    // A function whose columns a migration changed since it was made is made again.
    if (functions !== null) run = run.catch((error: unknown) => functions.forgetFailed(error));
    if (callback === undefined) return run;
    run.then(
      (result) => callback(undefined, result),
      (error: unknown) => callback(error as Error),
    );
    return undefined;
  }) as typeof client.query;
}

async function inOwnTransaction(send: (config: QueryConfig) => Promise<unknown>, settings: readonly string[], config: QueryConfig): Promise<unknown> {
  await send({ text: [...settings, 'BEGIN'].join(';\n') });
  try {
    const result = await send(config);
    await send({ text: 'COMMIT' });
    return result;
  } catch (error) {
    await send({ text: 'ROLLBACK' }).catch(() => undefined);
    throw error;
  }
}
