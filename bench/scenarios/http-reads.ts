import type { PollingConfig } from '../lib/polling-config.js';
import type { BenchPostgres } from '../lib/postgres.js';
import { POLL, pollGroup } from '../lib/polling-targets.js';
import type { Results } from '../lib/results.js';
import { fmt, median, summarize } from '../lib/stats.js';
import { startLoad, startServer, type CpuShare, type PollStore } from './http/servers.js';
import { pollBody, pollHeaders } from './http/poll-wire.js';
import type { Generation, LoadReport, PollTarget } from './http/protocol.js';

/**
 * `tasks/get` over HTTP, closed loop at each poller count, on both generations and against a
 * bare `node:http` server answering a body of the same size: the transport ceiling. Server and
 * load generator are separate processes; the three servers take turns round by round.
 */
export async function httpReads(results: Results, config: PollingConfig, pg: BenchPostgres): Promise<void> {
  console.log(`\n[6] tasks/get over HTTP: 2026-07-28, 2025-11-25 and bare node:http, closed loop at ${config.pollers.join(', ')} pollers`);
  for (const store of ['sqlite', 'postgres'] as const) await onStore(results, config, pg, store);
}

/** The body a real 2026-07-28 tasks/get answers for `target`: the bare server answers the same bytes. */
async function realReply(url: string, target: PollTarget): Promise<string> {
  const res = await fetch(url, { method: 'POST', headers: pollHeaders('2026', target, null), body: pollBody('2026', target, 1) });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`tasks/get answered ${res.status}: ${text}`);
  return text;
}

async function onStore(results: Results, config: PollingConfig, pg: BenchPostgres, store: PollStore): Promise<void> {
  const tasklatch = await startServer('tasklatch', store, pg, 'httpreads');
  const targets = await tasklatch.seed(Math.max(...config.pollers) * 4);
  const body = await realReply(tasklatch.url, targets[0] as PollTarget);
  const bare = await startServer('bare', store, pg, 'bare', body);
  const load = startLoad();
  const group = pollGroup(store);
  try {
    const variants: Array<{ name: string; generation: Generation; url: string }> = [
      { name: POLL.modern, generation: '2026', url: tasklatch.url },
      { name: POLL.legacy, generation: '2025', url: tasklatch.url },
      { name: POLL.bare, generation: 'bare', url: bare.url },
    ];
    // Each server answers a few seconds of polls first, so that no variant is measured while its code still compiles.
    for (const v of variants) {
      const warm = await load.ask<LoadReport>({
        op: 'closed',
        url: v.url,
        generation: v.generation,
        targets,
        concurrency: config.pollers[0] ?? 16,
        warmupMs: config.serverWarmupMs,
        durationMs: 100,
      });
      if (warm.errors > 0) throw new Error(`${v.name}: ${warm.errors} polls did not answer the task while warming up`);
    }
    for (const concurrency of config.pollers) {
      const rounds = new Map<string, LoadReport[]>(variants.map((v) => [v.name, []]));
      const cpu = new Map<string, Array<CpuShare & { ops: number }>>(variants.map((v) => [v.name, []]));
      for (let r = 0; r < config.rounds; r++) {
        for (let k = 0; k < variants.length; k++) {
          const v = variants[(k + r) % variants.length] as (typeof variants)[number];
          const server = v.generation === 'bare' ? bare : tasklatch;
          await server.cpu();
          const report = await load.ask<LoadReport>({
            op: 'closed',
            url: v.url,
            generation: v.generation,
            targets,
            concurrency,
            warmupMs: config.warmupMs,
            durationMs: config.roundMs,
          });
          if (report.errors > 0) throw new Error(`${v.name} @${concurrency}: ${report.errors} polls did not answer the task`);
          rounds.get(v.name)?.push(report);
          const used = await server.cpu();
          cpu.get(v.name)?.push({ ...used, ops: report.allOps });
        }
      }
      for (const v of variants) {
        const measured = rounds.get(v.name) ?? [];
        const s = summarize(measured.flatMap((m) => m.latencies));
        const rate = median(measured.map((m) => m.rate));
        results.throughput.push({
          group,
          variant: v.name,
          concurrency,
          roundRates: measured.map((m) => m.rate),
          median: rate,
          p50: s.p50,
          p99: s.p99,
          ops: s.n,
        });
        console.log(`  ${group} | ${v.name} @${concurrency}: ${fmt(rate)} req/s, p50 ${fmt(s.p50)} ms, p99 ${fmt(s.p99)} ms`);
        // What a request costs the server, whatever else the machine runs: CPU over requests answered.
        const used = cpu.get(v.name) ?? [];
        const sum = (f: (u: CpuShare & { ops: number }) => number) => used.reduce((a, u) => a + f(u), 0);
        results.addFact(
          group,
          `server CPU per request: ${v.name} @${concurrency}`,
          (1000 * sum((u) => u.cpuMs)) /
            Math.max(
              1,
              sum((u) => u.ops),
            ),
          'µs',
          `server busy ${fmt((100 * sum((u) => u.cpuMs)) / sum((u) => u.wallMs))} %, waiting for a CPU ${fmt((100 * sum((u) => u.waitMs)) / sum((u) => u.wallMs))} % of its window`,
        );
      }
    }
    results.addFact(group, 'tasks/get reply body', Buffer.byteLength(body), 'bytes', 'the bare server answers these bytes');
  } finally {
    await load.stop();
    await bare.stop();
    await tasklatch.stop();
  }
}
