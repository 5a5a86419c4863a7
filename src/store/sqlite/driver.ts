import { createRequire, isBuiltin } from 'node:module';
import { TasklatchError } from '../../core/errors.js';
import { openNodeSqlite } from './node-driver.js';

/**
 * The subset of a SQLite driver the store uses, in better-sqlite3's shape (which satisfies it as
 * it is): prepared statements with named (`@name`) or positional parameters, `exec`, one-value
 * pragmas and transactions in the three SQLite modes. `node:sqlite` (Node.js 22.13+ and 24)
 * gets a small adapter (`node-driver.ts`), so the store runs without a native build where the
 * running Node has it.
 */
export interface SqliteStatement {
  get(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
  run(...params: unknown[]): { changes: number; lastInsertRowid: number | bigint };
}

/** A function run in a transaction, in the mode its caller picks (a plain call is deferred). */
export interface SqliteTransaction<T> {
  (): T;
  deferred(): T;
  immediate(): T;
}

export interface SqliteDatabase {
  prepare(sql: string): SqliteStatement;
  exec(sql: string): unknown;
  /** `pragma('x = y')` sets; `pragma('x', { simple: true })` reads one value. */
  pragma(source: string, options?: { simple?: boolean }): unknown;
  transaction<T>(fn: () => T): SqliteTransaction<T>;
  readonly inTransaction: boolean;
  /** The path it was opened with. */
  readonly name: string;
  /** False once closed. */
  readonly open: boolean;
  /** An in-memory database (no file, so no other connection can see it). */
  readonly memory: boolean;
  close(): unknown;
}

export interface SqliteOpenOptions {
  readonly?: boolean;
  fileMustExist?: boolean;
  /** Busy timeout (ms) from the first statement on. */
  timeout?: number;
}

/** Which driver the store runs on: the native module where it loads, else Node's own. */
export type SqliteDriverName = 'better-sqlite3' | 'node:sqlite';

interface Driver {
  name: SqliteDriverName;
  open(path: string, options: SqliteOpenOptions): SqliteDatabase;
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
    return { name: 'better-sqlite3', open: (path, options) => new Database(path, options) };
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
