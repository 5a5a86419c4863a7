import { readFileSync, writeFileSync } from 'node:fs';
import pg from 'pg';
import { awaitTaskResult } from '../src/service/result-wait.js';
import { createLogger } from '../src/runtime/log.js';
import { createRuntime } from '../src/runtime/task-runtime.js';
import { createTask } from '../src/runtime/requests/create-task.js';
import { PostgresStore } from '../src/store/postgres/store.js';
import { startPgbouncer } from '../test/support/pgbouncer.js';
import { startCpuWindow } from './lib/backend-cpu.js';
import { noopTool, taskCall } from './lib/mcp.js';
import { openBenchPostgres } from './lib/postgres.js';
import { onQuery, roundTrips } from './lib/round-trips.js';
import { runRound, summarize, fmt } from './lib/stats.js';
import { linkMigrations } from './lib/migrations-link.js';
import { WORKER_CONCURRENCY } from './scenarios/lifecycle.js';

/**
 * `node dist/bench/bench/pool-probe.js direct|pooled [ms] [requestors]`: the pooler scenario's
 * lifecycle on one side alone, with what each task costs: round trips and statements (by the
 * statement's first words), Node, PostgreSQL backend and PgBouncer CPU, latency percentiles.
 */
const byKind = new Map<string, number>();
const sample = new Map<string, string>();
onQuery((text) => {
  for (const part of text.split(/;\n|; /)) {
    const key = part.trim().replace(/\s+/g, ' ').slice(0, 90);
    byKind.set(key, (byKind.get(key) ?? 0) + 1);
    if (!sample.has(key.slice(0, 40))) sample.set(key.slice(0, 40), part);
  }
});

function ticksOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]);
}

async function main(): Promise<void> {
  linkMigrations();
  const mode = process.argv[2] ?? 'pooled';
  const ms = Number(process.argv[3] ?? 3000);
  const requestors = Number(process.argv[4] ?? 16);
  const bench = await openBenchPostgres();
  const applicationName = `tlprobe_${bench.run}`;
  const bouncer = mode === 'pooled' ? await startPgbouncer(bench.url, { resetAlways: false, poolSize: 20 }) : null;
  const direct = new URL(bench.schemaUrl('pp'));
  direct.searchParams.set('application_name', applicationName);
  let store: PostgresStore;
  if (bouncer === null) {
    store = await PostgresStore.open(direct.toString());
  } else {
    const url = new URL(direct.toString());
    const at = new URL(bouncer.url);
    url.hostname = at.hostname;
    url.port = at.port;
    url.searchParams.set('pgbouncer', 'true');
    store = await PostgresStore.open(url.toString(), { listenUrl: direct.toString() });
  }
  const runtime = createRuntime({
    store,
    tools: [noopTool],
    callersIdentified: true,
    worker: { concurrency: WORKER_CONCURRENCY },
    logger: createLogger('silent'),
  });
  await runtime.start();
  const descriptor = runtime.tools.descriptor(noopTool);
  let n = 0;
  const done = new Map<number, number>();
  let phases: [number, number][] = [];
  const op = async (w: number) => {
    const k = done.get(w) ?? 0;
    done.set(w, k + 1);
    const auth = `pp/${w}/${Math.floor(k / 500)}`;
    const t0 = performance.now();
    const created = await createTask(runtime.guard, { auth, tool: descriptor, request: taskCall(++n) });
    if (created.decision !== 'ACCEPT_TASK') throw new Error(created.decision);
    const t1 = performance.now();
    const out = await awaitTaskResult(runtime.guard, { auth, taskId: created.record.taskId });
    if (out.decision !== 'RETURN_RESULT') throw new Error(out.decision);
    phases.push([t1 - t0, performance.now() - t1]);
  };
  await runRound(requestors, 1000, op);
  const monitor = new pg.Client({ connectionString: bench.url });
  await monitor.connect();
  const end = await startCpuWindow(monitor, { applicationName });
  const bouncerPid = bouncer?.pid;
  const bouncerBefore = bouncerPid === undefined ? 0 : ticksOf(bouncerPid);
  byKind.clear();
  phases = [];
  const tripsBefore = roundTrips();
  const round = await runRound(requestors, ms, op);
  const tripsIn = roundTrips() - tripsBefore;
  const kinds = new Map(byKind);
  const cpu = await end();
  const bouncerMs = bouncerPid === undefined ? 0 : ((ticksOf(bouncerPid) - bouncerBefore) * 10) / round.ops;
  const s = summarize(round.latencies);
  console.log(`${mode}: ${round.ops} tasks, ${fmt(round.rate)} /s, p50 ${fmt(s.p50)} p99 ${fmt(s.p99)} ms`);
  console.log(
    `round trips/task ${fmt(tripsIn / round.ops)}; CPU/task ms: Node ${fmt(cpu.nodeMs / round.ops)}, backends ${fmt(cpu.pgMs / round.ops)} (${cpu.backends}, ${cpu.lost} lost), pgbouncer ${fmt(bouncerMs)}`,
  );
  for (const [i, name] of ['create', 'result'].entries()) {
    const p = summarize(phases.map((x) => x[i] as number));
    console.log(`${name}: p50 ${fmt(p.p50)} p99 ${fmt(p.p99)}`);
  }
  for (const [k, v] of [...kinds].sort((a, b) => b[1] - a[1]).slice(0, 30)) console.log(`${fmt(v / round.ops).padStart(6)}  ${k}`);
  if (process.env.DUMP) writeFileSync(process.env.DUMP, JSON.stringify([...sample.values()]));
  await monitor.end();
  await runtime.close();
  await store.close();
  await bouncer?.stop();
  await bench.close();
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
