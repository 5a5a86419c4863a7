import { awaitTaskResult } from '../src/service/result-wait.js';
import pg from 'pg';
import type { WireRequest } from '../src/core/types.js';
import { createLogger } from '../src/runtime/log.js';
import { createRuntime } from '../src/runtime/task-runtime.js';
import { PostgresStore } from '../src/store/postgres/store.js';
import { startCpuWindow } from './lib/backend-cpu.js';
import { noopTool, toolArgs, TTL_MS } from './lib/mcp.js';
import { openBenchPostgres } from './lib/postgres.js';
import { onQuery, roundTrips } from './lib/round-trips.js';
import { runRound, summarize, fmt } from './lib/stats.js';
import { linkMigrations } from './lib/migrations-link.js';
import { createTask } from '../src/runtime/requests/create-task.js';

/**
 * `node dist/bench/bench/life-probe.js [ms] [requestors]`: the lifecycle scenario's worker variant
 * alone, with what each task costs: round trips and statements (pg Client.query calls, by the
 * statement's first words), Node and PostgreSQL backend CPU, how busy the main thread was (event-loop
 * utilization), latency percentiles.
 */
const byKind = new Map<string, number>();
onQuery((text) => {
  for (const part of text.split(/;\n|; /)) {
    const key = part.trim().replace(/\s+/g, ' ').slice(0, 70);
    byKind.set(key, (byKind.get(key) ?? 0) + 1);
  }
});

async function main(): Promise<void> {
  linkMigrations();
  const ms = Number(process.argv[2] ?? 3000);
  const requestors = Number(process.argv[3] ?? 16);
  const bench = await openBenchPostgres();
  const applicationName = `tlprobe_${bench.run}`;
  const url = new URL(bench.schemaUrl('probe'));
  url.searchParams.set('application_name', applicationName);
  const store = await PostgresStore.open(url.toString());
  const calls = new Map<string, number>();
  for (const name of ['get', 'transition', 'claim', 'admit', 'recordDecision', 'heartbeat', 'release', 'lookupInputs', 'steps']) {
    const target = store as unknown as Record<string, (...a: unknown[]) => unknown>;
    const fn = target[name];
    if (typeof fn !== 'function') continue;
    target[name] = function (this: unknown, ...a: unknown[]) {
      calls.set(name, (calls.get(name) ?? 0) + 1);
      return fn.apply(this, a);
    };
  }
  const started = new Map<number, number>();
  const timedTool = {
    ...noopTool,
    handler: (args: { month: string; rows: number }, ctx: never) => {
      started.set(args.rows, performance.now());
      return noopTool.handler(args, ctx);
    },
  } as typeof noopTool;
  const runtime = createRuntime({
    store,
    tools: [timedTool],
    callersIdentified: true,
    execute: true,
    worker: { concurrency: 8 },
    logger: createLogger('silent'),
  });
  await runtime.start();
  const claims: string[] = [];
  const port = runtime.guard.worker as unknown as { claim: (i: { limit: number }) => Promise<unknown[]> };
  const claim = port.claim.bind(port);
  port.claim = async (i) => {
    const t = performance.now();
    const out = await claim(i);
    claims.push(`${t.toFixed(0)} limit ${i.limit} got ${out.length} in ${(performance.now() - t).toFixed(0)}`);
    return out;
  };
  const descriptor = runtime.tools.descriptor(noopTool);
  let n = 0;
  let phases: [number, number, number, number][] = [];
  const done = new Map<number, number>();
  const op = async (w: number) => {
    const k = done.get(w) ?? 0;
    done.set(w, k + 1);
    const auth = `probe/${w}/${Math.floor(k / 500)}`;
    const request: WireRequest = { method: 'tools/call', params: { name: noopTool.name, arguments: toolArgs(++n), task: { ttl: TTL_MS } } };
    const me = n;
    const t0 = performance.now();
    const created = await createTask(runtime.guard, { auth, tool: descriptor, request });
    if (created.decision !== 'ACCEPT_TASK') throw new Error(created.decision);
    const t1 = performance.now();
    const out = await awaitTaskResult(runtime.guard, { auth, taskId: created.record.taskId });
    if (out.decision !== 'RETURN_RESULT') throw new Error(out.decision);
    const t3 = performance.now();
    const t2 = started.get(me) ?? NaN;
    started.delete(me);
    phases.push([t1 - t0, t2 - t1, t3 - t2, (created as { claimed?: unknown }).claimed ? 2 : 1]);
  };
  await runRound(requestors, 500, op);
  const monitor = new pg.Client({ connectionString: bench.url });
  await monitor.connect();
  const end = await startCpuWindow(monitor, { applicationName });
  byKind.clear();
  calls.clear();
  const tripsBefore = roundTrips();
  phases = [];
  const elu = performance.eventLoopUtilization();
  const round = await runRound(requestors, ms, op);
  const busy = performance.eventLoopUtilization(elu).utilization;
  const tripsIn = roundTrips() - tripsBefore;
  const callsIn = new Map(calls);
  const kinds = new Map(byKind);
  const cpu = await end();
  const s = summarize(round.latencies);
  console.log(`${round.ops} tasks, ${fmt(round.rate)} /s, p50 ${fmt(s.p50)} p99 ${fmt(s.p99)} max ${fmt(s.max)} ms`);
  console.log(
    `round trips/task ${fmt(tripsIn / round.ops)}; Node CPU/task ${fmt(cpu.nodeMs / round.ops)} ms; backend CPU/task ${fmt(cpu.pgMs / round.ops)} ms (${cpu.backends} backends, ${cpu.lost} lost); main thread busy ${fmt(busy * 100)} %`,
  );
  for (const [i, name] of ['create', 'create→handler', 'handler→result'].entries()) {
    const p = summarize(phases.map((x) => x[i] as number));
    console.log(`${name}: p50 ${fmt(p.p50)} p99 ${fmt(p.p99)} max ${fmt(p.max)}`);
  }
  console.log(`store calls/task: ${[...callsIn].map(([k, v]) => `${k} ${fmt(v / round.ops)}`).join(', ')}`);
  console.log(`claimed at admission: ${phases.filter((x) => x[3] === 2).length} of ${phases.length}`);
  if (process.env.CLAIMS) console.log(claims.join('\n'));
  console.log(`claims: ${claims.length}`);
  const slow = round.latencies.filter((l) => l > 100).length;
  console.log(`ops over 100 ms: ${slow}`);
  for (const [k, v] of [...kinds].sort((a, b) => b[1] - a[1]).slice(0, 25)) console.log(`${fmt(v / round.ops).padStart(6)}  ${k}`);
  await monitor.end();
  await runtime.close();
  await store.close();
  await bench.close();
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
