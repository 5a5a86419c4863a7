import { readFileSync } from 'node:fs';
import { DBOS } from '@dbos-inc/dbos-sdk';
import pg from 'pg';
import type { SideStart } from './protocol.js';
import { LOOP_STEPS, type LoopState, type StepsSide } from './side.js';

/**
 * The DBOS Transact side: the same work as tasklatch's tool, written as DBOS workflows of
 * `DBOS.runStep` checkpoints, started with `DBOS.startWorkflow` and awaited through the handle,
 * on a system database of its own on the same PostgreSQL server (DBOS creates and migrates it).
 */

/** The installed version of DBOS Transact, from its package.json (exports hide it from import). */
export const DBOS_VERSION = ((): string => {
  try {
    // Compiled to dist/bench/bench/scenarios/steps/; the package root is five levels up.
    const file = new URL('../../../../../node_modules/@dbos-inc/dbos-sdk/package.json', import.meta.url);
    return (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version;
  } catch {
    return '?';
  }
})();

/** Launches DBOS (a process-wide singleton: once per side process). */
export async function startDbosSide(start: SideStart): Promise<StepsSide> {
  // Registration comes before launch, as DBOS requires.
  const steps = DBOS.registerWorkflow(
    async (n: number): Promise<number> => {
      let sum = 0;
      for (let i = 0; i < n; i++) sum += await DBOS.runStep(() => Promise.resolve(i), { name: `s${i}` });
      return sum;
    },
    { name: 'benchSteps' },
  );
  // A workflow's arguments are serialised: the looping one gets a key to its state in this process.
  const loops = new Map<string, LoopState>();
  const loop = DBOS.registerWorkflow(
    async (key: string): Promise<number> => {
      const state = loops.get(key);
      if (state === undefined) throw new Error(`no loop state ${key}`);
      let i = 0;
      while (!state.stop && i < LOOP_STEPS) {
        await DBOS.runStep(() => Promise.resolve(i), { name: `s${i}` });
        state.checkpoints++;
        i++;
      }
      return i;
    },
    { name: 'benchStepLoop' },
  );
  DBOS.setConfig({ name: 'tlbench', systemDatabaseUrl: start.url, systemDatabasePoolSize: start.poolSize, logLevel: 'error' });
  await DBOS.launch();
  let nextLoop = 0;
  const expected = (start.steps * (start.steps - 1)) / 2;
  return {
    runTask: async () => {
      const handle = await DBOS.startWorkflow(steps)(start.steps);
      const sum = await handle.getResult();
      if (sum !== expected) throw new Error(`DBOS workflow returned ${sum}, expected ${expected}`);
    },
    runLoop: async (state) => {
      const key = String(nextLoop++);
      loops.set(key, state);
      try {
        while (!state.stop) {
          const handle = await DBOS.startWorkflow(loop)(key);
          await handle.getResult();
        }
      } finally {
        loops.delete(key);
      }
    },
    close: () => DBOS.shutdown(),
  };
}

/** Drops a database of this run, ending any connection left on it. */
export async function dropDatabase(serverUrl: string, database: string): Promise<void> {
  if (process.env.TASKLATCH_KEEP_SCHEMAS === '1') return;
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    await client.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
  } finally {
    await client.end();
  }
}
