import type { SqliteDatabase } from './driver.js';
import { TasklatchError } from '../../core/errors.js';
import { isBusy } from './connection.js';

/**
 * How the SQLite store's statements become transactions: each write is one `BEGIN IMMEDIATE`
 * transaction on the store's one connection. (Writes are synchronous calls there, so there is
 * nothing to batch or pipeline.)
 */

/**
 * Runs `fn` in a `BEGIN IMMEDIATE` transaction: the write lock is taken before the first read,
 * so two processes can never both read one version and both write. A lock still held by another
 * process after the busy timeout is `STORE_UNAVAILABLE`.
 */
export function inTransaction<T>(db: SqliteDatabase, fn: () => T): T {
  try {
    return db.transaction(fn).immediate();
  } catch (error) {
    if (isBusy(error)) {
      throw new TasklatchError('STORE_UNAVAILABLE', 'SQLite store is locked by another process (busy timeout)', { cause: error });
    }
    throw error;
  }
}
