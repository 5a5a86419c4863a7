import { awaitTaskResult } from '../../src/service/result-wait.js';
import { randomUUID } from 'node:crypto';
import PgBoss from 'pg-boss';
import { Logger, run as runGraphile } from 'graphile-worker';
import { createLogger } from '../../src/runtime/log.js';
import { createRuntime, type TaskRuntime } from '../../src/runtime/task-runtime.js';
import { PostgresStore } from '../../src/store/postgres/store.js';
import pgDriver from 'pg';
import { startCpuWindow } from '../lib/backend-cpu.js';
import { pgCeiling } from '../lib/ceilings.js';
import type { BenchConfig } from '../lib/config.js';
import { noopTool, taskCall, toolArgs } from '../lib/mcp.js';
import type { BenchPostgres } from '../lib/postgres.js';
import { schemaPool } from '../lib/postgres.js';
import { runGroup, type Results, type Variant } from '../lib/results.js';
import { pgbenchAdmission } from './pgbench.js';
import { createTask } from '../../src/runtime/requests/create-task.js';

/** Handlers run at once by each worker of this scenario: tasklatch's, pg-boss's fetch loop and graphile-worker's. */
export const WORKER_CONCURRENCY = 8;

export const LIFE_GROUP = 'lifecycle postgres';
export const KEYED_GROUP = 'admission postgres, key and limit on';

export const L = {
  worker: `tasklatch create → worker runs → result (service, worker concurrency ${WORKER_CONCURRENCY})`,
  direct: 'tasklatch create → claim → complete (service, no worker loop)',
  boss: 'pg-boss send → fetch → complete',
  graphile: `graphile-worker addJob → task runs → completes (concurrency ${WORKER_CONCURRENCY})`,
} as const;

export const K = {
  keyed: 'tasklatch requestor.create, idempotency key + maxActiveTasks 100',
  bare: 'tasklatch requestor.create, no key, no limit (diagnostic)',
  ceiling: 'Node raw ceiling (task+outbox+audit txn)',
  bossSend: 'pg-boss send',
  pgbench: 'pgbench -c 16, the same admission statements (libpq, C)',
  pgbenchInTx: 'pgbench -c 16, the same with pg_notify inside the admission transaction (diagnostic)',
} as const;

const RESULT = { content: [{ type: 'text', text: 'ok' }] };
let counter = 0;
const next = () => ++counter;

function runtimeOn(store: PostgresStore, execute: boolean): TaskRuntime {
  return createRuntime({
    store,
    tools: [noopTool],
    callersIdentified: true,
    execute,
    worker: { concurrency: WORKER_CONCURRENCY },
    logger: createLogger('silent'),
  });
}

/**
 * The whole task path on PostgreSQL, closed loop: tasklatch through its worker and through the
 * same three calls a pg-boss requestor makes, pg-boss send → fetch → complete (called directly:
 * its best case), and graphile-worker addJob → its runner runs the job → the job is written back.
 * Then admission with an idempotency key and the active-task limit on, against pg-boss send, the
 * Node raw ceiling and pgbench running tasklatch's own admission statements.
 */
