import pg from 'pg';
import { z } from 'zod';
import type { WireRequest } from '../../src/core/types.js';
import { createLogger } from '../../src/runtime/log.js';
import { createRuntime, type TaskRuntime } from '../../src/runtime/task-runtime.js';
import { PostgresStore } from '../../src/store/postgres/store.js';
import { defineTool } from '../../src/tools/tool.js';
import { addCpu, startCpuWindow, type BackendFilter, type CpuSample } from '../lib/backend-cpu.js';
import { TTL_MS } from '../lib/mcp.js';
import type { BenchPostgres } from '../lib/postgres.js';
import type { Results, ThroughputCell } from '../lib/results.js';
import { fmt, median, runRound, sleep, summarize, type Round } from '../lib/stats.js';
import { statementsSent } from '../lib/statement-count.js';
import { DBOS_VERSION, startDbos, type LoopState } from './steps-dbos.js';

/** Steps of one task in the end-to-end measurement. */
export const STEPS_PER_TASK = 10;
/** Tasks (workflows) running at once in both measurements. */
export const STEPS_CONCURRENCY = 16;
export const STEPS_GROUP = 'steps postgres';
export const STEPS_SCENARIO = 'steps (durable step checkpoints)';

export const S = {
  tasklatch: `tasklatch create → worker runs a tool of ${STEPS_PER_TASK} ctx.step.do → result (worker concurrency ${STEPS_CONCURRENCY})`,
  dbos: `DBOS Transact ${DBOS_VERSION} startWorkflow → workflow of ${STEPS_PER_TASK} DBOS.runStep → getResult`,
} as const;

/** Sizes of the steps scenario: a few seconds per side in quick mode. */
function sizes(quick: boolean): { warmupMs: number; roundMs: number; rounds: number } {
  return quick ? { warmupMs: 300, roundMs: 1_000, rounds: 2 } : { warmupMs: 500, roundMs: 3_000, rounds: 3 };
}

/** One side of the comparison: how it runs a task, a looping task, and where its backends are. */
interface Side {
  name: 'tasklatch' | 'dbos';
  runTask(worker: number): Promise<void>;
  runLoop(state: LoopState): Promise<void>;
  backends: BackendFilter;
}

const loops = new Map<string, LoopState>();

const stepsTool = defineTool({
  name: 'bench_steps',
  description: 'Records `steps` durable steps, each returning its index. Benchmark tool.',
  inputSchema: z.object({ steps: z.number().int().min(0), loop: z.string().optional() }),
  execution: { taskSupport: 'required' },
  handler: async (args, ctx) => {
    // With `loop`, it checkpoints until the bench raises the loop's stop flag (one process).
    const state = args.loop === undefined ? undefined : loops.get(args.loop);
    let sum = 0;
    for (let i = 0; state === undefined ? i < args.steps : !state.stop; i++) {
      sum += await ctx.step.do(`s${i}`, () => i);
      if (state !== undefined) state.checkpoints++;
    }
    return { content: [{ type: 'text', text: `ok ${sum}` }], structuredContent: { sum } };
  },
});

/**
 * Durable steps on PostgreSQL against DBOS Transact on the same server: (a) a task of ten steps
 * end to end at 16 tasks at once; (b) step checkpoints per second, 16 tasks checkpointing
 * continuously; (c) Node and PostgreSQL-backend CPU per step of each side, over the windows of
 * (b). Each side has its own storage (a schema; DBOS a database of its own) and a pool of 20.
 */
export async function steps(results: Results, quick: boolean, pgServer: BenchPostgres): Promise<void> {
  const size = sizes(quick);
  console.log(`\n[steps] tasklatch vs DBOS Transact ${DBOS_VERSION}, ${STEPS_CONCURRENCY} tasks at once`);
  const applicationName = `tlbench_${pgServer.run}_steps`;
  const storeUrl = new URL(pgServer.schemaUrl('steps'));
  storeUrl.searchParams.set('application_name', applicationName);
  const store = await PostgresStore.open(storeUrl.toString());
  const runtime: TaskRuntime = createRuntime({
    store,
    tools: [stepsTool],
    callersIdentified: true,
    execute: true,
    worker: { concurrency: STEPS_CONCURRENCY },
    logger: createLogger('silent'),
  });
  await runtime.start();
  const dbos = await startDbos(pgServer, 20);
  const monitor = new pg.Client({ connectionString: pgServer.url });
  await monitor.connect();
  const descriptor = runtime.tools.descriptor(stepsTool);
  let created = 0;
  const runTasklatch = async (auth: string, args: { steps: number; loop?: string }) => {
    const request: WireRequest = { method: 'tools/call', params: { name: stepsTool.name, arguments: args, task: { ttl: TTL_MS } } };
    const out = await runtime.service.create({ auth, tool: descriptor, request });
    if (out.decision !== 'ACCEPT_TASK') throw new Error(`expected ACCEPT_TASK, got ${out.decision}`);
    const done = await runtime.service.awaitResult({ auth, taskId: out.record.taskId });
    if (done.decision !== 'RETURN_RESULT' || done.record.status !== 'completed') {
      throw new Error(`expected a completed task, got ${done.decision} ${done.record?.status ?? ''} ${JSON.stringify(done.record?.result ?? null)}`);
    }
  };
  const sides: Side[] = [
    {
      name: 'tasklatch',
      // Finished tasks stay stored until their ttl: a fresh auth key every 500 tasks stays below
      // the default bound of stored tasks per caller.
      runTask: (w) => runTasklatch(`steps/${w}/${Math.floor(created++ / 500)}`, { steps: STEPS_PER_TASK }),
      runLoop: async (state) => {
        const key = `loop-${created++}`;
        loops.set(key, state);
        try {
          await runTasklatch(`steps/${key}`, { steps: 0, loop: key });
        } finally {
          loops.delete(key);
        }
      },
      backends: { applicationName },
    },
    { name: 'dbos', runTask: () => dbos.runTask(STEPS_PER_TASK), runLoop: (state) => dbos.runLoop(state), backends: { database: dbos.database } },
  ];
  try {
    await endToEnd(results, sides, size, monitor);
    await checkpoints(results, sides, size, monitor);
  } finally {
    await monitor.end();
    await runtime.close();
    await store.close();
    await dbos.close();
  }
}

