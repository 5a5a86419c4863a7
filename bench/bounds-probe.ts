import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openGuard } from '../src/service/guard.js';
import { SqliteStore } from '../src/store/sqlite/store.js';
import { ToolRegistry } from '../src/tools/tool-registry.js';
import { ALL_CAPS } from '../test/support/records.js';
import { noopTool, taskCall } from './lib/mcp.js';
import { linkMigrations } from './lib/migrations-link.js';
import { median } from './lib/stats.js';
import { createTask } from '../src/runtime/requests/create-task.js';

/**
 * `node dist/bench/bench/bounds-probe.js`: what the admission bounds (maxActiveTasks 100,
 * maxStoredTasks 1000, the defaults) cost a SQLite admission as a caller's stored tasks grow.
 * For each history size, 20 callers each hold that many finished tasks; then 1,500 admissions
 * spread over them are timed (CPU of this process and wall time per admission), with the
 * schema as it ships and with the index it replaced (tasks_active_by_auth, the count reading
 * each stored row from the table), in one run, alternating.
 */
const CALLERS = 20;
const MEASURED = 1500;
const HISTORIES = [0, 250, 900];

async function probe(history: number, schema: 'shipped' | 'replaced'): Promise<{ cpuUs: number; wallUs: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'tasklatch-bounds-'));
  const store = await SqliteStore.open(join(dir, 'bounds.db'));
  try {
    if (schema === 'replaced') {
      store.db.exec('DROP INDEX tasks_held_by_auth');
      store.db.exec("CREATE INDEX tasks_active_by_auth ON tasks (auth_key) WHERE status IN ('working', 'input_required')");
    }
    const guard = openGuard({ store, capabilities: ALL_CAPS });
    const descriptor = new ToolRegistry([noopTool]).descriptor(noopTool);
    let n = 0;
    for (let c = 0; c < CALLERS; c++) {
      const auth = `bounds/${c}`;
      for (let i = 0; i < history; i++) {
        const created = await createTask(guard, { auth, tool: descriptor, request: taskCall(++n) });
        if (created.decision !== 'ACCEPT_TASK' || created.record === null) throw new Error(`seed: ${created.decision}`);
        const done = await guard.worker.transition({
          auth,
          taskId: created.record.taskId,
          write: { status: 'completed', expectedVersion: created.record.version, result: { content: [] } },
        });
        if (done.decision !== 'APPLY_TRANSITION') throw new Error(`seed: ${done.decision}`);
      }
    }
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    for (let i = 0; i < MEASURED; i++) {
      const out = await createTask(guard, { auth: `bounds/${i % CALLERS}`, tool: descriptor, request: taskCall(++n) });
      if (out.decision !== 'ACCEPT_TASK') throw new Error(`measured: ${out.decision}`);
    }
    const wall = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    return { cpuUs: (cpu.user + cpu.system) / MEASURED, wallUs: (wall * 1000) / MEASURED };
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  linkMigrations();
  for (const history of HISTORIES) {
    const figures: Record<string, { cpuUs: number; wallUs: number }[]> = { shipped: [], replaced: [] };
    for (let round = 0; round < 3; round++) {
      for (const schema of ['replaced', 'shipped'] as const) figures[schema]!.push(await probe(history, schema));
    }
    const line = (schema: string) => {
      const runs = figures[schema]!;
      return `${schema} ${median(runs.map((r) => r.cpuUs)).toFixed(1)} µs CPU, ${median(runs.map((r) => r.wallUs)).toFixed(1)} µs wall`;
    };
    console.log(`${history} stored tasks per caller (+ up to 75 open): ${line('replaced')}; ${line('shipped')} (medians of 3)`);
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
