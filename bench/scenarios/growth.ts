import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type pg from 'pg';
import { createTask } from '../../src/runtime/requests/create-task.js';
import { getTask } from '../../src/runtime/requests/get-task.js';
import { openGuard, type Guard } from '../../src/service/guard.js';
import { PostgresStore } from '../../src/store/postgres/store.js';
import { SqliteStore } from '../../src/store/sqlite/store.js';
import type { TaskStore } from '../../src/store/types.js';
import type { BenchConfig } from '../lib/config.js';
import { noopTool, rotatingAuthKey, taskCall } from '../lib/mcp.js';
import { pgLoad, randomLiveTask, sqliteLoad, sqliteOutbox } from '../lib/population.js';
import { loaderPool, type BenchPostgres } from '../lib/postgres.js';
import type { Results } from '../lib/results.js';
import { fmt, median, runRound, summarize } from '../lib/stats.js';
import { addRunsLatency } from '../lib/trials.js';

/**
 * Growth curves: one table of stored tasks grown step by step (on PostgreSQL 10^5 → 10^6 → 10^7,
 * on SQLite 10^5 → 10^6; the quick run uses small sizes), and at each size what a user waits for
 * and what a deployment does: tasks/get through the guard (audited, the default) on random live
 * tasks of any tenant, admission through the guard at 16 requestors, and retention's sweep over
 * the expired tenth. Each figure is measured in several runs at its size; the targets
 * (`addGrowthTargets`) compare the largest size with the smallest.
 */
export const growthScenario = (store: 'postgres' | 'sqlite') => `growth ${store}`;
export const GROWTH = {
  get: (size: string) => `tasks/get p99 at ${size} stored tasks`,
  admit: (size: string) => `admission rate @16 at ${size} stored tasks`,
  sweep: (size: string) => `sweep rate at ${size} stored tasks`,
} as const;

const CAPABILITIES = { list: {}, cancel: {}, requests: { tools: { call: {} } } };
export const TENANTS = 1_000;
/** Rows one load statement inserts at most; two statements run at once on PostgreSQL. */
const CHUNK = 500_000;
/** Runs of each measurement at one size. */
const RUNS = 3;

/** 100000 → "10^5"; a size that is no power of ten as is. */
export function sizeLabel(n: number): string {
  const k = Math.round(Math.log10(n));
  return 10 ** k === n ? `10^${k}` : String(n);
}

/** Stored tasks at each step, by store, for a full or a quick run. */
export function growthSizes(quick: boolean): { postgres: number[]; sqlite: number[] } {
  return quick ? { postgres: [1_000, 10_000, 100_000], sqlite: [1_000, 10_000] } : { postgres: [100_000, 1_000_000, 10_000_000], sqlite: [100_000, 1_000_000] };
}

interface Grown {
  store: TaskStore;
  /** Adds tasks from+1…to of `total` (the largest size) and leaves the table analyzed, as production's vacuum would. */
  grow(from: number, to: number, total: number): Promise<string>;
  close(): Promise<void>;
}

async function grownPostgres(pgServer: BenchPostgres): Promise<Grown> {
  const schema = pgServer.schemaName('growth');
  const store = await PostgresStore.open(pgServer.schemaUrl('growth'));
  const pool = loaderPool(pgServer.url, schema, 2);
  const base = Date.now();
  return {
    store,
    grow: async (from, to, total) => {
      const chunks: Array<[number, number]> = [];
      for (let a = from + 1; a <= to; a += CHUNK) chunks.push([a, Math.min(to, a + CHUNK - 1)]);
      // Two loaders at once, each taking the next chunk: both cores fill the table.
      const loader = async (client: pg.PoolClient) => {
        try {
          for (let chunk = chunks.shift(); chunk !== undefined; chunk = chunks.shift()) await client.query(pgLoad, [chunk[0], chunk[1], TENANTS, base, total]);
        } finally {
          client.release();
        }
      };
      await Promise.all([loader(await pool.connect()), loader(await pool.connect())]);
      // This server runs without autovacuum; a production one would have vacuumed and analyzed by now.
      await pool.query('VACUUM ANALYZE tasks');
      await pool.query('VACUUM ANALYZE task_outbox');
      // The load wrote gigabytes of WAL: the checkpoint it set off would spread its writes and
      // fsyncs over the next minutes, under the measurement. A server past its bulk load is not
      // in that checkpoint; its own come every few minutes, as here.
      await pool.query('CHECKPOINT');
      return (await pool.query<{ s: string }>(`SELECT pg_size_pretty(pg_total_relation_size('tasks')) AS s`)).rows[0]?.s ?? '?';
    },
    close: async () => {
      await store.close();
      // The largest table of the bench (10^7 tasks, 11 GB with its outbox) would stay in the page
      // cache and evict what later scenarios measure (the SQLite curve's file among them) until the
      // run's end drops every schema. The curve is done with it: it goes now.
      try {
        if (process.env.TASKLATCH_KEEP_SCHEMAS !== '1') await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      } finally {
        await pool.end();
      }
    },
  };
}

