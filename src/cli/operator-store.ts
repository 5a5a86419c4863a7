import { existsSync } from 'node:fs';
import { TasklatchError } from '../core/errors.js';
import { openStore } from '../store/open-store.js';
import type { TaskStore } from '../store/types.js';

/**
 * Opens the store an operator command looks at. A memory store lives and dies with one process,
 * so there is nothing to look at from another; a SQLite path that does not exist is a typo, not
 * a store to create.
 */
export async function openOperatorStore(url: string): Promise<TaskStore> {
  if (url === 'memory' || url === 'memory:') {
    throw new TasklatchError('INVALID_STORE_URL', 'a memory store exists only inside the process that holds it: give a sqlite: or postgres:// URL');
  }
  if (url.startsWith('sqlite:')) {
    const path = url.slice('sqlite:'.length);
    if (path !== '' && path !== ':memory:' && !existsSync(path)) {
      throw new TasklatchError('STORE_UNAVAILABLE', `no SQLite store at ${path}: check --store (tasklatch serve or migrate creates it)`);
    }
  }
  return openStore(url);
}