const label = (side: Side) => (side.name === 'tasklatch' ? S.tasklatch : S.dbos);

/** (a) closed loop of whole tasks; sides take turns round by round, as `runGroup` does. */
async function endToEnd(results: Results, sides: readonly Side[], size: ReturnType<typeof sizes>, monitor: pg.Client): Promise<void> {
  for (const side of sides) await runRound(STEPS_CONCURRENCY, size.warmupMs, (w) => side.runTask(w));
  const rounds = new Map<Side, Round[]>(sides.map((s) => [s, []]));
  const cpu = new Map<Side, CpuSample[]>(sides.map((s) => [s, []]));
  for (let r = 0; r < size.rounds; r++) {
    for (let k = 0; k < sides.length; k++) {
      const side = sides[(k + r) % sides.length] as Side;
      const stop = await startCpuWindow(monitor, side.backends);
      rounds.get(side)?.push(await runRound(STEPS_CONCURRENCY, size.roundMs, (w) => side.runTask(w)));
      cpu.get(side)?.push(await stop());
    }
  }
  for (const side of sides) {
    const measured = rounds.get(side) ?? [];
    const s = summarize(measured.flatMap((m) => m.latencies));
    const cell: ThroughputCell = {
      group: STEPS_GROUP,
      variant: label(side),
      concurrency: STEPS_CONCURRENCY,
      roundRates: measured.map((m) => m.rate),
      median: median(measured.map((m) => m.rate)),
      p50: s.p50,
      p99: s.p99,
      ops: s.n,
    };
    results.throughput.push(cell);
    console.log(`  ${STEPS_GROUP} | ${side.name} @${STEPS_CONCURRENCY}: ${fmt(cell.median)} tasks/s, p50 ${fmt(cell.p50)} ms, p99 ${fmt(cell.p99)} ms`);
    const used = addCpu(cpu.get(side) ?? []);
    const tasks = measured.reduce((a, m) => a + m.ops, 0);
    results.addFact(STEPS_SCENARIO, `${side.name}: Node CPU per ${STEPS_PER_TASK}-step task`, used.nodeMs / tasks, 'ms', `${tasks} tasks`);
    results.addFact(STEPS_SCENARIO, `${side.name}: PostgreSQL backend CPU per ${STEPS_PER_TASK}-step task`, used.pgMs / tasks, 'ms', backendNote(used));
  }
  results.addRatio(`steps: ${STEPS_PER_TASK}-step task, tasklatch ÷ DBOS Transact ${DBOS_VERSION}`, STEPS_CONCURRENCY, [STEPS_GROUP, S.tasklatch], [STEPS_GROUP, S.dbos]);
}

/**
 * (b) and (c): 16 tasks each checkpoint steps back to back; after a warm-up, the steps that
 * returned (their checkpoint committed) in a window of `roundMs` are counted, with the CPU and
 * statements spent in that window. Then the loops are told to stop and awaited.
 */
