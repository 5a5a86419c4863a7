import pg from 'pg';
import type { StoreProbe } from '../task-operations.js';
import { parsePostgresUrl, unavailable } from './connection.js';
import { localSettings, poolClient } from './pooled.js';
import { withLiterals } from './prepared.js';
import { CHANGES_CHANNEL } from './listener.js';
import { schemaStateOf } from './operations.js';

/**
 * Looks at a PostgreSQL store without migrating it: one connection that runs a query, reads the
 * migration ledger and LISTENs (then stops) on the channel every writer notifies.
 */
export async function probePostgres(url: string, timeoutMs = 5000): Promise<StoreProbe> {
  const target = parsePostgresUrl(url);
  const where = `PostgreSQL at ${target.address}${target.schema === null ? '' : `, schema ${target.schema}`}`;
  const searchPath = target.schema === null ? [] : [`search_path=${target.schema}`];
  // Behind a pooler in transaction mode the schema is set per transaction (pooled.ts).
  const options = target.pgbouncer ? [] : [target.options, ...searchPath.map((s) => `-c ${s}`)].filter((o) => o !== null);
  const client = new pg.Client({
    connectionString: target.connectionString,
    connectionTimeoutMillis: timeoutMs,
    query_timeout: timeoutMs,
    ...(options.length === 0 ? {} : { options: options.join(' ') }),
  });
  client.on('error', () => undefined);
  if (target.pgbouncer) poolClient(client as pg.PoolClient, localSettings(searchPath), withLiterals);
  try {
    try {
      await client.connect();
      await client.query('SELECT 1');
    } catch (error) {
      // The cause alone: `where` already names the server.
      const cause = unavailable(target, error).message.slice(`cannot connect to PostgreSQL at ${target.address}: `.length);
      return { where, unreachable: cause, schema: null, notifications: null };
    }
    const schema = await schemaStateOf(client);
    // No LISTEN through a pooler in transaction mode: the store does not listen there either.
    if (target.pgbouncer) return { where, unreachable: null, schema, notifications: null };
    let notifications: string | null = null;
    try {
      await client.query(`LISTEN ${CHANGES_CHANNEL}`);
      await client.query(`UNLISTEN ${CHANGES_CHANNEL}`);
    } catch (error) {
      notifications = (error as Error).message;
    }
    return { where, unreachable: null, schema, notifications: notifications ?? 'ok' };
  } catch (error) {
    return { where, unreachable: (error as Error).message, schema: null, notifications: null };
  } finally {
    await client.end().catch(() => undefined);
  }
}
