import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { z } from 'zod';
import type { WireRequest } from '../../src/core/types.js';
import { createTask } from '../../src/runtime/requests/create-task.js';
import { createRuntime, type TaskRuntime } from '../../src/runtime/task-runtime.js';
import { awaitTaskResult } from '../../src/service/result-wait.js';
import { PostgresStore } from '../../src/store/postgres/store.js';
import { SqliteStore } from '../../src/store/sqlite/store.js';
import type { TaskStore } from '../../src/store/types.js';
import { defineTool } from '../../src/tools/tool.js';
import { TTL_MS } from '../lib/mcp.js';
import type { BenchPostgres } from '../lib/postgres.js';
import type { Results } from '../lib/results.js';
import { fmt, summarize } from '../lib/stats.js';
import type { FanOutDbosReport, FanOutDbosRequest } from './fan-out-dbos.js';
import { Child } from './http/child.js';
import { DBOS_VERSION, dropDatabase } from './steps/dbos-side.js';

/** Handlers run at once by the worker of this scenario. */
const WORKER_CONCURRENCY = 16;
const EVENT_TYPE = 'bench.go';
export const FANOUT_SCENARIO = 'fan-out and events (child tasks, ctx.step.waitForEvent)';

/** Sizes: children per parent, parents measured one after another, event round trips. */
function sizes(quick: boolean): { children: number; parents: number; warmup: number; roundTrips: number } {
  return quick ? { children: 10, parents: 5, warmup: 1, roundTrips: 20 } : { children: 100, parents: 10, warmup: 2, roundTrips: 200 };
}
type Sizes = ReturnType<typeof sizes>;

const child = defineTool({
  name: 'bench_child',
  description: 'Returns its `n`. Benchmark tool.',
  inputSchema: z.object({ n: z.number().int() }),
  execution: { taskSupport: 'required' },
  handler: ({ n }) => Promise.resolve({ content: [{ type: 'text', text: String(n) }], structuredContent: { value: n } }),
});

const parent = defineTool({
  name: 'bench_parent',
  description: 'Starts `children` child tasks at once and sums their values. Benchmark tool.',
  inputSchema: z.object({ children: z.number().int().min(1) }),
  execution: { taskSupport: 'required' },
  handler: async ({ children }, ctx) => {
    const results = await Promise.all(Array.from({ length: children }, (_, i) => ctx.step.runTool(`c${i}`, child.name, { n: i })));
    const sum = results.reduce((total, r) => total + (r.structuredContent?.value as number), 0);
    return { content: [{ type: 'text', text: String(sum) }], structuredContent: { sum } };
  },
});

/** When each waiting task's handler got its event back (performance.now()), by the key it was given. */
const resumed = new Map<string, (at: number) => void>();

const waiter = defineTool({
  name: 'bench_wait',
  description: 'Waits for an event of type bench.go, then tells the bench it resumed. Benchmark tool.',
  inputSchema: z.object({ key: z.string() }),
  execution: { taskSupport: 'required' },
  handler: async ({ key }, ctx) => {
    const payload = await ctx.step.waitForEvent('go', { type: EVENT_TYPE, timeoutMs: 60_000 });
    resumed.get(key)?.(performance.now());
    return { content: [{ type: 'text', text: 'ok' }], structuredContent: { payload } };
  },
});

/**
 * Tells when a task's run has suspended: the worker's `run:sleeps` line (said after the suspend
 * write), heard through a logger of its own.
 */
class Suspensions {
  private readonly waiters = new Map<string, () => void>();
  /** Suspended before anyone waited for them. */
  private readonly seen = new Set<string>();
  readonly logger = pino({ level: 'info' }, { write: (line: string) => this.line(line) });

  next(taskId: string): Promise<void> {
    if (this.seen.delete(taskId)) return Promise.resolve();
    return new Promise((resolve) => this.waiters.set(taskId, resolve));
  }

  private line(line: string): void {
    if (!line.includes('task sleeps')) return;
    const { taskId } = JSON.parse(line) as { taskId?: string };
    if (taskId === undefined) return;
    const resolve = this.waiters.get(taskId);
    if (resolve === undefined) {
      this.seen.add(taskId);
      return;
    }
    this.waiters.delete(taskId);
    resolve();
  }
}