async function checkpoints(results: Results, sides: readonly Side[], size: ReturnType<typeof sizes>, monitor: pg.Client): Promise<void> {
  const totals = new Map<Side, { steps: number; ms: number; statements: number; rates: number[]; cpu: CpuSample[] }>(
    sides.map((s) => [s, { steps: 0, ms: 0, statements: 0, rates: [], cpu: [] }]),
  );
  for (let r = 0; r < size.rounds; r++) {
    for (let k = 0; k < sides.length; k++) {
      const side = sides[(k + r) % sides.length] as Side;
      const states: LoopState[] = Array.from({ length: STEPS_CONCURRENCY }, () => ({ stop: false, checkpoints: 0 }));
      const running = Promise.all(states.map((state) => side.runLoop(state)));
      const count = () => states.reduce((a, s) => a + s.checkpoints, 0);
      try {
        await sleep(size.warmupMs);
        const stop = await startCpuWindow(monitor, side.backends);
        const [steps0, statements0, t0] = [count(), statementsSent(), performance.now()];
        await sleep(size.roundMs);
        const [steps1, statements1, t1] = [count(), statementsSent(), performance.now()];
        const cpu = await stop();
        const total = totals.get(side);
        if (total !== undefined) {
          total.steps += steps1 - steps0;
          total.ms += t1 - t0;
          total.statements += statements1 - statements0;
          total.rates.push(((steps1 - steps0) * 1000) / (t1 - t0));
          total.cpu.push(cpu);
        }
      } finally {
        for (const state of states) state.stop = true;
        await running;
      }
    }
  }
  const perStep = new Map<Side, { node: number; pg: number }>();
  for (const side of sides) {
    const t = totals.get(side);
    if (t === undefined || t.steps === 0) throw new Error(`${side.name}: no step checkpointed in the measured windows`);
    const used = addCpu(t.cpu);
    perStep.set(side, { node: used.nodeMs / t.steps, pg: used.pgMs / t.steps });
    results.addFact(STEPS_SCENARIO, `${side.name}: step checkpoints/s @${STEPS_CONCURRENCY}`, median(t.rates), 'steps/s', `rounds ${t.rates.map(fmt).join(', ')}; ${t.steps} steps`);
    results.addFact(STEPS_SCENARIO, `${side.name}: Node CPU per step`, (used.nodeMs * 1000) / t.steps, 'µs');
    results.addFact(STEPS_SCENARIO, `${side.name}: PostgreSQL backend CPU per step`, (used.pgMs * 1000) / t.steps, 'µs', backendNote(used));
    results.addFact(STEPS_SCENARIO, `${side.name}: statements per step`, t.statements / t.steps, 'statements', 'pg.Client.query calls in the window');
  }
  const [a, b] = [sides.find((s) => s.name === 'tasklatch'), sides.find((s) => s.name === 'dbos')];
  if (a === undefined || b === undefined) return;
  const rate = (s: Side) => median(totals.get(s)?.rates ?? []);
  const ratio = (name: string, value: number, unit: string) =>
    results.ratios.push({ name, concurrency: STEPS_CONCURRENCY, value, numerator: `tasklatch ${unit}`, denominator: `DBOS Transact ${DBOS_VERSION} ${unit}` });
  ratio(`steps: checkpoints/s, tasklatch ÷ DBOS Transact ${DBOS_VERSION}`, rate(a) / rate(b), 'step checkpoints/s');
  const [pa, pb] = [perStep.get(a), perStep.get(b)];
  if (pa === undefined || pb === undefined) return;
  ratio(`steps: Node CPU per step, tasklatch ÷ DBOS Transact ${DBOS_VERSION}`, pa.node / pb.node, 'Node CPU per step');
  ratio(`steps: PostgreSQL CPU per step, tasklatch ÷ DBOS Transact ${DBOS_VERSION}`, pa.pg / pb.pg, 'PostgreSQL backend CPU per step');
  ratio(`steps: Node + PostgreSQL CPU per step, tasklatch ÷ DBOS Transact ${DBOS_VERSION}`, (pa.node + pa.pg) / (pb.node + pb.pg), 'Node + PostgreSQL CPU per step');
}

function backendNote(cpu: CpuSample): string {
  return `${cpu.backends} backends${cpu.lost > 0 ? `, ${cpu.lost} gone before the end of a window (their CPU missing)` : ''}`;
}

/**
 * Targets of the steps scenario, with their thresholds in their names; appended after
 * `computeRatiosAndTargets` (which replaces the list).
 */
export function addStepsTargets(results: Results): void {
  const ratio = (name: string) => results.ratios.find((r) => r.name === name && r.concurrency === STEPS_CONCURRENCY);
  const against = `DBOS Transact ${DBOS_VERSION}`;
  const push = (target: string, name: string, pass: (v: number) => boolean) => {
    const r = ratio(name);
    if (r !== undefined) results.targets.push({ name: target, pass: pass(r.value), figure: `${fmt(r.value)}× (tasklatch ÷ DBOS)` });
  };
  push(`steps: ${STEPS_PER_TASK}-step task @${STEPS_CONCURRENCY} vs ${against} (target ≥ 1×)`, `steps: ${STEPS_PER_TASK}-step task, tasklatch ÷ ${against}`, (v) => v >= 1);
  push(`steps: step checkpoints/s @${STEPS_CONCURRENCY} vs ${against} (target ≥ 1×)`, `steps: checkpoints/s, tasklatch ÷ ${against}`, (v) => v >= 1);
  push(
    `steps: Node + PostgreSQL CPU per step @${STEPS_CONCURRENCY} vs ${against} (target ≤ 1×)`,
    `steps: Node + PostgreSQL CPU per step, tasklatch ÷ ${against}`,
    (v) => v <= 1,
  );
}
