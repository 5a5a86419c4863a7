import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { expect } from 'vitest';
import type { PostgresStore } from '../../src/store/postgres/store.js';
import { pgAdmission } from './records.js';
import { until } from './until.js';

/**
 * Holds the store's only write-batch slot (inFlight 1): an admission of a caller of its own waits
 * at the server for that caller's admission lock, held here, and the writes asked for meanwhile
 * queue into one batch that goes out on `release`. The caller is new each time and the wait is
 * read off the holder's own lock (`pg_blocking_pids`): other test files share the server, and
 * their locks and waits are not this one's.
 */
export async function holdWriteSlot(store: PostgresStore): Promise<{ release(): Promise<void> }> {
  const holder = new pg.Client({ connectionString: store.pool.options.connectionString });
  await holder.connect();
  const authKey = `blocker-${randomBytes(6).toString('hex')}`;
  await holder.query('SELECT pg_advisory_lock(hashtextextended($1, 0))', [`tasklatch:admit:${authKey}`]);
  const blocked = store.admit(pgAdmission({ authKey, maxActive: 100 }));
  await until(async () => {
    const waiting = await holder.query('SELECT 1 FROM pg_stat_activity WHERE pg_backend_pid() = ANY(pg_blocking_pids(pid))');
    return (waiting.rowCount ?? 0) > 0 ? true : undefined;
  });
  return {
    release: async () => {
      await holder.end();
      expect((await blocked).decision).toBe('ACCEPT_TASK');
    },
  };
}
