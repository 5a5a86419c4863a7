import pg from 'pg';
import type { StoreProbe } from '../task-operations.js';
import { parsePostgresUrl, unavailable } from './connection.js';
import { CHANGES_CHANNEL } from './listener.js';
import { schemaStateOf } from './operations.js';

/**
 * Looks at a PostgreSQL store without migrating it: one connection that runs a query, reads the
 * migration ledger and LISTENs (then stops) on the channel every writer notifies.
 */
export async function probePostgres(url: string, timeoutMs = 5000): Promise<StoreProbe> {
  const target = parsePostgresUrl(url);
  const where = `PostgreSQL at ${target.address}${target.schema === null ? '' : `, schema ${target.schema}`}`;
  const options = [target.options, target.schema === null ? null : `-c search_path=${target.schema}`].filter((o) => o !== null);
  const client = new pg.Client({
    connectionString: target.connectionString,
    connectionTimeoutMillis: timeoutMs,
    query_timeout: timeoutMs,
    ...(options.length === 0 ? {} : { options: options.join(' ') }),
  });
  client.on('error', () => undefined);
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
