import pg from 'pg';
import { startCpuWindow } from './lib/backend-cpu.js';
import { openBenchPostgres } from './lib/postgres.js';
import type { LoadReport, PollTarget } from './scenarios/http/protocol.js';
import { startLoad, startServer, type PollStore } from './scenarios/http/servers.js';
import { linkMigrations } from './lib/migrations-link.js';

/**
 * `node dist/bench/bench/get-probe.js [sqlite|postgres|memory] [bare|2025]`: `tasks/get` over
 * HTTP @16 (2026-07-28, or a 2025-11-25 session with `2025`), closed loop, against one server process (tasklatch on the store, or the bare
 * `node:http` server answering a reply of the same size), with the server's CPU per request
 * from /proc, the kernel's part of it, its PostgreSQL round trips per request and the CPU of the
 * database's backends per request (every backend of the bench database: run it alone). `memory`
 * serves from the memory store: the HTTP front and the service without a database.
 * TASKLATCH_BENCH_SERVER_FLAGS="--cpu-prof --cpu-prof-dir=DIR" profiles the server.
 */
const ROUNDS = 4;
const BARE_BODY = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  result: {
    taskId: '00000000-0000-4000-8000-000000000000',
    status: 'working',
    statusMessage: 'working',
    createdAt: '2026-12-02T14:00:00.000Z',
    lastUpdatedAt: '2026-12-02T14:00:00.000Z',
    ttl: 3_600_000,
    pollInterval: 1000,
  },
});

async function main(): Promise<void> {
  linkMigrations();
  const store: PollStore = process.argv[2] === 'postgres' ? 'postgres' : process.argv[2] === 'memory' ? 'memory' : 'sqlite';
  const bare = process.argv[3] === 'bare';
  const generation = bare ? 'bare' : process.argv[3] === '2025' ? '2025' : '2026';
  const benchPg = await openBenchPostgres();
  // The bare server reads the same targets' polls: tasklatch seeds them, then stops.
  let targets: PollTarget[] = [];
  const seeder = await startServer('tasklatch', store, benchPg, 'get_probe');
  if (bare) {
    targets = await seeder.seed(64);
    await seeder.stop();
  }
  const server = bare ? await startServer('bare', store, benchPg, 'get_probe_bare', BARE_BODY) : seeder;
  if (!bare) targets = await server.seed(64);
  const load = startLoad();
  const monitor = new pg.Client({ connectionString: benchPg.url });
  await monitor.connect();
  try {
    for (let round = 0; round < ROUNDS; round++) {
      await server.cpu();
      const backends = await startCpuWindow(monitor, { database: new URL(benchPg.url).pathname.slice(1) });
      const report = await load.ask<LoadReport>({
        op: 'closed',
        url: server.url,
        generation,
        targets,
        concurrency: 16,
        warmupMs: 300,
        durationMs: 3000,
      });
      const cpu = await server.cpu();
      const database = await backends();
      console.log(
        `${bare ? 'bare' : store} round ${round}: ${report.rate.toFixed(0)} req/s, server ${((1000 * cpu.cpuMs) / report.allOps).toFixed(1)} µs CPU per request ` +
          `(${((1000 * (cpu.systemMs ?? 0)) / report.allOps).toFixed(1)} µs of it in the kernel), ` +
          `busy ${((100 * cpu.cpuMs) / cpu.wallMs).toFixed(0)} %, ${((cpu.trips ?? 0) / report.allOps).toFixed(2)} PostgreSQL round trips per request, ` +
          `PostgreSQL ${((1000 * database.pgMs) / report.allOps).toFixed(1)} µs CPU per request, errors ${report.errors}`,
      );
    }
  } finally {
    await load.stop();
    await server.stop();
    await monitor.end();
    await benchPg.close();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
