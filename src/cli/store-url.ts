import { DEFAULT_STORE_URL } from '../store/open-store.js';

/**
 * The store a command uses: `--store`, else `TASKLATCH_STORE`, else `DATABASE_URL` (what
 * platforms that provision a PostgreSQL set), else the default SQLite file. The environment
 * keeps a password out of the command line, where `ps` shows it to every user of the machine.
 * An empty variable counts as unset.
 */
export function storeUrlFrom(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  if (flag !== undefined) return flag;
  for (const name of ['TASKLATCH_STORE', 'DATABASE_URL']) {
    const value = env[name];
    if (value !== undefined && value !== '') return value;
  }
  return DEFAULT_STORE_URL;
}

/** The `--store URL` line of a command's usage. */
export const STORE_USAGE_LINE = `  --store URL            sqlite:PATH or postgres://…[?schema=NAME]; default $TASKLATCH_STORE, else
                         $DATABASE_URL, else ${DEFAULT_STORE_URL}; behind PgBouncer in transaction mode add
                         &pgbouncer=true (or ?pgbouncer=true)`;

/**
 * The direct URL a PostgreSQL store behind a pooler LISTENs on: `--listen-store`, else
 * `TASKLATCH_LISTEN_STORE`; undefined when neither is given (an empty variable counts as unset).
 */
export function listenStoreUrlFrom(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (flag !== undefined) return flag;
  const value = env.TASKLATCH_LISTEN_STORE;
  return value === undefined || value === '' ? undefined : value;
}
