import pg from 'pg';
import { startCpuWindow } from '../../lib/backend-cpu.js';
import { roundTrips } from '../../lib/round-trips.js';
import { runRound, sleep } from '../../lib/stats.js';
import { startDbosSide } from './dbos-side.js';
import type { LoopReport, SideRequest, SideStart, TasksReport } from './protocol.js';
import type { LoopState, StepsSide } from './side.js';
import { startTasklatchSide } from './tasklatch-side.js';

/**
 * One side of the steps scenario in a process of its own (started with `fork`): it runs the
 * measurements it is asked for and reports the CPU of this process and of its side's PostgreSQL
 * backends, and the round trips its pg clients made, over each measured window.
 */

let side: StepsSide | null = null;
let start: SideStart | null = null;
let monitor: pg.Client | null = null;

function running(): { side: StepsSide; start: SideStart; monitor: pg.Client } {
  if (side === null || start === null || monitor === null) throw new Error('side not started');
  return { side, start, monitor };
}

/** `concurrency` requestors run whole tasks back to back for `durationMs`. */
async function tasks(durationMs: number): Promise<TasksReport> {
  const r = running();
  const end = await startCpuWindow(r.monitor, r.start.backends);
  const trips = roundTrips();
  const round = await runRound(r.start.concurrency, durationMs, (w) => r.side.runTask(w));
  const made = roundTrips() - trips;
  return { ...round, cpu: await end(), roundTrips: made };
}

/**
 * `concurrency` tasks checkpoint steps back to back; after `warmupMs` the steps that returned
 * (checkpoint committed) within `durationMs` are counted. Then the tasks are told to stop and
 * awaited, so the next window starts from none running.
 */
async function loop(warmupMs: number, durationMs: number): Promise<LoopReport> {
  const r = running();
  const states: LoopState[] = Array.from({ length: r.start.concurrency }, () => ({ stop: false, checkpoints: 0 }));
  const done = Promise.all(states.map((state) => r.side.runLoop(state)));
  const count = () => states.reduce((a, s) => a + s.checkpoints, 0);
  try {
    await sleep(warmupMs);
    const end = await startCpuWindow(r.monitor, r.start.backends);
    const [steps, trips, t0] = [count(), roundTrips(), performance.now()];
    await sleep(durationMs);
    const report = { steps: count() - steps, roundTrips: roundTrips() - trips, elapsedMs: performance.now() - t0 };
    return { ...report, cpu: await end() };
  } finally {
    for (const state of states) state.stop = true;
    await done;
  }
}

async function answer(request: SideRequest): Promise<unknown> {
  switch (request.op) {
    case 'start':
      start = request.start;
      roundTrips(); // installs the counter before any client exists
      monitor = new pg.Client({ connectionString: start.serverUrl });
      await monitor.connect();
      side = start.side === 'tasklatch' ? await startTasklatchSide(start) : await startDbosSide(start);
      return {};
    case 'tasks':
      return tasks(request.durationMs);
    case 'loop':
      return loop(request.warmupMs, request.durationMs);
    case 'stop':
      await side?.close();
      await monitor?.end();
      setImmediate(() => process.exit(0));
      return {};
  }
}

process.on('message', (message: { id: number; request: SideRequest }) => {
  answer(message.request).then(
    (value) => process.send?.({ id: message.id, value }),
    (error: unknown) => process.send?.({ id: message.id, error: String((error as Error).stack ?? error) }),
  );
});