export async function lifecycle(results: Results, config: BenchConfig, pg: BenchPostgres): Promise<void> {
  const at = config.concurrency.filter((c) => c === 1 || c === 16);
  const lifeConfig = { ...config, concurrency: at };
  console.log(`\n[lifecycle] PostgreSQL: tasklatch, pg-boss and graphile-worker (worker concurrency ${WORKER_CONCURRENCY})`);
  // Each side's connections carry an application name of their own: its backends' CPU is read by it.
  const app = (side: string) => `tlbench_${pg.run}_life_${side}`;
  const workerStore = await PostgresStore.open(named(pg.schemaUrl('life_worker'), app('worker')));
  const directStore = await PostgresStore.open(named(pg.schemaUrl('life_direct'), app('direct')));
  const withWorker = runtimeOn(workerStore, true);
  await withWorker.start();
  const direct = runtimeOn(directStore, false);
  const boss = new PgBoss({
    connectionString: named(pg.url, app('boss')),
    schema: pg.schemaName('life_boss'),
    max: 20,
    supervise: false,
    schedule: false,
    migrate: true,
  });
  boss.on('error', (error: Error) => console.error('[pg-boss]', error.message));
  await boss.start();
  await boss.createQueue('bench_life');
  const graphile = await graphileRunner(pg, app('graphile'));
  const monitor = new pgDriver.Client({ connectionString: pg.url });
  await monitor.connect();
  const cpuOf = (side: string) => () => startCpuWindow(monitor, { applicationName: app(side) });
  const descriptor = withWorker.tools.descriptor(noopTool);
  // Finished tasks stay stored until their ttl: a requestor moves to a fresh auth key every 500
  // tasks, below the default bound of 1000 stored tasks per caller.
  const done = new Map<number, number>();
  const authOf = (w: number) => {
    const n = done.get(w) ?? 0;
    done.set(w, n + 1);
    return `life/${w}/${Math.floor(n / 500)}`;
  };
  const variants: Variant[] = [
    {
      name: L.worker,
      cpu: cpuOf('worker'),
      op: async (w) => {
        const auth = authOf(w);
        const created = await createTask(withWorker.guard, { auth, tool: descriptor, request: taskCall(next()) });
        if (created.decision !== 'ACCEPT_TASK') throw new Error(`expected ACCEPT_TASK, got ${created.decision}`);
        const out = await awaitTaskResult(withWorker.guard, { auth, taskId: created.record.taskId });
        if (out.decision !== 'RETURN_RESULT') throw new Error(`expected RETURN_RESULT, got ${out.decision}`);
      },
    },
    {
      name: L.direct,
      cpu: cpuOf('direct'),
      op: async (w) => {
        const created = await createTask(direct.guard, { auth: authOf(w), tool: descriptor, request: taskCall(next()) });
        if (created.decision !== 'ACCEPT_TASK') throw new Error(`expected ACCEPT_TASK, got ${created.decision}`);
        for (let attempt = 0; attempt < 5; attempt++) {
          const [task] = await direct.guard.worker.claim({ owner: `bench-${w}`, leaseMs: 30_000, limit: 1, maxAttempts: 5, abandonedResult: null });
          if (task === undefined) continue;
          const done = await direct.guard.worker.transition({
            auth: task.authKey,
            taskId: task.taskId,
            write: { status: 'completed', expectedVersion: task.version, result: RESULT },
          });
          if (done.decision !== 'APPLY_TRANSITION') throw new Error(`expected APPLY_TRANSITION, got ${done.decision}`);
          return;
        }
        throw new Error('claim found no task after 5 attempts');
      },
    },
    {
      name: L.boss,
      cpu: cpuOf('boss'),
      op: async () => {
        await boss.send('bench_life', toolArgs(next()));
        for (let attempt = 0; attempt < 5; attempt++) {
          const job = (await boss.fetch<unknown>('bench_life', { batchSize: 1 }))[0];
          if (job === undefined) continue;
          await boss.complete('bench_life', job.id, RESULT);
          return;
        }
        throw new Error('pg-boss fetch found no job after 5 attempts');
      },
    },
    { name: L.graphile, cpu: cpuOf('graphile'), op: () => graphile.addAndWait(toolArgs(next())) },
  ];
  try {
    await runGroup(results, LIFE_GROUP, variants, lifeConfig);
  } finally {
    await monitor.end();
    await graphile.stop();
    await withWorker.close();
    await direct.close();
    await workerStore.close();
    await directStore.close();
  }

  console.log('\n[lifecycle] PostgreSQL admission, idempotency key and active-task limit on');
  const keyedStore = await PostgresStore.open(pg.schemaUrl('keyed'));
  const keyed = runtimeOn(keyedStore, false);
  const bare = createRuntime({ store: keyedStore, tools: [noopTool], callersIdentified: true, execute: false, limits: { maxActiveTasks: null } });
  const pool = schemaPool(pg.url, pg.schemaName('keyed'), 20);
  await boss.createQueue('bench_keyed');
  // Admitted tasks never finish here: each requestor moves to a fresh auth key every 50, below the limit of 100.
  const rotating = (w: number) => `keyed/${w}/${Math.floor(counter / 50)}`;
  const keyedVariants: Variant[] = [
    {
      name: K.keyed,
      op: async (w) => {
        const out = await createTask(keyed.guard, { auth: rotating(w), tool: descriptor, request: taskCall(next()), idempotencyKey: randomUUID() });
        if (out.decision !== 'ACCEPT_TASK') throw new Error(`expected ACCEPT_TASK, got ${out.decision}`);
      },
    },
    {
      name: K.bare,
      concurrencies: [16],
      op: async (w) => {
        const out = await createTask(bare.guard, { auth: rotating(w), tool: descriptor, request: taskCall(next()) });
        if (out.decision !== 'ACCEPT_TASK') throw new Error(`expected ACCEPT_TASK, got ${out.decision}`);
      },
    },
    { name: K.ceiling, op: (w) => pgCeiling(pool, `ceiling/${w}`, next()) },
    {
      name: K.bossSend,
      op: async () => {
        if ((await boss.send('bench_keyed', toolArgs(next()))) === null) throw new Error('pg-boss send returned no id');
      },
    },
  ];
  try {
    await runGroup(results, KEYED_GROUP, keyedVariants, lifeConfig);
    if (at.includes(16)) {
      await pgbenchAdmission(results, config, pg, KEYED_GROUP, K.pgbench);
      await pgbenchAdmission(results, config, pg, KEYED_GROUP, K.pgbenchInTx, true);
    }
  } finally {
    await boss.stop({ graceful: false, wait: true });
    await pool.end();
    await keyed.close();
    await bare.close();
    await keyedStore.close();
  }
}

/** A graphile-worker runner with one no-op task; `addAndWait` resolves once the job is written back as done. */
async function graphileRunner(pg: BenchPostgres, applicationName: string): Promise<{ addAndWait(payload: unknown): Promise<void>; stop(): Promise<void> }> {
  const runner = await runGraphile({
    connectionString: named(pg.url, applicationName),
    schema: pg.schemaName('graphile'),
    concurrency: WORKER_CONCURRENCY,
    maxPoolSize: 20,
    noHandleSignals: true,
    logger: new Logger(() => () => undefined),
    taskList: { bench_noop: async () => undefined },
  });
  // A job may be written back before its adder starts waiting: both sides meet in the map.
  const done = new Map<string, { resolve: () => void; promise: Promise<void> }>();
  const entry = (id: string) => {
    let found = done.get(id);
    if (found === undefined) {
      let resolve: () => void = () => undefined;
      const promise = new Promise<void>((r) => (resolve = r));
      found = { resolve, promise };
      done.set(id, found);
    }
    return found;
  };
  runner.events.on('job:complete', ({ job, error }) => {
    if (error !== null && error !== undefined) console.error('[graphile-worker]', error instanceof Error ? error.message : JSON.stringify(error));
    entry(job.id).resolve();
  });
  return {
    addAndWait: async (payload) => {
      const job = await runner.addJob('bench_noop', payload);
      await entry(job.id).promise;
      done.delete(job.id);
    },
    stop: () => runner.stop(),
  };
}

/** `url` with its connections named `applicationName` (pg_stat_activity.application_name). */
function named(url: string, applicationName: string): string {
  const u = new URL(url);
  u.searchParams.set('application_name', applicationName);
  return u.toString();
}
