import { addCpu, type CpuSample } from '../lib/backend-cpu.js';
import type { BenchPostgres } from '../lib/postgres.js';
import type { Results, ThroughputCell } from '../lib/results.js';
import { fmt, median, summarize } from '../lib/stats.js';
import { Child } from './http/child.js';
import { DBOS_VERSION, dropDatabase } from './steps/dbos-side.js';
import type { LoopReport, SideName, SideRequest, SideStart, TasksReport } from './steps/protocol.js';

/** Steps of one task in the end-to-end measurement. */
export const STEPS_PER_TASK = 10;
/** Tasks (workflows) running at once in both measurements. */
export const STEPS_CONCURRENCY = 16;
/** Connections of each side's pool (as the other PostgreSQL comparisons). */
const POOL_SIZE = 20;
export const STEPS_GROUP = 'steps postgres';
export const STEPS_SCENARIO = 'steps (durable step checkpoints)';
const DBOS = `DBOS Transact ${DBOS_VERSION}`;

export const S = {
  tasklatch: `tasklatch create → worker runs a tool of ${STEPS_PER_TASK} ctx.step.do → result (worker concurrency ${STEPS_CONCURRENCY})`,
  dbos: `${DBOS} startWorkflow → workflow of ${STEPS_PER_TASK} DBOS.runStep → getResult`,
} as const;

const RATIO = {
  task: `steps: ${STEPS_PER_TASK}-step task, tasklatch ÷ ${DBOS}`,
  checkpoints: `steps: checkpoints/s, tasklatch ÷ ${DBOS}`,
  node: `steps: Node CPU per step, tasklatch ÷ ${DBOS}`,
  postgres: `steps: PostgreSQL backend CPU per step, tasklatch ÷ ${DBOS}`,
  cpu: `steps: Node + PostgreSQL CPU per step, tasklatch ÷ ${DBOS}`,
} as const;

/** Sizes of the steps scenario: a few seconds per side in quick mode. */
function sizes(quick: boolean): { warmupMs: number; roundMs: number; rounds: number } {
  return quick ? { warmupMs: 300, roundMs: 1_000, rounds: 2 } : { warmupMs: 500, roundMs: 3_000, rounds: 3 };
}
type Sizes = ReturnType<typeof sizes>;

interface Side {
  name: SideName;
  child: Child<SideRequest>;
}

/**
 * Durable steps on PostgreSQL against DBOS Transact on the same server: (a) a task of ten steps
 * end to end, 16 tasks at once; (b) step checkpoints per second, 16 tasks checkpointing back to
 * back; (c) Node and PostgreSQL-backend CPU per step of each side, over the windows of (b). Each
 * side runs in a process of its own, with its own storage (tasklatch a schema, DBOS a database
 * of its own, dropped at the end) and a pool of 20; the sides take turns round by round.
 */
export async function steps(results: Results, quick: boolean, pg: BenchPostgres): Promise<void> {
  const size = sizes(quick);
  console.log(`\n[steps] tasklatch vs ${DBOS}, ${STEPS_CONCURRENCY} tasks at once`);
  const applicationName = `tlbench_${pg.run}_steps`;
  const storeUrl = new URL(pg.schemaUrl('steps'));
  storeUrl.searchParams.set('application_name', applicationName);
  const database = `tlbench_${pg.run}_steps_dbos`;
  const dbosUrl = new URL(pg.url);
  dbosUrl.pathname = `/${database}`;
  const common = { serverUrl: pg.url, steps: STEPS_PER_TASK, concurrency: STEPS_CONCURRENCY, poolSize: POOL_SIZE };
  const starts: SideStart[] = [
    { side: 'tasklatch', url: storeUrl.toString(), backends: { applicationName }, ...common },
    { side: 'dbos', url: dbosUrl.toString(), backends: { database }, ...common },
  ];
  const sides: Side[] = [];
  try {
    for (const start of starts) {
      const child = new Child<SideRequest>('../steps/side-process.js');
      sides.push({ name: start.side, child });
      await child.ask({ op: 'start', start });
    }
    await endToEnd(results, sides, size);
    await checkpoints(results, sides, size);
  } finally {
    for (const side of sides) await side.child.stop();
    await dropDatabase(pg.url, database);
  }
}

const label = (side: Side) => (side.name === 'tasklatch' ? S.tasklatch : S.dbos);

/** The sides in turn, `rounds` times, the order rotating each round (as `runGroup` does). */
async function inTurn<T>(sides: readonly Side[], rounds: number, measure: (side: Side) => Promise<T>): Promise<Map<Side, T[]>> {
  const out = new Map<Side, T[]>(sides.map((s) => [s, []]));
  for (let r = 0; r < rounds; r++) {
    for (let k = 0; k < sides.length; k++) {
      const side = sides[(k + r) % sides.length] as Side;
      out.get(side)?.push(await measure(side));
    }
  }
  return out;
}

/** (a) A closed loop of whole tasks, 16 requestors. */
async function endToEnd(results: Results, sides: readonly Side[], size: Sizes): Promise<void> {
  for (const side of sides) await side.child.ask<TasksReport>({ op: 'tasks', durationMs: size.warmupMs });
  const rounds = await inTurn(sides, size.rounds, (side) => side.child.ask<TasksReport>({ op: 'tasks', durationMs: size.roundMs }));
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
    const tasks = measured.reduce((a, m) => a + m.ops, 0);
    const used = addCpu(measured.map((m) => m.cpu));
    const trips = measured.reduce((a, m) => a + m.roundTrips, 0);
    const per = `per ${STEPS_PER_TASK}-step task`;
    results.addFact(STEPS_SCENARIO, `${side.name}: Node CPU ${per}`, used.nodeMs / tasks, 'ms', `${tasks} tasks`);
    results.addFact(STEPS_SCENARIO, `${side.name}: PostgreSQL backend CPU ${per}`, used.pgMs / tasks, 'ms', backendNote(used));
    results.addFact(STEPS_SCENARIO, `${side.name}: round trips ${per}`, trips / tasks, 'round trips', 'pg Client.query calls');
  }
  results.addRatio(RATIO.task, STEPS_CONCURRENCY, [STEPS_GROUP, S.tasklatch], [STEPS_GROUP, S.dbos]);
}

