import type { SqliteDatabase } from './driver.js';
import { TasklatchError } from '../../core/errors.js';
import { isBusy } from './connection.js';

/**
 * How the SQLite store's statements become transactions: each write is one `BEGIN IMMEDIATE`
 * transaction on the store's one connection (the admissions of one turn of the event loop share
 * one, each in a savepoint: see WriteBatcher). Writes are synchronous calls there: nothing is
 * pipelined.
 */

/**
 * Runs `fn` in a `BEGIN IMMEDIATE` transaction: the write lock is taken before the first read,
 * so two processes can never both read one version and both write. A lock still held by another
 * process after the busy timeout is `STORE_UNAVAILABLE`.
 */
export function inTransaction<T>(db: SqliteDatabase, fn: () => T): T {
  const runner = runnerOf(db);
  runner.next = fn;
  try {
    const value = runner.immediate() as T;
    committed(db);
    return value;
  } catch (error) {
    if (isBusy(error)) {
      throw new TasklatchError('STORE_UNAVAILABLE', 'SQLite store is locked by another process (busy timeout)', { cause: error });
    }
    throw error;
  }
}

const afterCommit = new WeakMap<SqliteDatabase, () => void>();

/** Calls `then` after each transaction that commits on `db` (the store's background checkpoints). */
export function onCommit(db: SqliteDatabase, then: () => void): void {
  afterCommit.set(db, then);
}

/** After a write transaction on `db` ended well: its commit is told (a nested one only released its savepoint). */
export function committed(db: SqliteDatabase): void {
  if (!db.inTransaction) afterCommit.get(db)?.();
}

/** One transaction function per connection, run with the write of the moment (`next`). */
interface Runner {
  next: (() => unknown) | null;
  immediate(): unknown;
}

const runners = new WeakMap<SqliteDatabase, Runner>();

/**
 * The connection's transaction function, made once: a driver's `transaction()` builds a set of
 * wrappers on every call, which a write per admission would pay each time. The write to run is
 * taken from `next` as the transaction begins, so a write nested in another runs its own.
 */
function runnerOf(db: SqliteDatabase): Runner {
  let runner = runners.get(db);
  if (runner === undefined) {
    const made: Runner = { next: null, immediate: () => undefined };
    const transaction = db.transaction(() => {
      const fn = made.next;
      made.next = null;
      if (fn === null) throw new TasklatchError('INTERNAL', 'a SQLite transaction began with nothing to run');
      return fn();
    });
    made.immediate = () => transaction.immediate();
    runners.set(db, (runner = made));
  }
  return runner;
}