/**
 * Child tasks and events on SQLite and PostgreSQL: (1) fan-out, a parent task that starts 100
 * children of a trivial tool at once (`Promise.all` of `ctx.step.runTool`) and sums them, the
 * parents one after another, timed from admission to the parent's result; (2) the event round
 * trip, a task suspended in `ctx.step.waitForEvent` and `runtime.sendEvent` timed until its
 * handler has the event back. One runtime with its in-process worker (concurrency 16) per store;
 * the active-task and stored-task bounds are lifted (children count toward them). Then the same
 * fan-out with DBOS Transact child workflows on the same PostgreSQL server, and the parents/s of
 * the two as a ratio.
 */
export async function fanOut(results: Results, quick: boolean, pg: BenchPostgres): Promise<void> {
  const size = sizes(quick);
  console.log(`\n[fanout] child tasks (${size.children} per parent) and event round trips, SQLite and PostgreSQL`);
  const dir = await mkdtemp(join(tmpdir(), 'tasklatch-bench-'));
  try {
    await onStore(results, size, 'SQLite', await SqliteStore.open(join(dir, 'fanout.db')));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  const tasklatchRate = await onStore(results, size, 'PostgreSQL', await PostgresStore.open(pg.schemaUrl('fanout'), { poolSize: 20 }));
  const dbosRate = await dbosFanOut(results, size, pg);
  results.addFact(
    FANOUT_SCENARIO,
    `PostgreSQL: fan-out of ${size.children}, parents/s, tasklatch ÷ DBOS Transact ${DBOS_VERSION}`,
    tasklatchRate / dbosRate,
    '×',
    `${fmt(tasklatchRate)} ÷ ${fmt(dbosRate)} parents/s, same server, same run`,
  );
}

/**
 * The same fan-out with DBOS Transact child workflows (`DBOS.startWorkflow` inside a workflow),
 * in a process of its own on a database of its own (dropped at the end), pool of 20; returns its
 * parents/s.
 */
async function dbosFanOut(results: Results, size: Sizes, pg: BenchPostgres): Promise<number> {
  const database = `tlbench_${pg.run}_fanout_dbos`;
  const url = new URL(pg.url);
  url.pathname = `/${database}`;
  const side = new Child<FanOutDbosRequest>('../fan-out-dbos.js');
  try {
    await side.ask({ op: 'start', url: url.toString(), poolSize: 20 });
    const out = await side.ask<FanOutDbosReport>({ op: 'parents', children: size.children, parents: size.parents, warmup: size.warmup });
    return reportFanOut(results, `DBOS Transact ${DBOS_VERSION}`, size, out.times, out.elapsedMs / 1000, 'child workflows started with DBOS.startWorkflow');
  } finally {
    await side.stop();
    await dropDatabase(pg.url, database);
  }
}

/** The fan-out rows of one side; returns its parents/s. */
function reportFanOut(results: Results, label: string, size: Sizes, times: readonly number[], seconds: number, how: string): number {
  const s = summarize(times);
  const what = `${label}: fan-out of ${size.children}`;
  const note = `${size.parents} parents one after another, ${how}`;
  const rate = size.parents / seconds;
  results.addFact(FANOUT_SCENARIO, `${what}, parents/s`, rate, 'parents/s', note);
  results.addFact(FANOUT_SCENARIO, `${what}, children/s`, (size.parents * size.children) / seconds, 'children/s', note);
  results.addFact(FANOUT_SCENARIO, `${what}, parent end to end p50`, s.p50, 'ms', 'start → result of the parent');
  results.addFact(FANOUT_SCENARIO, `${what}, parent end to end p99`, s.p99, 'ms', `max ${s.max.toFixed(1)} ms`);
  return rate;
}

/** Both measurements on one store; returns the fan-out's parents/s. */
async function onStore(results: Results, size: Sizes, label: string, store: TaskStore): Promise<number> {
  const suspensions = new Suspensions();
  const runtime = createRuntime({
    store,
    tools: [child, parent, waiter],
    callersIdentified: true,
    execute: true,
    worker: { concurrency: WORKER_CONCURRENCY },
    limits: { maxActiveTasks: null, maxStoredTasks: null },
    logger: suspensions.logger,
  });
  await runtime.start();
  try {
    const rate = await fanOutOn(results, size, label, runtime);
    await eventsOn(results, size, label, runtime, suspensions);
    return rate;
  } finally {
    await runtime.close();
    await store.close();
  }
}

let counter = 0;

/** Admits `tool` as a task of `auth`; resolves with its id. */
async function admit(runtime: TaskRuntime, auth: string, tool: typeof parent | typeof waiter, args: Record<string, unknown>): Promise<string> {
  const request: WireRequest = { method: 'tools/call', params: { name: tool.name, arguments: args, task: { ttl: TTL_MS } } };
  const out = await createTask(runtime.guard, { auth, tool: runtime.tools.descriptor(tool), request });
  if (out.decision !== 'ACCEPT_TASK') throw new Error(`expected ACCEPT_TASK, got ${out.decision}`);
  return out.record.taskId;
}

async function completed(runtime: TaskRuntime, auth: string, taskId: string): Promise<Record<string, unknown> | undefined> {
  const done = await awaitTaskResult(runtime.guard, { auth, taskId });
  if (done.decision !== 'RETURN_RESULT' || done.record.status !== 'completed') {
    throw new Error(`expected a completed task, got ${done.decision} ${done.record?.status ?? ''} ${JSON.stringify(done.record?.result ?? null)}`);
  }
  return (done.record.result as { structuredContent?: Record<string, unknown> }).structuredContent;
}

async function fanOutOn(results: Results, size: Sizes, label: string, runtime: TaskRuntime): Promise<number> {
  const expected = (size.children * (size.children - 1)) / 2;
  const one = async (): Promise<number> => {
    const auth = `fanout/${++counter}`;
    const t0 = performance.now();
    const taskId = await admit(runtime, auth, parent, { children: size.children });
    const out = await completed(runtime, auth, taskId);
    if (out?.sum !== expected) throw new Error(`parent returned ${JSON.stringify(out)}, expected sum ${expected}`);
    return performance.now() - t0;
  };
  for (let i = 0; i < size.warmup; i++) await one();
  const times: number[] = [];
  const start = performance.now();
  for (let i = 0; i < size.parents; i++) times.push(await one());
  const seconds = (performance.now() - start) / 1000;
  return reportFanOut(results, `tasklatch ${label}`, size, times, seconds, `children by ctx.step.runTool, worker concurrency ${WORKER_CONCURRENCY}`);
}

async function eventsOn(results: Results, size: Sizes, label: string, runtime: TaskRuntime, suspensions: Suspensions): Promise<void> {
  const trips: number[] = [];
  for (let i = 0; i < size.roundTrips + 2; i++) {
    const auth = `events/${Math.floor(++counter / 500)}`;
    const key = `e${counter}`;
    const taskId = await admit(runtime, auth, waiter, { key });
    await suspensions.next(taskId);
    const back = new Promise<number>((resolve) => resumed.set(key, resolve));
    const t0 = performance.now();
    const sent = await runtime.sendEvent({ taskId, type: EVENT_TYPE, authKey: auth, payload: { i } });
    if (sent.kind !== 'sent' || !sent.woke) throw new Error(`expected a send that woke the task, got ${JSON.stringify(sent)}`);
    const at = await back;
    resumed.delete(key);
    await completed(runtime, auth, taskId);
    // The first two are warm-up.
    if (i >= 2) trips.push(at - t0);
  }
  const s = summarize(trips);
  const what = `tasklatch ${label}: event round trip (sendEvent → handler resumed)`;
  results.addFact(FANOUT_SCENARIO, `${what} p50`, s.p50, 'ms', `${s.n} round trips, one at a time`);
  results.addFact(FANOUT_SCENARIO, `${what} p99`, s.p99, 'ms', `max ${s.max.toFixed(1)} ms`);
}
