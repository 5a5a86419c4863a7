import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import type { TaskStore } from '../../src/store/types.js';
import { freshPooledUrl, poolerSkipReason } from './postgres.js';

/** How a test suite gets a fresh, isolated store of one kind. */
export interface StoreHarness {
  name: 'memory' | 'sqlite' | 'postgres';
  /** A new empty store; `label` names its schema or file. */
  open(label: string): Promise<TaskStore>;
  /**
   * `count` handles on one new empty store, each with connections of its own where the store
   * has connections: memory gives the same instance, SQLite connections on one file,
   * PostgreSQL pools on one schema. Concurrency then meets in the database, not in one handle.
   */
  openMany(label: string, count: number): Promise<TaskStore[]>;
  /** How much of a slow randomised test this store gets (1 for memory; less for SQL stores). */
  readonly effort: number;
  /** The suite's title for it, when not its name. */
  readonly title?: string;
  /** Why its tests cannot run here (no PgBouncer), or null. */
  skip?(): string | null;
}

let counter = 0;

export const memoryHarness: StoreHarness = {
  name: 'memory',
  open: async () => new MemoryStore(),
  openMany: async (_label, count) => {
    const store = new MemoryStore();
    return Array.from({ length: count }, () => store);
  },
  effort: 1,
};

export const sqliteHarness: StoreHarness = {
  name: 'sqlite',
  open: async (label) => {
    const { SqliteStore } = await import('../../src/store/sqlite/store.js');
    const dir = await mkdtemp(join(tmpdir(), 'tasklatch-test-'));
    return SqliteStore.open(join(dir, `${label.replace(/\W+/g, '-')}-${++counter}.db`));
  },
  openMany: async (label, count) => {
    const { SqliteStore } = await import('../../src/store/sqlite/store.js');
    const dir = await mkdtemp(join(tmpdir(), 'tasklatch-test-'));
    const path = join(dir, `${label.replace(/\W+/g, '-')}-${++counter}.db`);
    // One after the other: the first migrates the fresh file, the others find it current.
    const stores = [];
    for (let i = 0; i < count; i++) stores.push(await SqliteStore.open(path));
    return stores;
  },
  effort: 0.1,
};

export const postgresHarness: StoreHarness = {
  name: 'postgres',
  open: async (label) => {
    const [{ PostgresStore }, { freshPostgresUrl }] = await Promise.all([import('../../src/store/postgres/store.js'), import('./postgres.js')]);
    return PostgresStore.open(await freshPostgresUrl(`${label}_${++counter}`));
  },
  openMany: async (label, count) => {
    const [{ PostgresStore }, { freshPostgresUrl }] = await Promise.all([import('../../src/store/postgres/store.js'), import('./postgres.js')]);
    const url = await freshPostgresUrl(`${label}_${++counter}`);
    // 32 connections in all, however many handles: enough that a race's writers meet in the
    // database rather than queue in a pool, few enough for test files running side by side.
    const poolSize = Math.max(4, Math.floor(32 / count));
    const stores = [];
    for (let i = 0; i < count; i++) stores.push(await PostgresStore.open(url, { poolSize }));
    return stores;
  },
  effort: 0.1,
};

/**
 * PostgreSQL through PgBouncer in transaction mode (`pgbouncer=true`), every handle with the
 * direct URL to LISTEN on (`listenUrl`), as a deployment behind a pooler runs.
 */
export const pooledPostgresHarness: StoreHarness = {
  name: 'postgres',
  title: 'postgres (pgbouncer)',
  skip: () => poolerSkipReason(),
  open: async (label) => (await pooledPostgresHarness.openMany(label, 1))[0] as TaskStore,
  openMany: async (label, count) => {
    const { PostgresStore } = await import('../../src/store/postgres/store.js');
    const urls = await freshPooledUrl(`${label}_${++counter}`);
    if (urls === null) throw new Error('no PgBouncer in this run');
    const poolSize = Math.max(4, Math.floor(32 / count));
    const stores = [];
    for (let i = 0; i < count; i++) stores.push(await PostgresStore.open(urls.pooled, { poolSize, listenUrl: urls.direct }));
    return stores;
  },
  effort: 0.1,
};

export const ALL_HARNESSES: readonly StoreHarness[] = [memoryHarness, sqliteHarness, postgresHarness, pooledPostgresHarness];
