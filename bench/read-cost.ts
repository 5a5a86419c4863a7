import { openBenchPostgres } from './lib/postgres.js';
import { linkMigrations } from './lib/migrations-link.js';
import { PostgresStore } from '../src/store/postgres/store.js';
import { SqliteStore } from '../src/store/sqlite/store.js';
import type { TaskStore } from '../src/store/types.js';

/**
 * `node dist/bench/bench/read-cost.js [postgres|sqlite] [batch]`: what one `store.get` costs this
 * Node process, without HTTP: `batch` reads of 64 working tasks asked for together, over and
 * over, for four rounds of 2 s, with the process's CPU per read. On PostgreSQL the server's
 * share is not in the figure (read it from /proc of its processes around the run).
 */
async function main(): Promise<void> {
  linkMigrations();
  const kind = process.argv[2] ?? 'postgres';
  const batch = Number(process.argv[3] ?? 5);
  const pg = await openBenchPostgres();
  const store: TaskStore = kind === 'postgres' ? await PostgresStore.open(pg.schemaUrl('readcost')) : await SqliteStore.open('/tmp/probe/readcost.db');
  const now = Date.now();
  const ids = Array.from({ length: 64 }, (_, i) => `rc-${i}-${now}`);
  for (const id of ids) {
    await store.admit({
      taskId: id,
      authKey: 'a',
      toolName: 'noop',
      request: { method: 'tools/call', params: { name: 'noop', arguments: { n: 1, label: 'x'.repeat(40) }, task: { ttl: 3600000 } } },
      requestDigest: 'd'.repeat(64),
      idempotencyKey: null,
      ttl: 3600000,
      pollInterval: 1000,
      correlationId: 'c',
      now,
    });
  }
  for (let round = 0; round < 4; round++) {
    const t0 = process.cpuUsage();
    const w0 = performance.now();
    let n = 0;
    while (performance.now() - w0 < 2000) {
      await Promise.all(Array.from({ length: batch }, (_, i) => store.get({ authKey: 'a', taskId: ids[(n + i) % 64] as string, now: Date.now() })));
      n += batch;
    }
    const c = process.cpuUsage(t0);
    console.log(
      `${kind} batch ${batch}: ${(n / 2).toFixed(0)} reads/s, node ${((c.user + c.system) / n).toFixed(1)} µs/read (${(c.system / n).toFixed(1)} sys)`,
    );
  }
  await store.close();
  await pg.close();
}
void main();
