import { describe, expect, it } from 'vitest';
import { PostgresStore } from '../../src/store/postgres/store.js';
import { startEmbeddedPostgres } from '../support/embedded-postgres.js';
import { T0, record } from '../support/records.js';
import { until } from '../support/until.js';

describe('PostgresStore across a server restart', () => {
  it('survives the restart under load (no unhandled client errors) and works again afterwards', async () => {
    const server = await startEmbeddedPostgres();
    const url = new URL(server.url);
    url.searchParams.set('schema', 'restart_check');
    const store = await PostgresStore.open(url.toString(), { poolSize: 8 });
    const seen: Array<string | null> = [];
    const stop = await store.listen((taskId) => seen.push(taskId));
    try {
      await store.seed([record({ taskId: 'r1' })]);
      let running = true;
      let failures = 0;
      // Reads, writes and audit lines in flight while the server goes away.
      const load = Promise.all(
        Array.from({ length: 8 }, async (_, i) => {
          while (running) {
            await Promise.all([
              store.get({ authKey: 'tenant-a/alice', taskId: 'r1', now: T0 }),
              store.transition({
                taskId: 'r1',
                authKey: 'tenant-a/alice',
                write: { status: 'working', expectedVersion: 1 + i * 1000 },
                correlationId: 'c',
                now: T0,
              }),
              store.recordDecision({ at: T0, surface: 'read', decision: 'RETURN_STATUS', authKey: 'tenant-a/alice', taskId: 'r1', correlationId: 'c' }),
            ]).catch(() => failures++);
            await new Promise((r) => setTimeout(r, 5));
          }
        }),
      );
      await new Promise((r) => setTimeout(r, 300));
      await server.restart();
      // The listener reconnected and said so (null: anything may have changed meanwhile), with the load still on.
      await until(() => (seen.includes(null) ? true : undefined));
      running = false;
      await load;
      expect(failures).toBeGreaterThan(0);
      expect((await store.get({ authKey: 'tenant-a/alice', taskId: 'r1', now: T0 })).decision).toBe('FOUND');
    } finally {
      await stop();
      await store.close();
      await server.stop();
    }
  }, 60_000);
});
