import pg from 'pg';
import { startCpuWindow } from './lib/backend-cpu.js';
import { openBenchPostgres } from './lib/postgres.js';
import { summarize } from './lib/stats.js';
import type { LoadReport, PollTarget } from './scenarios/http/protocol.js';
import { startLoad, startServer, type PollStore } from './scenarios/http/servers.js';
import { linkMigrations } from './lib/migrations-link.js';

/**
 * `node dist/bench/bench/fleet-probe.js [sqlite|postgres|memory] [bare] [clients]`: the polling
 * fleet of the capacity scenario (each client polls its own task once a second over its own
 * connection) against one server process for three 3 s windows, with the server's CPU per poll
 * (and the kernel's part of it), the fleet's, and that of the database's backends (every backend
 * of the bench database: run it alone). The bare `node:http` server answers the same
 * polls with a fixed reply: the transport's floor for polls that arrive one by one.
 * TASKLATCH_BENCH_SERVER_FLAGS="--cpu-prof --cpu-prof-dir=DIR" profiles the server.
 */
const WINDOW_MS = 3000;

async function main(): Promise<void> {
  linkMigrations();
  const store: PollStore = process.argv[2] === 'postgres' ? 'postgres' : process.argv[2] === 'memory' ? 'memory' : 'sqlite';
  const bare = process.argv[3] === 'bare';
  const clients = Number(process.argv[bare ? 4 : 3] ?? 6000);
  const benchPg = await openBenchPostgres();
  const seeder = await startServer('tasklatch', store, benchPg, 'fleet_probe');
  const targets: PollTarget[] = await seeder.seed(clients);
  if (bare) await seeder.stop();
  const server = bare ? await startServer('bare', store, benchPg, 'fleet_probe_bare', '{"jsonrpc":"2.0","id":1,"result":{"status":"working"}}') : seeder;
  const load = startLoad();
  const monitor = new pg.Client({ connectionString: benchPg.url });
  await monitor.connect();
  try {
    await server.cpu();
    const backends = await startCpuWindow(monitor, { database: new URL(benchPg.url).pathname.slice(1) });
    const report = await load.ask<LoadReport>({
      op: 'fleet',
      url: server.url,
      generation: bare ? 'bare' : '2026',
      targets,
      intervalMs: 1000,
      warmupMs: 2000,
      windows: 3,
      durationMs: WINDOW_MS,
    });
    const cpu = await server.cpu();
    const database = await backends();
    const p99 = (report.windows ?? []).map((w) => summarize(w).p99.toFixed(1)).join(' / ');
    console.log(
      `${bare ? 'bare' : store}, ${clients} clients: ${report.rate.toFixed(0)} polls/s, window p99 ${p99} ms, errors ${report.errors}; ` +
        `server ${((1000 * cpu.cpuMs) / report.allOps).toFixed(1)} µs CPU per poll (${((1000 * (cpu.systemMs ?? 0)) / report.allOps).toFixed(1)} µs in the kernel), ` +
        `busy ${((100 * cpu.cpuMs) / cpu.wallMs).toFixed(0)} %, ${((cpu.trips ?? 0) / report.allOps).toFixed(2)} PostgreSQL round trips per poll, ` +
        `PostgreSQL ${((1000 * database.pgMs) / report.allOps).toFixed(1)} µs CPU per poll; ` +
        `fleet ${((1000 * report.cpuMs) / report.ops).toFixed(1)} µs CPU per poll`,
    );
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
