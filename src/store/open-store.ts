import { TasklatchError } from '../core/errors.js';
import type { TaskStore } from './types.js';

/** Where the store lives when nothing is said: SQLite under the working directory. */
export const DEFAULT_STORE_URL = 'sqlite:./.tasklatch/tasks.db';

/** Options of {@link openStore}. */
export interface OpenStoreOptions {
  /**
   * PostgreSQL behind a pooler in transaction mode (`?pgbouncer=true`): a direct URL to the same
   * database for LISTEN. Without it such a store's waiters and workers poll.
   */
  listenUrl?: string;
}

/**
 * Opens a store from a URL: `memory`, `sqlite:PATH`, `postgres://…` / `postgresql://…`
 * (`?schema=NAME` keeps tasklatch's tables in a schema of their own; `?pgbouncer=true` when
 * the URL goes through a pooler in transaction mode). SQL stores apply their
 * migrations on first use. The drivers are imported only when their store is asked for.
 */
export async function openStore(url: string, options: OpenStoreOptions = {}): Promise<TaskStore> {
  const postgres = url.startsWith('postgres://') || url.startsWith('postgresql://');
  if (options.listenUrl !== undefined && !postgres) {
    throw new TasklatchError('INVALID_STORE_URL', 'a listen URL applies to a PostgreSQL store only (postgres://…?pgbouncer=true)');
  }
  if (url === 'memory' || url === 'memory:') {
    const { MemoryStore } = await import('./memory/memory-store.js');
    return new MemoryStore();
  }
  if (url.startsWith('sqlite:')) {
    const path = url.slice('sqlite:'.length);
    if (path === '') throw new TasklatchError('INVALID_STORE_URL', 'sqlite: URL needs a path, e.g. sqlite:./.tasklatch/tasks.db');
    const { SqliteStore } = await import('./sqlite/store.js');
    return SqliteStore.open(path, sqliteOptionsFromEnv());
  }
  if (postgres) {
    const { PostgresStore } = await import('./postgres/store.js');
    return PostgresStore.open(url, options.listenUrl === undefined ? {} : { listenUrl: options.listenUrl });
  }
  throw new TasklatchError('INVALID_STORE_URL', `unsupported store URL ${JSON.stringify(url)}: expected memory, sqlite:PATH or postgres://…`);
}

/** `TASKLATCH_SQLITE_MMAP_BYTES` (e.g. 0: the file read by `read` calls only; see `mmapBytes`), checked here to name the variable. */
function sqliteOptionsFromEnv(): { mmapBytes?: number } {
  const given = process.env.TASKLATCH_SQLITE_MMAP_BYTES;
  if (given === undefined || given.trim() === '') return {};
  const mmapBytes = Number(given);
  if (!/^\s*\d+\s*$/.test(given) || !Number.isSafeInteger(mmapBytes)) {
    throw new TasklatchError('INVALID_INPUT', `TASKLATCH_SQLITE_MMAP_BYTES must be a whole number of bytes, 0 or more; got ${JSON.stringify(given)}`);
  }
  return { mmapBytes };
}

/** The store URL without credentials, for printing. */
export function describeStoreUrl(url: string): string {
  return url.replace(/(\/\/[^:/@]+):[^@]*@/, '$1:***@');
}
