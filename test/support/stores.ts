import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import type { TaskStore } from '../../src/store/types.js';

/** How a test suite gets a fresh, isolated store of one kind. */
export interface StoreHarness {
  name: 'memory' | 'sqlite' | 'postgres';
  /** A new empty store; `label` names its schema or file. */
  open(label: string): Promise<TaskStore>;
}

let counter = 0;

export const memoryHarness: StoreHarness = {
  name: 'memory',
  open: async () => new MemoryStore(),
};

export const sqliteHarness: StoreHarness = {
  name: 'sqlite',
  open: async (label) => {
    const { SqliteStore } = await import('../../src/store/sqlite/store.js');
    const dir = await mkdtemp(join(tmpdir(), 'tasklatch-test-'));
    return SqliteStore.open(join(dir, `${label.replace(/\W+/g, '-')}-${++counter}.db`));
  },
};

export const postgresHarness: StoreHarness = {
  name: 'postgres',
  open: async (label) => {
    const [{ PostgresStore }, { freshPostgresUrl }] = await Promise.all([
      import('../../src/store/postgres/store.js'),
      import('./postgres.js'),
    ]);
    return PostgresStore.open(await freshPostgresUrl(`${label}_${++counter}`));
  },
};

export const ALL_HARNESSES: readonly StoreHarness[] = [memoryHarness, sqliteHarness, postgresHarness];
