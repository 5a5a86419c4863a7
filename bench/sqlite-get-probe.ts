import { existsSync } from 'node:fs';
import { mkdir, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { openGuard } from '../src/service/guard.js';
import { SqliteStore } from '../src/store/sqlite/store.js';
import { linkMigrations } from './lib/migrations-link.js';
import { sqliteLoad, sqliteOutbox } from './lib/population.js';
import { randomGets, TENANTS } from './scenarios/growth.js';
import { fmt, summarize } from './lib/stats.js';

/**
 * `node dist/bench/bench/sqlite-get-probe.js [DIR] [SIZES] [SETTINGS]`: the growth scenario's
 * SQLite `tasks/get` (through the guard, audited, on random live tasks of 1,000 tenants) without
 * its climb. Each size (default `100000,1000000`) is loaded once into `DIR/n<size>.db` (default
 * DIR /tmp/tasklatch-sqlite-get-probe) and kept for later runs. Each of SETTINGS (default
 * `store`: the store's own pragmas; `a;b` pragmas set on the store's connection after it
 * opened, e.g. `cache_size=-2000;mmap_size=0`, several separated by `|`) is measured in turn on
 * each size: 500 unmeasured reads, then three runs of 2,000, each run's p50/p99/max and the
 * reads over 1 ms. TASKLATCH_PROBE_AUDIT=0 leaves the reads unaudited (the guard's `auditReads`).
 */
const CHUNK = 500_000;
const RUNS = 3;
const SAMPLES = 2_000;

async function ensureLoaded(dir: string, n: number): Promise<string> {
  const path = join(dir, `n${n}.db`);
  if (existsSync(path)) return path;
  const building = join(dir, `building-${n}.db`);
  await rm(building, { force: true });
  const store = await SqliteStore.open(building);
  const base = BigInt(Date.now());
  const t0 = performance.now();
  for (let a = 1; a <= n; a += CHUNK) {
    const range = { from: BigInt(a), to: BigInt(Math.min(n, a + CHUNK - 1)), total: BigInt(n), base };
    store.db.transaction(() => {
      store.db.prepare(sqliteLoad).run({ ...range, tenants: BigInt(TENANTS) });
      store.db.prepare(sqliteOutbox).run(range);
    })();
  }
  store.db.exec('ANALYZE');
  store.db.pragma('wal_checkpoint(TRUNCATE)');
  await store.close();
  await rename(building, path);
  console.log(`loaded ${n} tasks into ${path} in ${fmt((performance.now() - t0) / 1000)} s`);
  return path;
}

async function measure(path: string, n: number, settings: string): Promise<void> {
  const store = await SqliteStore.open(path);
  try {
    for (const pragma of settings === 'store' ? [] : settings.split(';')) if (pragma.trim() !== '') store.db.pragma(pragma.trim());
    const auditReads = process.env.TASKLATCH_PROBE_AUDIT !== '0';
    const guard = openGuard({ store, auditReads, capabilities: { list: {}, cancel: {}, requests: { tools: { call: {} } } } });
    const one = (count: number) => randomGets(guard, n, count);
    await one(500);
    const runs: string[] = [];
    for (let r = 0; r < RUNS; r++) {
      const times = await one(SAMPLES);
      const s = summarize(times);
      runs.push(`${fmt(s.p50)}/${fmt(s.p99)}/${fmt(s.max)} (${times.filter((t) => t > 1).length} > 1 ms)`);
    }
    const mmap = String(store.db.pragma('mmap_size', { simple: true }));
    const cache = String(store.db.pragma('cache_size', { simple: true }));
    console.log(`n=${n} [${settings}]${auditReads ? '' : ' reads not audited'} (cache_size ${cache}, mmap_size ${mmap}): p50/p99/max ms ${runs.join(' · ')}`);
  } finally {
    await store.close();
  }
}

async function main(): Promise<void> {
  linkMigrations();
  const dir = process.argv[2] ?? '/tmp/tasklatch-sqlite-get-probe';
  const sizes = (process.argv[3] ?? '100000,1000000').split(',').map(Number);
  const settings = (process.argv[4] ?? 'store').split('|');
  await mkdir(dir, { recursive: true });
  const paths = new Map<number, string>();
  for (const n of sizes) paths.set(n, await ensureLoaded(dir, n));
  if (process.env.TASKLATCH_PROBE_LOAD_ONLY === '1') return;
  for (const s of settings) for (const n of sizes) await measure(paths.get(n)!, n, s);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
