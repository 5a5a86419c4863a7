/**
 * A child process of the SQLite race tests. It runs as plain JavaScript under `node`: the test
 * transpiles this file (types only, no bundling) and passes the URL of the BUILT store module,
 * so the child exercises the code that ships. Messages go over the IPC channel.
 *
 *   node child.mjs race STORE_URL DB_PATH PLAN_PATH PROC   writes its share of every trial
 *   node child.mjs open STORE_URL DB_PATH                  opens (and migrates) a fresh file
 */
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import type { SqliteStore as SqliteStoreClass } from '../../src/store/sqlite/store.js';
import type { RacePlan, RaceReport, RaceWriter } from './sqlite-race-plan.js';

type StoreModule = { SqliteStore: typeof SqliteStoreClass };
type Go = { type: 'go'; startAt: number; slotMs: number };

const [mode = '', storeUrl = '', dbPath = '', planPath = '', procText = '0'] = process.argv.slice(2);
const { SqliteStore } = (await import(storeUrl)) as StoreModule;

/** Wall-clock milliseconds with sub-millisecond precision, comparable across processes. */
const wall = (): number => performance.timeOrigin + performance.now();
const sleeper = new Int32Array(new SharedArrayBuffer(4));

/** Waits until `at` on the shared clock: sleeps most of the way, spins the last millisecond. */
function waitUntil(at: number): void {
  const ahead = at - wall();
  if (ahead > 2) Atomics.wait(sleeper, 0, 0, ahead - 1);
  while (wall() < at) {
    // spin: a sleep granularity of ~1 ms would let one process start a trial noticeably later
  }
}

function send(message: unknown): Promise<void> {
  return new Promise((resolve, reject) => process.send!(message, (error: Error | null) => (error ? reject(error) : resolve())));
}

function nextGo(): Promise<Go> {
  return new Promise((resolve) => process.once('message', (message) => resolve(message as Go)));
}

async function write(store: SqliteStoreClass, plan: RacePlan, taskId: string, writer: RaceWriter, tag: string): Promise<string> {
  if (writer.kind === 'cancel') return (await store.cancel({ authKey: plan.authKey, taskId, now: plan.now, correlationId: tag })).decision;
  const write = { status: writer.status, expectedVersion: writer.expectedVersion, result: writer.result };
  return (await store.transition({ taskId, authKey: plan.authKey, write, correlationId: tag, now: plan.now })).decision;
}

async function race(): Promise<void> {
  const proc = Number(procText);
  const plan = JSON.parse(readFileSync(planPath, 'utf8')) as RacePlan;
  const store = await SqliteStore.open(dbPath);
  const report: RaceReport = { proc, outcomes: [], busyRetries: 0, windows: [], elapsedMs: 0 };
  await send({ type: 'ready' });
  const go = await nextGo();
  const started = wall();
  for (const [t, trial] of plan.trials.entries()) {
    waitUntil(go.startAt + t * go.slotMs);
    const begin = wall();
    for (const [w, writer] of trial.writers.entries()) {
      if (writer.proc !== proc) continue;
      for (;;) {
        try {
          report.outcomes.push([t, w, await write(store, plan, trial.taskId, writer, `p${proc}-t${t}-w${w}`)]);
          break;
        } catch (error) {
          // A busy timeout is the only error worth a retry: the write did not happen.
          if ((error as { code?: string }).code !== 'STORE_UNAVAILABLE') throw error;
          report.busyRetries++;
        }
      }
    }
    report.windows.push([begin, wall()]);
  }
  report.elapsedMs = wall() - started;
  await store.close();
  await send({ type: 'report', report });
}

async function open(): Promise<void> {
  await send({ type: 'ready' });
  const go = await nextGo();
  waitUntil(go.startAt);
  try {
    const store = await SqliteStore.open(dbPath);
    await store.close();
    await send({ type: 'opened', ok: true });
  } catch (error) {
    await send({ type: 'opened', ok: false, error: String(error) });
  }
}

await (mode === 'race' ? race() : open());
process.disconnect();
