import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { listTasks } from '../src/runtime/requests/list-tasks.js';
import { openGuard } from '../src/service/guard.js';
import { sql } from '../src/store/postgres/statements.js';
import { PostgresStore } from '../src/store/postgres/store.js';
import { SqliteStore } from '../src/store/sqlite/store.js';
import { LISTED_COLUMNS } from '../src/store/task-columns.js';
import type { TaskStore } from '../src/store/types.js';
import { linkMigrations } from './lib/migrations-link.js';
import { authKeyOf, pgLoad, sqliteLoad, sqliteOutbox } from './lib/population.js';
import { loaderPool, openBenchPostgres } from './lib/postgres.js';
import { summarize } from './lib/stats.js';

/**
 * `node dist/bench/bench/list-probe.js [postgres|sqlite] [tasks]`: what a `tasks/list` first page
 * costs, on the reads scenario's population (`tasks`, default 200,000, over one tenant per
 * thousand: about 900 live tasks each): three rounds of 3,000 pages through an audited guard,
 * after 300 unmeasured, with this process's CPU per page (on PostgreSQL the backends' share is
 * not in it) and the p50 / p99. On PostgreSQL, the same page read by the driver alone, as the
 * listed columns and as every column (`SELECT *`, what a page read before it selected only what
 * a listing shows): the part of a page's cost that is its rows' bytes.
 */
const ROUNDS = 3;
const PAGES = 3000;
const WARMUP = 300;

async function timed(label: string, page: (i: number) => Promise<unknown>): Promise<void> {
  for (let i = 0; i < WARMUP; i++) await page(i);
  for (let round = 0; round < ROUNDS; round++) {
    const latencies: number[] = [];
    const cpu = process.cpuUsage();
    const start = performance.now();
    for (let i = 0; i < PAGES; i++) {
      const t0 = performance.now();
      await page(i);
      latencies.push(performance.now() - t0);
    }
    const used = process.cpuUsage(cpu);
    const wall = performance.now() - start;
    const { p50, p99 } = summarize(latencies);
    console.log(
      `${label}: Node ${((used.user + used.system) / PAGES).toFixed(0)} µs CPU a page, ${((1000 * wall) / PAGES).toFixed(0)} µs wall, p50 ${p50.toFixed(3)} ms, p99 ${p99.toFixed(3)} ms`,
    );
  }
}

async function main(): Promise<void> {
  linkMigrations();
  const kind = process.argv[2] === 'sqlite' ? 'sqlite' : 'postgres';
  const n = Number(process.argv[3] ?? 200_000);
  const tenants = Math.max(1, Math.floor(n / 1000));
  // Tenants in a fixed scattered order, each page a different one's.
  const auth = (i: number) => authKeyOf((i * 7919) % tenants);
  const bench = await openBenchPostgres();
  const dir = await mkdtemp(join(tmpdir(), 'tasklatch-list-probe-'));
  let store: TaskStore;
  let pool: ReturnType<typeof loaderPool> | null = null;
  if (kind === 'postgres') {
    const postgres = await PostgresStore.open(bench.schemaUrl('list_probe'));
    pool = loaderPool(bench.url, bench.schemaName('list_probe'), 2);
    await pool.query(pgLoad, [1, n, tenants, Date.now(), n]);
    await pool.query('VACUUM ANALYZE tasks');
    store = postgres;
  } else {
    const sqlite = await SqliteStore.open(join(dir, 'list.db'));
    sqlite.db.transaction(() => {
      const range = { from: 1n, to: BigInt(n), total: BigInt(n), base: BigInt(Date.now()) };
      sqlite.db.prepare(sqliteLoad).run({ ...range, tenants: BigInt(tenants) });
      sqlite.db.prepare(sqliteOutbox).run(range);
    })();
    sqlite.db.exec('ANALYZE');
    store = sqlite;
  }
  try {
    const guard = openGuard({ store, capabilities: { list: {}, cancel: {}, requests: { tools: { call: {} } } } });
    await timed(`${kind}, listTasks (audited guard)`, async (i) => {
      const page = await listTasks({ guard }, { auth: auth(i) });
      if (page.kind !== 'page' || page.records.length === 0) throw new Error(`tasks/list of ${auth(i)}: empty`);
    });
    if (pool !== null) {
      const db = pool;
      // The store's own first-page statement, and the same with every column.
      const listed = sql.listFirst;
      const every = listed.replace(`SELECT ${LISTED_COLUMNS.join(', ')} `, 'SELECT * ');
      if (every === listed) throw new Error('the first-page statement no longer selects LISTED_COLUMNS');
      for (const [label, text] of [
        ['the listed columns', listed],
        ['every column (SELECT *)', every],
      ] as const) {
        await timed(`${kind}, the driver alone, ${label}`, (i) => db.query(text, [auth(i), Date.now(), 51]));
      }
    }
  } finally {
    await pool?.end();
    await store.close();
    await bench.close();
    await rm(dir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
