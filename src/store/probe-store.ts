import { TasklatchError } from '../core/errors.js';
import type { StoreProbe } from './task-operations.js';

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
