import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { PostgresStore } from '../../src/store/postgres/store.js';
import { freshPostgresUrl } from '../support/postgres.js';
import { collectEvents, rpc, startListen } from '../support/stateless.js';
import { until } from '../support/until.js';
import { startWireServer, type WireServer } from '../support/wire-server.js';

// A subscriptions/listen whose visibility read is waiting on a lock when PostgreSQL terminates
// its backend (pg_terminate_backend, as an operator or a failover does): the listen reads again
// and is acknowledged with the caller's task, never with no ids, the answer for "not yours".

let wire: WireServer | undefined;
let admin: pg.Client | undefined;
afterEach(async () => {
  await admin?.query('ROLLBACK').catch(() => undefined);
  await admin?.end();
  await wire?.close();
  admin = undefined;
  wire = undefined;
});

describe('a listen whose backend is terminated', () => {
  it('is acknowledged with the caller’s task once the store answers again', async () => {
    const url = await freshPostgresUrl('listen_terminated');
    wire = await startWireServer(await PostgresStore.open(url), { execute: false, limits: { storeOutageMs: 30_000 } });
    const taskId = (await rpc(wire.http.url, 'tools/call', { name: 'hold', arguments: {} }, { token: 'token-alice' })).result!.taskId as string;

    admin = new pg.Client({ connectionString: url.replace(/\?.*$/, '') });
    admin.on('error', () => undefined);
    await admin.connect();
    const schema = new URL(url).searchParams.get('schema')!;
    await admin.query('BEGIN');
    await admin.query(`LOCK TABLE "${schema}".tasks IN ACCESS EXCLUSIVE MODE`);

    const listening = startListen(wire.http.url, 'token-alice', [taskId], 'terminated');
    const stream = collectEvents(listening.response);
    // The visibility read waits on the lock: terminate the backend running it.
    const waiting = await until(async () => {
      const found = await admin!.query<{ pid: number }>(
        // Only a backend waiting on this test's lock: other test files share the server.
        'SELECT pid FROM pg_stat_activity WHERE pg_backend_pid() = ANY(pg_blocking_pids(pid))',
      );
      return found.rows[0]?.pid;
    }, 10_000);
    await admin.query('SELECT pg_terminate_backend($1)', [waiting]);
    await admin.query('ROLLBACK');

    await until(() => (stream.messages.length >= 2 ? true : undefined), 20_000);
    listening.abort.abort();
    expect(stream.messages[0]).toMatchObject({ method: 'notifications/subscriptions/acknowledged', params: { notifications: { taskIds: [taskId] } } });
    expect(stream.messages[1]).toMatchObject({ method: 'notifications/tasks', params: { taskId, status: 'working' } });
  });
});
