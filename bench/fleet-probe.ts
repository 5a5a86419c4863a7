import { openBenchPostgres } from './lib/postgres.js';
import { summarize } from './lib/stats.js';
import type { LoadReport, PollTarget } from './scenarios/http/protocol.js';
import { startLoad, startServer, type PollStore } from './scenarios/http/servers.js';
import { linkMigrations } from './lib/migrations-link.js';

/**
 * `node dist/bench/bench/fleet-probe.js [sqlite|postgres|memory] [bare] [clients]`: the polling
 * fleet of the capacity scenario (each client polls its own task once a second over its own
 * connection) against one server process for three 3 s windows, with the server's CPU per poll
 * (and the kernel's part of it) and the fleet's. The bare `node:http` server answers the same
 * polls with a fixed reply: the transport's floor for polls that arrive one by one.
 * TASKLATCH_BENCH_SERVER_FLAGS="--cpu-prof --cpu-prof-dir=DIR" profiles the server.
 */
const WINDOW_MS = 3000;

async function main(): Promise<void> {
  linkMigrations();
  const store: PollStore = process.argv[2] === 'postgres' ? 'postgres' : process.argv[2] === 'memory' ? 'memory' : 'sqlite';
  const bare = process.argv[3] === 'bare';
  const clients = Number(process.argv[bare ? 4 : 3] ?? 6000);
  const pg = await openBenchPostgres();
  const seeder = await startServer('tasklatch', store, pg, 'fleet_probe');
  const targets: PollTarget[] = await seeder.seed(clients);
  if (bare) await seeder.stop();
  const server = bare ? await startServer('bare', store, pg, 'fleet_probe_bare', '{"jsonrpc":"2.0","id":1,"result":{"status":"working"}}') : seeder;
  const load = startLoad();
  try {
    await server.cpu();
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
    const p99 = (report.windows ?? []).map((w) => summarize(w).p99.toFixed(1)).join(' / ');
    console.log(
      `${bare ? 'bare' : store}, ${clients} clients: ${report.rate.toFixed(0)} polls/s, window p99 ${p99} ms, errors ${report.errors}; ` +
        `server ${((1000 * cpu.cpuMs) / report.allOps).toFixed(1)} µs CPU per poll (${((1000 * (cpu.systemMs ?? 0)) / report.allOps).toFixed(1)} µs in the kernel), ` +
        `busy ${((100 * cpu.cpuMs) / cpu.wallMs).toFixed(0)} %, ${((cpu.trips ?? 0) / report.allOps).toFixed(2)} PostgreSQL round trips per poll; ` +
        `fleet ${((1000 * report.cpuMs) / report.ops).toFixed(1)} µs CPU per poll`,
    );
  } finally {
    await load.stop();
    await server.stop();
    await pg.close();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
