import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { openSqlite, type SqliteDatabase } from './driver.js';
import { TasklatchError, isTasklatchError } from '../../core/errors.js';

/**
 * Opens the file at `path` (creating its folder), in WAL mode with foreign keys on and the busy
 * timeout set, and hands the connection to `setup`; a failure closes it again. A path that
 * cannot be opened raises `STORE_UNAVAILABLE` naming the path.
 *
 * Some locks SQLite reports at once instead of waiting for them through the busy handler: a
 * fresh file being switched to WAL, or its WAL index being rebuilt, by another process opening
 * it at the same moment. Such a SQLITE_BUSY during opening is retried, with the whole open, for
 * as long as the busy timeout allows; the migrations it runs are safe to run again.
 */
export async function openDatabase<T>(path: string, busyTimeoutMs: number, setup: (db: SqliteDatabase) => Promise<T>): Promise<T> {
  const giveUpAt = Date.now() + busyTimeoutMs;
  for (let attempt = 0; ; attempt++) {
    let db: SqliteDatabase | null = null;
    try {
      if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
      // The busy timeout is set by the constructor, before the first pragma: switching a fresh
      // file to WAL takes a lock that a second process opening it at the same moment must wait on.
      db = openSqlite(path, { timeout: busyTimeoutMs });
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = NORMAL');
      db.pragma(`busy_timeout = ${Math.max(0, Math.trunc(busyTimeoutMs))}`);
      db.pragma('foreign_keys = ON');
      return await setup(db);
    } catch (error) {
      db?.close();
      if (isBusy(error) && Date.now() < giveUpAt) {
        await sleep(Math.min(10 * 2 ** attempt, 200, Math.max(1, giveUpAt - Date.now())));
        continue;
      }
      if (isTasklatchError(error)) throw error;
      throw unavailable(path, error);
    }
  }
}

/** A file that cannot be opened or read as a tasklatch database. */
export function unavailable(path: string, cause: unknown): TasklatchError {
  return new TasklatchError('STORE_UNAVAILABLE', `cannot open SQLite store at ${path}: ${(cause as Error).message}`, {
    data: { path },
    cause,
  });
}

/** better-sqlite3 reports a lock it could not get as SQLITE_BUSY (or one of its extended codes). */
export function isBusy(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('SQLITE_BUSY');
}
