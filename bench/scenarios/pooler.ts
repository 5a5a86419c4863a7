import { awaitTaskResult } from '../../src/service/result-wait.js';
import { createLogger } from '../../src/runtime/log.js';
import { createRuntime, type TaskRuntime } from '../../src/runtime/task-runtime.js';
import { createTask } from '../../src/runtime/requests/create-task.js';
import { PostgresStore } from '../../src/store/postgres/store.js';
import { PGBOUNCER_BIN, poolerUnavailable, startPgbouncer } from '../../test/support/pgbouncer.js';
import type { BenchConfig } from '../lib/config.js';
import { noopTool, taskCall } from '../lib/mcp.js';
import type { BenchPostgres } from '../lib/postgres.js';
import { runGroup, type Results, type Variant } from '../lib/results.js';
import { WORKER_CONCURRENCY } from './lifecycle.js';

export const POOLER_GROUP = 'lifecycle postgres, through PgBouncer';

export const P = {
  direct: `tasklatch create → worker runs → result, direct to PostgreSQL (worker concurrency ${WORKER_CONCURRENCY})`,
  pooled: `tasklatch create → worker runs → result, through PgBouncer transaction mode, pgbouncer=true, LISTEN direct (worker concurrency ${WORKER_CONCURRENCY})`,
} as const;

let counter = 0;

function runtimeOn(store: PostgresStore): TaskRuntime {
  return createRuntime({
    store,
    tools: [noopTool],
    callersIdentified: true,
    worker: { concurrency: WORKER_CONCURRENCY },
    logger: createLogger('silent'),
  });
}

/**
 * The lifecycle of `lifecycle.ts` (create → the in-process worker runs it → result) on one
 * store direct to PostgreSQL and on one through Debian's PgBouncer in transaction mode, started
 * here in front of the same server (20 server connections, as the store's pool): the store URL
 * with `pgbouncer=true` and the direct URL to LISTEN on, as README's deployment behind a pooler.
 */
export async function pooler(results: Results, config: BenchConfig, pg: BenchPostgres): Promise<void> {
  const skip = poolerUnavailable(false);
  if (skip !== null) {
    console.log(`\n[pooler] skipped: ${skip}`);
    results.notes.push(`lifecycle through PgBouncer not measured: ${skip}`);
    return;
  }
  console.log(`\n[pooler] lifecycle direct and through PgBouncer (${PGBOUNCER_BIN}, transaction mode)`);
  const bouncer = await startPgbouncer(pg.url, { resetAlways: false, poolSize: 20 });
  const runtimes: TaskRuntime[] = [];
  const stores: PostgresStore[] = [];
  try {
    const directUrl = pg.schemaUrl('pool_direct');
    const pooledDirectUrl = pg.schemaUrl('pool_pooled');
    const pooledUrl = new URL(pooledDirectUrl);
    const at = new URL(bouncer.url);
    pooledUrl.hostname = at.hostname;
    pooledUrl.port = at.port;
    pooledUrl.searchParams.set('pgbouncer', 'true');
    stores.push(await PostgresStore.open(directUrl), await PostgresStore.open(pooledUrl.toString(), { listenUrl: pooledDirectUrl }));
    for (const store of stores) {
      const runtime = runtimeOn(store);
      await runtime.start();
      runtimes.push(runtime);
    }
    const variant = (name: string, runtime: TaskRuntime): Variant => {
      const descriptor = runtime.tools.descriptor(noopTool);
      const done = new Map<number, number>();
      return {
        name,
        op: async (w) => {
          // A fresh auth key every 500 tasks, below the default bound of stored tasks per caller.
          const n = done.get(w) ?? 0;
          done.set(w, n + 1);
          const auth = `pool/${w}/${Math.floor(n / 500)}`;
          const created = await createTask(runtime.guard, { auth, tool: descriptor, request: taskCall(++counter) });
          if (created.decision !== 'ACCEPT_TASK') throw new Error(`expected ACCEPT_TASK, got ${created.decision}`);
          const out = await awaitTaskResult(runtime.guard, { auth, taskId: created.record.taskId });
          if (out.decision !== 'RETURN_RESULT') throw new Error(`expected RETURN_RESULT, got ${out.decision}`);
        },
      };
    };
    const at16 = { ...config, concurrency: config.concurrency.filter((c) => c === 16) };
    await runGroup(results, POOLER_GROUP, [variant(P.direct, runtimes[0]!), variant(P.pooled, runtimes[1]!)], at16);
  } finally {
    for (const runtime of runtimes) await runtime.close();
    for (const store of stores) await store.close();
    await bouncer.stop();
  }
}
