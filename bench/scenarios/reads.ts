import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { GetTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import type pg from 'pg';
import { getTask } from '../../src/runtime/requests/get-task.js';
import { listTasks } from '../../src/runtime/requests/list-tasks.js';
import { openGuard } from '../../src/service/guard.js';
import { PostgresStore } from '../../src/store/postgres/store.js';
import { SqliteStore } from '../../src/store/sqlite/store.js';
import type { TaskStore } from '../../src/store/types.js';
import type { BenchConfig } from '../lib/config.js';
import { memoryClient, tasklatchServer } from '../lib/mcp.js';
import { loaderPool, type BenchPostgres } from '../lib/postgres.js';
import type { Results } from '../lib/results.js';
import { READ } from '../lib/targets.js';
import { timeEach } from '../lib/stats.js';
import { addRunsLatency } from '../lib/trials.js';
import { authKeyOf as authKey, pgLoad, randomLiveTask, sqliteLoad, sqliteOutbox } from '../lib/population.js';

const CAPABILITIES = { list: {}, cancel: {}, requests: { tools: { call: {} } } };
/** Reads before the measured ones: tasks/get, and each page of tasks/list (first and deep). */
const GET_WARMUP = 500;
const LIST_WARMUP = 50;
/** Measured runs of each read, each its own p99 (the target is the median run's). */
const RUNS = 3;

/** Scenario 5 on one store: the load is done; reads, then the sweeper. */
async function measure(results: Results, config: BenchConfig, kind: string, store: TaskStore, onSweepDone: () => Promise<string | null>): Promise<void> {
  const scenario = `reads ${kind}`;
  const n = config.readTasks;
  const tenants = config.readTenants;
  const audited = openGuard({ store, capabilities: CAPABILITIES });
  const quiet = openGuard({ store, capabilities: CAPABILITIES, auditReads: false });
  const samples = config.readSamples;

  // Each read audited and not, taking turns so both see the same cache state: a warm-up, then
  // RUNS runs of `samples`, each its own p99 (the target reports their spread).
  const timedRuns = async <At>(warmup: number, next: () => At, read: (guard: typeof audited, at: At) => Promise<void>) => {
    const run = async (count: number) => {
      const on: number[] = [];
      const off: number[] = [];
      for (let k = 0; k < count; k++) {
        const at = next();
        for (const [guard, out] of [
          [audited, on],
          [quiet, off],
        ] as const) {
          const t0 = performance.now();
          await read(guard, at);
          out.push(performance.now() - t0);
        }
      }
      return { on, off };
    };
    await run(warmup);
    const runs = [];
    for (let r = 0; r < RUNS; r++) runs.push(await run(samples));
    return runs;
  };
  const addRuns = (runs: ReadonlyArray<{ on: number[]; off: number[] }>, names: { on: string; off: string }, notes: { on: string; off: string }) => {
    addRunsLatency(
      results,
      scenario,
      names.on,
      runs.map((r) => r.on),
      notes.on,
    );
    addRunsLatency(
      results,
      scenario,
      names.off,
      runs.map((r) => r.off),
      notes.off,
    );
  };

  const getRuns = await timedRuns(
    GET_WARMUP,
    () => randomLiveTask(n, tenants),
    async (guard, target) => {
      const found = await getTask({ guard }, { auth: target.auth, taskId: target.taskId });
      if (found.kind !== 'task') throw new Error(`tasks/get of ${target.taskId}: ${found.kind}`);
    },
  );
  const getNote = `${RUNS} runs of ${samples} random live tasks after ${GET_WARMUP} unmeasured`;
  addRuns(getRuns, { on: READ.getAudited, off: READ.getQuiet }, { on: getNote, off: getNote });

  // The same reads through the wire, for ten tenants (one in-memory client each).
  const server = await tasklatchServer(store, { execute: false, listen: false });
  const clients: Client[] = [];
  for (let t = 0; t < 10; t++) clients.push(await memoryClient(server, { tenant: `tenant-${t}`, subject: 'alice' }));
  const wireTargets = Array.from({ length: Math.ceil(samples / 2) + 50 }, () => randomLiveTask(n, tenants, 10));
  const wire = await timeEach(wireTargets.length, async (k) => {
    const target = wireTargets[k] as { taskId: string; auth: string };
    const client = clients[Number(/^tenant-(\d+)\//.exec(target.auth)?.[1])] as Client;
    await client.request({ method: 'tasks/get', params: { taskId: target.taskId } }, GetTaskResultSchema);
  });
  results.addLatency(scenario, READ.getWire, wire.slice(50));
  await Promise.allSettled(clients.map((c) => c.close()));
  await server.close();

  // tasks/list: a first page of a random tenant, and a deep page from a cursor the guard gave.
  const listPage = (what: string) => async (guard: typeof audited, at: { auth: string; cursor?: string }) => {
    const page = await listTasks({ guard }, at);
    if (page.kind !== 'page' || page.records.length === 0) throw new Error(`${what}tasks/list of ${at.auth}: empty`);
  };
  const listNote = `${RUNS} runs of ${samples} after ${LIST_WARMUP} unmeasured`;
  const firstRuns = await timedRuns(LIST_WARMUP, () => ({ auth: authKey(Math.floor(Math.random() * tenants)) }), listPage(''));
  addRuns(firstRuns, { on: READ.firstAudited, off: READ.firstQuiet }, { on: listNote, off: listNote });

  const livePerTenant = Math.floor((0.9 * n) / tenants);
  const depth = Math.max(1, Math.min(15, Math.floor(livePerTenant / audited.context.limits.pageSize) - 2));
  const cursors: Array<{ auth: string; cursor: string }> = [];
  for (let k = 0; k < Math.min(100, tenants); k++) {
    const auth = authKey(Math.floor((k * tenants) / Math.min(100, tenants)));
    let cursor: string | undefined;
    for (let p = 0; p < depth; p++) {
      const page = await listTasks({ guard: quiet }, { auth, cursor });
      cursor = page.kind === 'page' ? (page.nextCursor ?? undefined) : undefined;
    }
    if (cursor !== undefined) cursors.push({ auth, cursor });
  }
  const deepRuns = await timedRuns(
    LIST_WARMUP,
    () => cursors[Math.floor(Math.random() * cursors.length)] as { auth: string; cursor: string },
    listPage('deep '),
  );
  const pages = Math.ceil(livePerTenant / audited.context.limits.pageSize);
  addRuns(
    deepRuns,
    { on: READ.deepAudited, off: READ.deepQuiet },
    { on: `page ${depth + 1} of ~${pages}; ${listNote}`, off: `page ${depth + 1}; ${listNote}` },
  );

  // The sweeper over the expired tenth, in batches of 1000, within the time budget.
  const batches: number[] = [];
  let deleted = 0;
  const started = performance.now();
  const now = Date.now();
  while (performance.now() - started < config.sweepBudgetMs) {
    const t0 = performance.now();
    // Retention 0: the expired tenth is due at once, as it was before retention.
    const went = (await store.sweepExpired({ now, limit: 1000, retentionMs: 0 })).tasks;
    batches.push(performance.now() - t0);
    deleted += went;
    if (went === 0) break;
  }
  const seconds = (performance.now() - started) / 1000;
  const expected = Math.round(n / 10);
  results.addFact(
    scenario,
    'sweepExpired deletion rate (batches of 1000)',
    deleted / seconds,
    'rows/s',
    `${deleted} of ~${expected} expired rows in ${seconds.toFixed(1)} s${deleted < expected * 0.95 ? ' (time budget reached)' : ''}`,
  );
  results.addLatency(scenario, 'sweepExpired batch of 1000', batches.slice(0, -1).length > 0 ? batches.slice(0, -1) : batches);
  const diagnostic = await onSweepDone();
  if (diagnostic !== null) console.log(diagnostic);
}

async function explain(pool: pg.Pool, label: string, text: string, params: unknown[]): Promise<string> {
  const plan = await pool.query<{ 'QUERY PLAN': string }>(`EXPLAIN (ANALYZE, BUFFERS) ${text}`, params);
  return `-- ${label}\n${plan.rows.map((r) => r['QUERY PLAN']).join('\n')}`;
}

/** Scenario 5: reads at scale on PostgreSQL and SQLite. */
export async function readsAtScale(results: Results, config: BenchConfig, pgServer: BenchPostgres): Promise<void> {
  const n = config.readTasks;
  const tenants = config.readTenants;
  console.log(`\n[5] reads at scale: ${n} tasks over ${tenants} tenants`);

  {
    const schema = pgServer.schemaName('reads');
    const store = await PostgresStore.open(pgServer.schemaUrl('reads'));
    const pool = loaderPool(pgServer.url, schema, 2);
    const t0 = performance.now();
    await pool.query(pgLoad, [1, n, tenants, Date.now(), n]);
    await pool.query('VACUUM ANALYZE tasks');
    await pool.query('VACUUM ANALYZE task_outbox');
    // The load wrote gigabytes of WAL: the checkpoint it set off would spread its writes and
    // fsyncs over the next minutes, under the measurement. A server past its bulk load is not
    // in that checkpoint; its own come every few minutes, as here.
    await pool.query('CHECKPOINT');
    const size = (await pool.query<{ s: string }>(`SELECT pg_size_pretty(pg_total_relation_size('tasks')) AS s`)).rows[0]?.s ?? '?';
    results.addFact('reads postgres', 'bulk load (tasks + outbox, VACUUM ANALYZE)', (performance.now() - t0) / 1000, 's', `tasks table with indexes: ${size}`);
    const sample = randomLiveTask(n, tenants);
    const plans = [
      await explain(pool, 'tasks/get', `SELECT * FROM tasks WHERE task_id = $1 AND auth_key = $2 AND (expires_at_ms IS NULL OR expires_at_ms > $3)`, [
        sample.taskId,
        sample.auth,
        Date.now(),
      ]),
      await explain(
        pool,
        'tasks/list first page',
        `SELECT * FROM tasks WHERE auth_key = $1 AND (expires_at_ms IS NULL OR expires_at_ms > $2) ORDER BY created_at_ms, task_id LIMIT $3`,
        [sample.auth, Date.now(), 51],
      ),
    ];
    await measure(results, config, 'postgres', store, async () => {
      const sweepPlan = await explain(
        pool,
        'sweep batch, run after the measured sweep (nothing left to delete: shows the access path)',
        `DELETE FROM tasks WHERE task_id IN (SELECT task_id FROM tasks WHERE expires_at_ms <= $1 ORDER BY expires_at_ms LIMIT $2 FOR UPDATE SKIP LOCKED)`,
        [Date.now(), 1000],
      ).catch((e: Error) => e.message);
      results.notes.push(...plans, sweepPlan);
      return null;
    });
    await pool.end();
    await store.close();
  }

  {
    const dir = await mkdtemp(join(tmpdir(), 'tasklatch-bench-reads-'));
    const store = await SqliteStore.open(join(dir, 'reads.db'));
    const t0 = performance.now();
    store.db.transaction(() => {
      // BigInt binds as INTEGER; a JS number would bind as REAL and print as "72.0".
      const range = { from: 1n, to: BigInt(n), total: BigInt(n), base: BigInt(Date.now()) };
      store.db.prepare(sqliteLoad).run({ ...range, tenants: BigInt(tenants) });
      store.db.prepare(sqliteOutbox).run(range);
    })();
    store.db.exec('ANALYZE');
    results.addFact('reads sqlite', 'bulk load (tasks + outbox, one transaction, ANALYZE)', (performance.now() - t0) / 1000, 's');
    await measure(results, config, 'sqlite', store, async () => {
      // The sweeper's ON DELETE CASCADE deletes outbox rows by task_id: the plan shows whether
      // that is an index search or a scan of the whole outbox per deleted task.
      const plan = store.db.prepare('EXPLAIN QUERY PLAN DELETE FROM task_outbox WHERE task_id = ?').all('x') as Array<{ detail: string }>;
      results.notes.push(`-- sqlite: plan of the cascade's child delete\n${plan.map((p) => p.detail).join('\n')}`);
      return null;
    });
    await store.close();
    await rm(dir, { recursive: true, force: true });
  }
}
