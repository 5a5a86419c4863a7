import { TasklatchError } from '../core/errors.js';
import type { SchemaState } from './task-operations.js';

/** What a look at a store found, without changing it. */
export interface StoreProbe {
  /** The store, for messages (never a password). */
  where: string;
  /** Why it could not be reached, or null. */
  unreachable: string | null;
  /** Its schema against this code's migrations (null when unreachable). */
  schema: SchemaState | null;
  /** PostgreSQL: `ok` when LISTEN works, else why not; null where there is nothing to listen on. */
  notifications: string | null;
  /** The driver the store is read with, where there is a choice (SQLite). */
  driver?: string;
}

/**
 * Looks at the store at `url` as `tasklatch doctor` does: reachable, migrated, able to notify.
 * Unlike `openStore` it creates nothing and applies no migration.
 */
export async function probeStore(url: string): Promise<StoreProbe> {
  if (url.startsWith('sqlite:') && url.length > 'sqlite:'.length) {
    const { probeSqlite } = await import('./sqlite/probe.js');
    return probeSqlite(url.slice('sqlite:'.length));
  }
  if (url.startsWith('postgres://') || url.startsWith('postgresql://')) {
    const { probePostgres } = await import('./postgres/probe.js');
    return probePostgres(url);
  }
  throw new TasklatchError('INVALID_STORE_URL', `doctor looks at sqlite:PATH or postgres://… stores, got ${JSON.stringify(url)}`);
}
