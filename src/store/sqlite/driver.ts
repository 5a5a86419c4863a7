/**
 * The subset of a SQLite driver the store uses, in better-sqlite3's shape (which satisfies it as
 * it is): prepared statements with named (`@name`) or positional parameters, `exec`, one-value
 * pragmas and transactions in the three SQLite modes. `node:sqlite` (Node.js 22.13+ and 24)
 * gets a small adapter (`node-driver.ts`), so the store runs without a native build where the
 * running Node has it. Which of the two a process runs on is chosen once (`sqliteDriver`,
 * connection.ts).
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
