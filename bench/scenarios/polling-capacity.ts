import { loadavg } from 'node:os';
import type { BenchPostgres } from '../lib/postgres.js';
import type { PollingConfig } from '../lib/polling-config.js';
import { CAPACITY_FACT, capacityScenario } from '../lib/polling-targets.js';
import type { Results } from '../lib/results.js';
import { fmt, summarize } from '../lib/stats.js';
import { startLoad, startServer, type PollStore } from './http/servers.js';
import type { LoadReport, PollTarget } from './http/protocol.js';

/**
 * Polling capacity: a fleet of clients, each polling its own working task once per
 * pollIntervalMs over the 2026-07-28 wire, grows step by step until tasks/get p99 passes the
 * bound. The figure is the largest fleet held within it. Server and fleet are separate
 * processes; the server's and the fleet's CPU shares say which of them ran out.
 */
export async function pollingCapacity(results: Results, config: PollingConfig, pg: BenchPostgres): Promise<void> {
  console.log(`\n[7] polling capacity: clients polling tasks/get every ${config.pollIntervalMs} ms, until p99 > ${config.fleetP99Ms} ms`);
  // TASKLATCH_BENCH_POLL_STORES=sqlite (or postgres) measures one store only.
  const only = process.env.TASKLATCH_BENCH_POLL_STORES?.split(',').map((s) => s.trim());
  for (const store of ['sqlite', 'postgres'] as const) if (only === undefined || only.includes(store)) await onStore(results, config, pg, store);
}

async function onStore(results: Results, config: PollingConfig, pg: BenchPostgres, store: PollStore): Promise<void> {
  const scenario = capacityScenario(store);
  const server = await startServer('tasklatch', store, pg, 'capacity');
  const load = startLoad();
  const targets: PollTarget[] = [];
  let held = 0;
  // The same sizes judged by the p99 of the whole run, as the fleet measured before it returned its windows.
  let heldWholeRun = 0;
  let wholeRunFailed = false;
  let stoppedBy = `the largest fleet tried (${config.fleetSizes.at(-1) ?? 0}) stayed within the bound`;
  try {
    for (const size of config.fleetSizes) {
      targets.push(...(await server.seed(size - targets.length)));
      await server.cpu();
      const report = await load.ask<LoadReport>({
        op: 'fleet',
        url: server.url,
        generation: '2026',
        targets: targets.slice(0, size),
        intervalMs: config.pollIntervalMs,
        warmupMs: 2 * config.pollIntervalMs,
        windows: config.fleetWindows,
        durationMs: config.fleetWindowMs,
      });
      const serverCpu = await server.cpu();
      // The median window's p99: one burst of the machine's other load does not decide a size alone.
      const windowP99 = (report.windows ?? [report.latencies]).map((w) => summarize(w).p99).sort((a, b) => a - b);
      const p99 = windowP99[Math.floor(windowP99.length / 2)] ?? NaN;
      const expected = (size * config.fleetWindows * config.fleetWindowMs) / config.pollIntervalMs;
      const note =
        `${fmt(report.rate)} polls/s of ${fmt((size * 1000) / config.pollIntervalMs)} due; errors ${report.errors}, late ${report.late ?? 0}; ` +
        `p99 of each ${fmt(config.fleetWindowMs / 1000)} s window ${windowP99.map((x) => fmt(x)).join(' / ')} ms (whole run ${fmt(summarize(report.latencies).p99)} ms); ` +
        `CPU: server ${pct(serverCpu.cpuMs, serverCpu.wallMs)} busy, ${pct(serverCpu.waitMs, serverCpu.wallMs)} waiting for a CPU; ` +
        `fleet ${pct(report.cpuMs, report.wallMs)} busy, ${pct(report.waitMs, report.wallMs)} waiting; ` +
        `server ${fmt((1000 * serverCpu.cpuMs) / Math.max(1, report.allOps))} µs CPU per poll; load average ${loadavg()[0]?.toFixed(1) ?? '?'}`;
      results.addLatency(scenario, `tasks/get, ${size} clients polling`, report.latencies, note);
      console.log(`    ${note}`);
      const answered = report.errors === 0 && report.ops >= 0.9 * expected;
      const within = p99 <= config.fleetP99Ms && answered;
      const wholeP99 = summarize(report.latencies).p99;
      if (!wholeRunFailed && wholeP99 <= config.fleetP99Ms && answered) heldWholeRun = size;
      else wholeRunFailed = true;
      if (!within) {
        stoppedBy = `${size} clients: median window p99 ${fmt(p99)} ms, ${report.ops} of ${Math.round(expected)} polls answered, ${report.errors} errors`;
        break;
      }
      held = size;
    }
    results.addFact(scenario, CAPACITY_FACT, held, 'tasks', `median window p99 ≤ ${config.fleetP99Ms} ms; stopped at ${stoppedBy}`);
    results.addFact(
      scenario,
      `${CAPACITY_FACT}, judged by the p99 of the whole run (the rule before the fleet returned its windows)`,
      heldWholeRun,
      'tasks',
      'same sizes, same run',
    );
  } finally {
    await load.stop();
    await server.stop();
  }
}

/** A share of one core's wall-clock window, as text. */
function pct(ms: number, wallMs: number): string {
  return `${fmt((100 * ms) / wallMs)} %`;
}
