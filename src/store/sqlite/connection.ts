import { mkdirSync } from 'node:fs';
import { createRequire, isBuiltin } from 'node:module';
import { dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { TasklatchError, isTasklatchError } from '../../core/errors.js';
import type { SqliteDatabase, SqliteDriverName, SqliteOpenOptions } from './driver.js';
import { openNodeSqlite } from './node-driver.js';

/**
 * How the SQLite store connects: the driver of this process (chosen once), and a database file
 * opened in WAL mode with the pragmas every connection of the store needs.
 */

/** How every connection of a SQLite store is opened. */
export interface SqliteConnectionOptions {
  /** How long a write waits for another process's write lock before failing (default 5000). */
  busyTimeoutMs?: number;
  /**
   * How much of the file is read through a memory map (`PRAGMA mmap_size`; default `MMAP_BYTES`,
   * which SQLite caps at its own largest, just under 2 GiB; 0: none, every page read by a `read`
   * call). A read through the map costs no system call and no copy. Above all, pages a process
   * has mapped are the last the kernel takes back: proactive reclaim (DAMON's `pageout`, a
   * container's `memory.reclaim`) drops page cache no process maps once it has gone unread for
   * a while, and a store read by `read` calls then waits for the disk on every row it has not
   * read lately. SQLite reads through the map and writes as before; WAL mode keeps both
   * coherent. What the map changes: a disk's read error ends the process (SIGBUS) instead of
   * failing the one statement, and mapped pages count in the process's resident size. Set 0 for
   * a file on a network filesystem or a disk whose read errors must be answered as errors.
   */
  mmapBytes?: number;
}

/** The default `mmapBytes`: 2 GiB, which SQLite caps at its largest (0x7fff0000 bytes in its default build). */
const MMAP_BYTES = 2 ** 31;

/**
 * Opens the file at `path` (creating its folder), in WAL mode with foreign keys on, the busy
 * timeout and the memory map set, and hands the connection to `setup`; a failure closes it
 * again. A path that cannot be opened raises `STORE_UNAVAILABLE` naming the path; options out of
 * range raise `INVALID_INPUT` and open nothing.
 *
 * Some locks SQLite reports at once instead of waiting for them through the busy handler: a
 * fresh file being switched to WAL, or its WAL index being rebuilt, by another process opening
 * it at the same moment. Such a SQLITE_BUSY during opening is retried, with the whole open, for
 * as long as the busy timeout allows; the migrations it runs are safe to run again.
 */
export async function openDatabase<T>(path: string, options: SqliteConnectionOptions, setup: (db: SqliteDatabase) => Promise<T>): Promise<T> {
  const busyTimeoutMs = options.busyTimeoutMs ?? 5000;
  const mmapBytes = options.mmapBytes ?? MMAP_BYTES;
  if (!Number.isSafeInteger(mmapBytes) || mmapBytes < 0) {
    throw new TasklatchError('INVALID_INPUT', `mmapBytes must be a whole number of bytes, 0 or more; got ${String(mmapBytes)}`);
  }
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
      db.pragma(`mmap_size = ${mmapBytes}`);
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

/** A driver the store can run on: its name, how it opens a file, and where its module is (another thread loads it there). */
interface Driver {
  name: SqliteDriverName;
  open(path: string, options: SqliteOpenOptions): SqliteDatabase;
  module?: string;
}

let chosen: Driver | null = null;
const require = createRequire(import.meta.url);

/**
 * The driver of this process, chosen once: `better-sqlite3` where it is installed and built for
 * the running Node (an optional dependency: on Node 22 and 24 without its prebuilt binary it is
 * absent or does not load), else `node:sqlite` where the running Node has it, else a
 * `STORE_DRIVER_MISSING` error that says what to install. `TASKLATCH_SQLITE_DRIVER` picks one.
 */
export function sqliteDriver(): Driver {
  if (chosen !== null) return chosen;
  const wanted = process.env.TASKLATCH_SQLITE_DRIVER;
  if (wanted !== undefined && wanted !== 'better-sqlite3' && wanted !== 'node:sqlite') {
    throw new TasklatchError('INVALID_INPUT', `TASKLATCH_SQLITE_DRIVER must be better-sqlite3 or node:sqlite, not ${JSON.stringify(wanted)}`);
  }
  const problems: string[] = [];
  if (wanted !== 'node:sqlite') {
    const native = tryBetterSqlite(problems);
    if (native !== null) return (chosen = native);
  }
  if (wanted !== 'better-sqlite3') {
    const builtin = tryNodeSqlite(problems);
    if (builtin !== null) return (chosen = builtin);
  }
  throw new TasklatchError(
    'STORE_DRIVER_MISSING',
    `no SQLite driver for Node.js ${process.versions.node}: ${problems.join('; ')}. Run on Node.js 22.13+ (node:sqlite), or install better-sqlite3 built for this Node (npm install better-sqlite3)`,
  );
}

/** Opens `path` with this process's driver. */
export function openSqlite(path: string, options: SqliteOpenOptions = {}): SqliteDatabase {
  return sqliteDriver().open(path, options);
}

function tryBetterSqlite(problems: string[]): Driver | null {
  try {
    const Database = require('better-sqlite3') as new (path: string, options: SqliteOpenOptions) => SqliteDatabase;
    // Loading the module does not load its binary: a first database does.
    new Database(':memory:', {}).close();
    return { name: 'better-sqlite3', open: (path, options) => new Database(path, options), module: require.resolve('better-sqlite3') };
  } catch (error) {
    problems.push(`better-sqlite3 does not load (${firstLine(error)})`);
    return null;
  }
}

function tryNodeSqlite(problems: string[]): Driver | null {
  // Asked of the process when needed, never imported: on Node 20 the module does not exist, and
  // on 22 its first load prints an experimental warning, which only a store that uses it should cause.
  if (!isBuiltin('node:sqlite')) {
    problems.push('node:sqlite is not in this Node.js');
    return null;
  }
  return { name: 'node:sqlite', open: openNodeSqlite };
}

function firstLine(error: unknown): string {
  return String((error as Error)?.message ?? error).split('\n')[0] ?? '';
}