async function grownSqlite(): Promise<Grown> {
  const dir = await mkdtemp(join(tmpdir(), 'tasklatch-bench-growth-'));
  const store = await SqliteStore.open(join(dir, 'growth.db'));
  const base = BigInt(Date.now());
  return {
    store,
    grow: async (from, to, total) => {
      for (let a = from + 1; a <= to; a += CHUNK) {
        // BigInt binds as INTEGER; a JS number would bind as REAL.
        const range = { from: BigInt(a), to: BigInt(Math.min(to, a + CHUNK - 1)), total: BigInt(total), base };
        store.db.transaction(() => {
          store.db.prepare(sqliteLoad).run({ ...range, tenants: BigInt(TENANTS) });
          store.db.prepare(sqliteOutbox).run(range);
        })();
      }
      store.db.exec('ANALYZE');
      // As on PostgreSQL: the load's last transaction left its pages in the write-ahead log, to be
      // copied into the database (and synced) by a checkpoint under the measurement. A store past
      // its bulk load is not in that checkpoint.
      store.db.pragma('wal_checkpoint(TRUNCATE)');
      return `${Math.round((Number(store.db.pragma('page_count', { simple: true })) * Number(store.db.pragma('page_size', { simple: true }))) / 2 ** 20)} MB database`;
    },
    close: async () => {
      await store.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

const runsText = (values: readonly number[], unit: string) => `runs ${values.map((v) => `${fmt(v)}${unit}`).join(' / ')}`;

/** The time (ms) of each of `count` tasks/get of a random live task of the `n` loaded ones, one after another. */
export async function randomGets(guard: Guard, n: number, count: number): Promise<number[]> {
  const out: number[] = [];
  for (let k = 0; k < count; k++) {
    const target = randomLiveTask(n, TENANTS);
    const t0 = performance.now();
    const found = await getTask({ guard }, { auth: target.auth, taskId: target.taskId });
    out.push(performance.now() - t0);
    if (found.kind !== 'task') throw new Error(`tasks/get of ${target.taskId}: ${found.kind}`);
  }
  return out;
}

/**
 * Unmeasured reads before each size's runs. A load of 10^6 tasks or more keeps the process's
 * JavaScript idle for a minute or longer, and V8 shrinks an idle heap (a "Mark-Compact (reduce)"
 * from 67 to 26 MB in `--trace-gc`); the first 2,000 reads after it had 12 young-generation
 * collections and a full one of 17 ms, where a process in steady traffic has 2 to 4. That is the
 * heap growing back, whatever the size, so every size is read this long before it is measured.
 */
const WARM_UP_READS = 2_500;

/** tasks/get in RUNS runs of `samples` random live tasks each, after a warm-up: the median run's p99, every run kept. */
async function measureGets(results: Results, scenario: string, guard: Guard, n: number, samples: number, size: string): Promise<void> {
  const one = (count: number) => randomGets(guard, n, count);
  await one(WARM_UP_READS);
  const runs = [];
  for (let r = 0; r < RUNS; r++) runs.push(await one(samples));
  addRunsLatency(
    results,
    scenario,
    GROWTH.get(size),
    runs,
    `${RUNS} runs of ${samples} random live tasks of ${TENANTS} tenants (audited, the default) after ${WARM_UP_READS} unmeasured`,
  );
}

/** Admission through the guard at 16 requestors: the median of RUNS rounds' rates after a warm-up. */
async function measureAdmission(results: Results, scenario: string, guard: Guard, config: BenchConfig, size: string): Promise<void> {
  const descriptor = { name: noopTool.name, execution: { taskSupport: 'required' as const } };
  let n = 0;
  const admit = async (w: number) => {
    const out = await createTask(guard, { auth: rotatingAuthKey(w), tool: descriptor, request: taskCall(++n) });
    if (out.decision !== 'ACCEPT_TASK') throw new Error(`expected ACCEPT_TASK, got ${out.decision}`);
  };
  await runRound(16, config.warmupMs, admit);
  const rates: number[] = [];
  for (let r = 0; r < RUNS; r++) rates.push((await runRound(16, config.roundMs, admit)).rate);
  results.addFact(scenario, GROWTH.admit(size), median(rates), 'tasks/s', `median of ${RUNS} rounds of ${config.roundMs} ms (${runsText(rates, '/s')})`);
}

/** Retention's sweep (retention 0: the expired tenth is due) in batches of 1000, up to `batches` of them. */
async function measureSweep(results: Results, scenario: string, store: TaskStore, batches: number, size: string): Promise<void> {
  let deleted = 0;
  const times: number[] = [];
  const now = Date.now();
  for (let b = 0; b < batches; b++) {
    const t0 = performance.now();
    const went = (await store.sweepExpired({ now, limit: 1000, retentionMs: 0 })).tasks;
    if (went === 0) break;
    times.push(performance.now() - t0);
    deleted += went;
  }
  const seconds = times.reduce((a, t) => a + t, 0) / 1000;
  const s = summarize(times);
  results.addFact(
    scenario,
    GROWTH.sweep(size),
    deleted / seconds,
    'rows/s',
    `${deleted} expired tasks in ${times.length} batches of 1000 (batch p50 ${fmt(s.p50)} ms, max ${fmt(s.max)} ms)`,
  );
}

async function curve(results: Results, config: BenchConfig, kind: 'postgres' | 'sqlite', grown: Grown, sizes: readonly number[]): Promise<void> {
  const scenario = growthScenario(kind);
  const guard = openGuard({ store: grown.store, capabilities: CAPABILITIES });
  const total = sizes[sizes.length - 1] as number;
  let stored = 0;
  try {
    for (const n of sizes) {
      const size = sizeLabel(n);
      const t0 = performance.now();
      const space = await grown.grow(stored, n, total);
      results.addFact(
        scenario,
        `load ${sizeLabel(stored || 1)} → ${size} stored tasks (+ outbox, vacuum/analyze)`,
        (performance.now() - t0) / 1000,
        's',
        space,
      );
      stored = n;
      await measureGets(results, scenario, guard, n, config.readSamples, size);
      await measureAdmission(results, scenario, guard, config, size);
      await measureSweep(results, scenario, grown.store, config.quick ? 10 : 40, size);
    }
  } finally {
    await grown.close();
  }
}

/** The growth scenario on PostgreSQL and SQLite. */
export async function growth(results: Results, config: BenchConfig, pgServer: BenchPostgres): Promise<void> {
  const sizes = growthSizes(config.quick);
  console.log(
    `\n[growth] tasks/get, admission and the sweep as one table grows: PostgreSQL ${sizes.postgres.map(sizeLabel).join(' → ')}, SQLite ${sizes.sqlite.map(sizeLabel).join(' → ')}`,
  );
  // TASKLATCH_BENCH_GROWTH_STORES=sqlite (or postgres) grows one store only.
  const only = process.env.TASKLATCH_BENCH_GROWTH_STORES?.split(',').map((s) => s.trim());
  if (only === undefined || only.includes('postgres')) await curve(results, config, 'postgres', await grownPostgres(pgServer), sizes.postgres);
  if (only === undefined || only.includes('sqlite')) await curve(results, config, 'sqlite', await grownSqlite(), sizes.sqlite);
}
