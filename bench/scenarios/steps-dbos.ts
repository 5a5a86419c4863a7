import { readFileSync } from 'node:fs';
import { DBOS } from '@dbos-inc/dbos-sdk';
import pg from 'pg';
import type { BenchPostgres } from '../lib/postgres.js';

/**
 * The DBOS Transact side of the steps scenario: the same work as tasklatch's tools, written as
 * DBOS workflows of `DBOS.runStep` checkpoints, started with `DBOS.startWorkflow` and awaited
 * through the handle, on a system database of its own on the same PostgreSQL server.
 */

/** The installed version of DBOS Transact, from its package.json (exports hide it from import). */
export const DBOS_VERSION = ((): string => {
  try {
    const file = new URL('../../../../node_modules/@dbos-inc/dbos-sdk/package.json', import.meta.url);
    return (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version;
  } catch {
    return '?';
  }
})();

/** Stop flag and checkpoint count the looping workflows share with the bench (one process). */
export interface LoopState {
  stop: boolean;
  checkpoints: number;
}

export interface DbosSide {
  /** The system database (dropped by `close`). */
  database: string;
  /** Starts a workflow of `steps` checkpoints and waits for its result. */
  runTask(steps: number): Promise<void>;
  /** Starts a workflow that checkpoints steps until `state.stop`; resolves when it has returned. */
  runLoop(state: LoopState): Promise<void>;
  close(): Promise<void>;
}

/**
 * Launches DBOS (a process-wide singleton: once per bench run) on a fresh database
 * `tlbench_<run>_steps_dbos`, which DBOS creates and migrates itself.
 */
export async function startDbos(pgServer: BenchPostgres, poolSize: number): Promise<DbosSide> {
  const database = `tlbench_${pgServer.run}_steps_dbos`;
  const url = new URL(pgServer.url);
  url.pathname = `/${database}`;
  // Registration comes before launch, as DBOS requires.
  const steps = DBOS.registerWorkflow(
    async (n: number): Promise<number> => {
      let sum = 0;
      for (let i = 0; i < n; i++) sum += await DBOS.runStep(() => Promise.resolve(i), { name: `s${i}` });
      return sum;
    },
    { name: 'benchSteps' },
  );
  const loops = new Map<string, LoopState>();
  const loop = DBOS.registerWorkflow(
    async (key: string): Promise<number> => {
      // The state lives in this process; a workflow's arguments must be serialisable, so it gets a key.
      const state = loops.get(key);
      if (state === undefined) throw new Error(`no loop state ${key}`);
      let i = 0;
      while (!state.stop) {
        await DBOS.runStep(() => Promise.resolve(i), { name: `s${i}` });
        state.checkpoints++;
        i++;
      }
      return i;
    },
    { name: 'benchStepLoop' },
  );
  DBOS.setConfig({ name: 'tlbench', systemDatabaseUrl: url.toString(), systemDatabasePoolSize: poolSize, logLevel: 'error' });
  await DBOS.launch();
  let nextLoop = 0;
  return {
    database,
    runTask: async (n) => {
      const handle = await DBOS.startWorkflow(steps)(n);
      const sum = await handle.getResult();
      if (sum !== (n * (n - 1)) / 2) throw new Error(`DBOS workflow returned ${sum}`);
    },
    runLoop: async (state) => {
      const key = String(nextLoop++);
      loops.set(key, state);
      try {
        const handle = await DBOS.startWorkflow(loop)(key);
        await handle.getResult();
      } finally {
        loops.delete(key);
      }
    },
    close: async () => {
      await DBOS.shutdown();
      await dropDatabase(pgServer.url, database);
    },
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
