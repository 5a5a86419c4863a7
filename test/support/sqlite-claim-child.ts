/**
 * A child process of the SQLite cross-process claim test. Like sqlite-race-child.ts it runs as
 * plain JavaScript under `node`: the test transpiles this file (types only) and passes the URL
 * of the BUILT store module. Messages go over the IPC channel.
 *
 *   node child.mjs STORE_URL DB_PATH OWNER NOW LIMIT PAUSE_MS
 *
 * Claims as OWNER, LIMIT tasks a call, at the fixed clock NOW (so no lease runs out during the
 * test), until a claim comes back empty; then reports every record it got. Between calls it
 * pauses PAUSE_MS, standing in for running the tasks: without it the process holding the write
 * lock takes it straight back while the others sleep in SQLite's busy handler, and one process
 * claims everything.
 */
import { performance } from 'node:perf_hooks';
import type { SqliteStore as SqliteStoreClass } from '../../src/store/sqlite/store.js';

type StoreModule = { SqliteStore: typeof SqliteStoreClass };
type Go = { type: 'go'; startAt: number };

/** What the child sends back. */
export interface ClaimReport {
  owner: string;
  /** [taskId, version, attempt, leaseOwner] of each record a claim returned. */
  claimed: [string, number, number, string | null][];
  /** Claim calls made, the last (empty) one included. */
  calls: number;
  /** Claims that hit STORE_UNAVAILABLE (busy timeout) and were retried. */
  busyRetries: number;
  elapsedMs: number;
}

const [storeUrl = '', dbPath = '', owner = '', nowText = '0', limitText = '1', pauseText = '0'] = process.argv.slice(2);
const { SqliteStore } = (await import(storeUrl)) as StoreModule;

const wall = (): number => performance.timeOrigin + performance.now();
const sleeper = new Int32Array(new SharedArrayBuffer(4));

/** Waits until `at` on the shared clock, so every child starts claiming at one instant. */
function waitUntil(at: number): void {
  const ahead = at - wall();
  if (ahead > 2) Atomics.wait(sleeper, 0, 0, ahead - 1);
  while (wall() < at) {
    // spin the last millisecond
  }
}

function send(message: unknown): Promise<void> {
  return new Promise((resolve, reject) => process.send!(message, (error: Error | null) => (error ? reject(error) : resolve())));
}

const store = await SqliteStore.open(dbPath);
const report: ClaimReport = { owner, claimed: [], calls: 0, busyRetries: 0, elapsedMs: 0 };
await send({ type: 'ready' });
const go = await new Promise<Go>((resolve) => process.once('message', (message) => resolve(message as Go)));
waitUntil(go.startAt);
const started = wall();
for (;;) {
  let batch;
  try {
    report.calls++;
    batch = await store.claim({
      owner,
      now: Number(nowText),
      leaseMs: 60_000,
      limit: Number(limitText),
      maxAttempts: 5,
      abandonedResult: { content: [{ type: 'text', text: 'abandoned' }], isError: true },
      correlationId: `claim-${owner}`,
    });
  } catch (error) {
    // A busy timeout is the only error worth a retry: the claim's transaction did not happen.
    if ((error as { code?: string }).code !== 'STORE_UNAVAILABLE') throw error;
    report.busyRetries++;
    continue;
  }
  if (batch.length === 0) break;
  for (const r of batch) report.claimed.push([r.taskId, r.version, r.attempt, r.leaseOwner]);
  Atomics.wait(sleeper, 0, 0, Number(pauseText));
}
report.elapsedMs = wall() - started;
await store.close();
await send({ type: 'report', report });
process.disconnect();
