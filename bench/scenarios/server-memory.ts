import type { BenchPostgres } from '../lib/postgres.js';
import type { PollingConfig } from '../lib/polling-config.js';
import { MEMORY_SCENARIO } from '../lib/polling-targets.js';
import type { Results } from '../lib/results.js';
import { fmt, sleep } from '../lib/stats.js';
import { startLoad, startServer, type PollStore } from './http/servers.js';

/**
 * Memory of the server process: RSS after a full GC before and after opening N of something,
 * divided by N. Sessions and blocked tasks/result come from the load generator's process; a
 * waiting task is one admitted and not yet run (what the store and the server hold for it).
 */
export async function serverMemory(results: Results, config: PollingConfig, pg: BenchPostgres): Promise<void> {
  console.log('\n[8] server memory: RSS per open 2025-11-25 session, per blocked tasks/result, per waiting task');
  await perSessionAndWait(results, config, pg);
  for (const store of ['memory', 'sqlite', 'postgres'] as const) await perTask(results, config, pg, store);
}

interface Memory {
  rss: number;
  heap: number;
}

/** RSS and heap after GC, settled: the median of three readings a little apart. */
async function settled(read: () => Promise<Memory>): Promise<Memory> {
  const samples: Memory[] = [];
  for (let k = 0; k < 3; k++) {
    await sleep(200);
    samples.push(await read());
  }
  const mid = (f: (m: Memory) => number) => samples.map(f).sort((a, b) => a - b)[1] as number;
  return { rss: mid((m) => m.rss), heap: mid((m) => m.heap) };
}

/** Per item: RSS (the figure) and the V8 heap (which says what the objects themselves take) in KiB. */
function perItem(before: Memory, after: Memory, n: number): { rss: number; heap: number } {
  return { rss: (after.rss - before.rss) / n / 1024, heap: (after.heap - before.heap) / n / 1024 };
}

async function perSessionAndWait(results: Results, config: PollingConfig, pg: BenchPostgres): Promise<void> {
  const server = await startServer('tasklatch', 'sqlite', pg, 'memory');
  const load = startLoad();
  try {
    const sessionTargets = await server.seed(config.memorySessions);
    const blockTargets = await server.seed(config.memoryBlocked);
    // One warm-up session, so that first-use allocations (modules, JIT) are not counted.
    await load.ask({ op: 'sessions', url: server.url, targets: sessionTargets.slice(0, 1) });
    const base = await settled(() => server.memory());
    await load.ask({ op: 'sessions', url: server.url, targets: sessionTargets });
    const withSessions = await settled(() => server.memory());
    const session = perItem(base, withSessions, config.memorySessions);
    results.addFact(
      MEMORY_SCENARIO,
      'RSS per open 2025-11-25 session (HTTP, SDK transport)',
      session.rss,
      'KiB',
      `${config.memorySessions} sessions; V8 heap ${fmt(session.heap)} KiB`,
    );
    // Each blocked tasks/result opens its own session first: its cost is the total less a session's.
    await load.ask({ op: 'block', url: server.url, targets: blockTargets });
    await sleep(500);
    const withBlocked = await settled(() => server.memory());
    const both = perItem(withSessions, withBlocked, config.memoryBlocked);
    results.addFact(
      MEMORY_SCENARIO,
      'RSS per blocked tasks/result (beyond its session)',
      both.rss - session.rss,
      'KiB',
      `${config.memoryBlocked} held open; V8 heap ${fmt(both.heap - session.heap)} KiB`,
    );
    await load.ask({ op: 'release' });
  } finally {
    await load.stop();
    await server.stop();
  }
}

async function perTask(results: Results, config: PollingConfig, pg: BenchPostgres, store: PollStore): Promise<void> {
  const server = await startServer('tasklatch', store, pg, 'memtasks');
  try {
    await server.seed(100);
    const base = await settled(() => server.memory());
    await server.seed(config.memoryTasks);
    const task = perItem(base, await settled(() => server.memory()), config.memoryTasks);
    results.addFact(
      MEMORY_SCENARIO,
      `RSS per waiting task (${store} store)`,
      task.rss,
      'KiB',
      `${config.memoryTasks} admitted, not run; V8 heap ${fmt(task.heap)} KiB`,
    );
  } finally {
    await server.stop();
  }
}
