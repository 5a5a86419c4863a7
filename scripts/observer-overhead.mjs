// What the guard's observers (Prometheus metrics and the decision log at info) cost on the
// caller's path: task-augmented create + tasks/get pairs per second on the memory and SQLite
// stores, without and with them, alternating, median of 5 rounds. Run after `npm run build`:
//   node scripts/observer-overhead.mjs
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TaskMetrics } from '../dist/metrics/task-metrics.js';
import { decisionLog } from '../dist/runtime/decision-log.js';
import { createLogger } from '../dist/runtime/log.js';
import { readTask } from '../dist/runtime/requestor-reads.js';
import { openGuard } from '../dist/service/guard.js';
import { MemoryStore } from '../dist/store/memory/memory-store.js';
import { SqliteStore } from '../dist/store/sqlite/store.js';

const capabilities = { cancel: {}, requests: { tools: { call: {} } } };
const tool = { name: 't', execution: { taskSupport: 'optional' } };

async function pairsPerSecond(kind, observed, n) {
  const store = kind === 'memory' ? new MemoryStore() : await SqliteStore.open(join(mkdtempSync(join(tmpdir(), 'tasklatch-overhead-')), 'tasks.db'));
  const guard = openGuard({ store, capabilities });
  const metrics = observed ? new TaskMetrics(guard.context, { processMetrics: false }) : null;
  if (observed) guard.context.events.add(decisionLog(createLogger('info')));
  const started = performance.now();
  for (let i = 0; i < n; i++) {
    // One caller per task: the active-task limit stays out of the way.
    const out = await guard.requestor.create({ auth: `a/${i}`, tool, request: { method: 'tools/call', params: { name: 't', arguments: {}, task: {} } } });
    await readTask(guard, { auth: `a/${i}`, method: 'tasks/get', taskId: out.record.taskId });
  }
  const rate = (n / (performance.now() - started)) * 1000;
  metrics?.close();
  await store.close();
  return rate;
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
for (const [kind, n] of [
  ['memory', 20_000],
  ['sqlite', 5_000],
]) {
  const off = [];
  const on = [];
  for (let round = 0; round < 5; round++) {
    off.push(await pairsPerSecond(kind, false, n));
    on.push(await pairsPerSecond(kind, true, n));
  }
  const a = median(off);
  const b = median(on);
  console.log(`${kind}: ${a.toFixed(0)} pairs/s without observers, ${b.toFixed(0)} with metrics and decision log (${(((b - a) / a) * 100).toFixed(1)}%)`);
}