/** (b) and (c): windows of 16 tasks checkpointing steps back to back. */
async function checkpoints(results: Results, sides: readonly Side[], size: Sizes): Promise<void> {
  const windows = await inTurn(sides, size.rounds, (side) => side.child.ask<LoopReport>({ op: 'loop', warmupMs: size.warmupMs, durationMs: size.roundMs }));
  const per = new Map<SideName, { rate: number; node: number; pg: number }>();
  for (const side of sides) {
    const measured = windows.get(side) ?? [];
    const steps = measured.reduce((a, m) => a + m.steps, 0);
    if (steps === 0) throw new Error(`${side.name}: no step checkpointed in the measured windows`);
    const rates = measured.map((m) => (m.steps * 1000) / m.elapsedMs);
    const used = addCpu(measured.map((m) => m.cpu));
    const trips = measured.reduce((a, m) => a + m.roundTrips, 0);
    per.set(side.name, { rate: median(rates), node: used.nodeMs / steps, pg: used.pgMs / steps });
    results.addFact(
      STEPS_SCENARIO,
      `${side.name}: step checkpoints/s @${STEPS_CONCURRENCY}`,
      median(rates),
      'steps/s',
      `windows ${rates.map(fmt).join(', ')}; ${steps} steps`,
    );
    results.addFact(STEPS_SCENARIO, `${side.name}: Node CPU per step`, (used.nodeMs * 1000) / steps, 'µs');
    results.addFact(STEPS_SCENARIO, `${side.name}: PostgreSQL backend CPU per step`, (used.pgMs * 1000) / steps, 'µs', backendNote(used));
    results.addFact(STEPS_SCENARIO, `${side.name}: round trips per step`, trips / steps, 'round trips', 'pg Client.query calls');
  }
  const [a, b] = [per.get('tasklatch'), per.get('dbos')];
  if (a === undefined || b === undefined) return;
  const ratio = (name: string, value: number, what: string) =>
    results.ratios.push({ name, concurrency: STEPS_CONCURRENCY, value, numerator: `tasklatch ${what}`, denominator: `${DBOS} ${what}` });
  ratio(RATIO.checkpoints, a.rate / b.rate, 'step checkpoints/s');
  ratio(RATIO.node, a.node / b.node, 'Node CPU per step');
  ratio(RATIO.postgres, a.pg / b.pg, 'PostgreSQL backend CPU per step');
  ratio(RATIO.cpu, (a.node + a.pg) / (b.node + b.pg), 'Node + PostgreSQL backend CPU per step');
}

function backendNote(cpu: CpuSample): string {
  return `${cpu.backends} backends${cpu.lost > 0 ? `, ${cpu.lost} gone before the end of a window (their CPU missing)` : ''}`;
}

/**
 * Targets of the steps scenario, each with its threshold in its name; appended after
 * `computeRatiosAndTargets` (which replaces the list).
 */
export function addStepsTargets(results: Results): void {
  const fact = (name: string) => results.facts.find((f) => f.scenario === STEPS_SCENARIO && f.name === name)?.value;
  // CPU of each side (Node and its PostgreSQL backends) beside each ratio: per task, per step.
  const cpu = (unit: string, names: (side: SideName) => [string, string]) => {
    const of = (side: SideName) => {
      const [node, postgres] = names(side).map(fact);
      return node === undefined || postgres === undefined ? null : `${fmt(node + postgres)} ${unit} (Node ${fmt(node)} + PostgreSQL ${fmt(postgres)})`;
    };
    const [ours, theirs] = [of('tasklatch'), of('dbos')];
    return ours === null || theirs === null ? '' : `; CPU tasklatch ${ours}, DBOS ${theirs}`;
  };
  const perTask = `per ${STEPS_PER_TASK}-step task`;
  const taskCpu = cpu(`ms ${perTask}`, (side) => [`${side}: Node CPU ${perTask}`, `${side}: PostgreSQL backend CPU ${perTask}`]);
  const stepCpu = cpu('µs per step', (side) => [`${side}: Node CPU per step`, `${side}: PostgreSQL backend CPU per step`]);
  const push = (target: string, name: string, pass: (v: number) => boolean, beside = '') => {
    const r = results.ratios.find((x) => x.name === name && x.concurrency === STEPS_CONCURRENCY);
    if (r === undefined) return;
    const runs = r.trials === undefined ? '' : `, median of runs ${r.trials.map((t) => `${fmt(t)}×`).join(' / ')}`;
    results.targets.push({ name: target, pass: pass(r.value), figure: `${fmt(r.value)}× (tasklatch ÷ DBOS${runs}${beside})` });
  };
  const at = `@${STEPS_CONCURRENCY} vs ${DBOS}`;
  push(`steps: ${STEPS_PER_TASK}-step task ${at} (target ≥ 2×)`, RATIO.task, (v) => v >= 2, taskCpu);
  push(`steps: step checkpoints/s ${at} (target ≥ 2×)`, RATIO.checkpoints, (v) => v >= 2, stepCpu);
  push(`steps: Node + PostgreSQL CPU per step ${at} (target ≤ 1×)`, RATIO.cpu, (v) => v <= 1, stepCpu);
}
