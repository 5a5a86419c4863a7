import { existsSync } from 'node:fs';
import type { SqliteDatabase, SqliteOpenOptions, SqliteStatement, SqliteTransaction } from './driver.js';

/** What the store uses of `node:sqlite` (Node.js 22.13+, 24): typed here, since @types/node 20 has no such module. */
interface NodeStatement {
  get(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
  run(...params: unknown[]): { changes: number | bigint; lastInsertRowid: number | bigint };
}

interface NodeDatabase {
  prepare(sql: string): NodeStatement;
  exec(sql: string): void;
  close(): void;
  readonly isTransaction?: boolean;
}

interface NodeSqliteModule {
  DatabaseSync: new (path: string, options?: { readOnly?: boolean; enableForeignKeyConstraints?: boolean }) => NodeDatabase;
}

/**
 * better-sqlite3's error codes for the SQLite result codes the store tells apart
 * (`isBusy`, the audit writer's line errors, an ask's duplicate key); `node:sqlite` reports
 * the number only (`errcode`). Extended codes first, then the primary code (the low byte).
 */
const CODE_NAMES: Readonly<Record<number, string>> = {
  261: 'SQLITE_BUSY_RECOVERY',
  517: 'SQLITE_BUSY_SNAPSHOT',
  773: 'SQLITE_BUSY_TIMEOUT',
  1555: 'SQLITE_CONSTRAINT_PRIMARYKEY',
  2067: 'SQLITE_CONSTRAINT_UNIQUE',
  787: 'SQLITE_CONSTRAINT_FOREIGNKEY',
  1299: 'SQLITE_CONSTRAINT_NOTNULL',
  275: 'SQLITE_CONSTRAINT_CHECK',
  5: 'SQLITE_BUSY',
  6: 'SQLITE_LOCKED',
  18: 'SQLITE_TOOBIG',
  19: 'SQLITE_CONSTRAINT',
  20: 'SQLITE_MISMATCH',
  25: 'SQLITE_RANGE',
};

/** Gives a `node:sqlite` error the `code` better-sqlite3 would have given it. */
function coded(error: unknown): unknown {
  const errcode = (error as { errcode?: unknown } | null)?.errcode;
  if (typeof errcode === 'number') {
    const name = CODE_NAMES[errcode] ?? CODE_NAMES[errcode & 0xff];
    if (name !== undefined) (error as { code?: unknown }).code = name;
  }
  return error;
}

function guarded<A extends unknown[], R>(fn: (...args: A) => R): (...args: A) => R {
  return (...args: A) => {
    try {
      return fn(...args);
    } catch (error) {
      throw coded(error);
    }
  };
}

/**
 * The named parameters of a statement (`@name`, `:name`, `$name`): better-sqlite3 binds an
 * object's members by these names and ignores the rest, where `node:sqlite` refuses a member
 * the statement does not name. The store's statements hold no such characters in literals.
 */
function namedParameters(sql: string): Set<string> {
  return new Set([...sql.matchAll(/[@:$]([A-Za-z_][A-Za-z0-9_]*)/g)].map((m) => m[1]!));
}

/** The parameters as `node:sqlite` takes them: a named object cut to the names the statement has. */
function bindable(params: unknown[], names: Set<string>): unknown[] {
  const [first] = params;
  if (params.length !== 1 || first === null || typeof first !== 'object' || Array.isArray(first) || first instanceof Uint8Array) return params;
  return [Object.fromEntries(Object.entries(first).filter(([key]) => names.has(key)))];
}

class NodeSqliteDatabase implements SqliteDatabase {
  private depth = 0;
  private savepoints = 0;
  private closed = false;
  readonly memory: boolean;

  constructor(
    private readonly db: NodeDatabase,
    readonly name: string,
  ) {
    this.memory = name === ':memory:' || name === '';
  }

  get open(): boolean {
    return !this.closed;
  }

  get inTransaction(): boolean {
    return this.db.isTransaction ?? this.depth > 0;
  }

  prepare(sql: string): SqliteStatement {
    const statement = guarded(() => this.db.prepare(sql))();
    const names = namedParameters(sql);
    return {
      get: guarded((...params: unknown[]) => statement.get(...bindable(params, names))),
      all: guarded((...params: unknown[]) => statement.all(...bindable(params, names))),
      run: guarded((...params: unknown[]) => {
        const out = statement.run(...bindable(params, names));
        return { changes: Number(out.changes), lastInsertRowid: out.lastInsertRowid };
      }),
    };
  }

  exec(sql: string): void {
    guarded(() => this.db.exec(sql))();
  }

  pragma(source: string, options: { simple?: boolean } = {}): unknown {
    if (options.simple !== true) return this.prepare(`PRAGMA ${source}`).all();
    const row = this.prepare(`PRAGMA ${source}`).get() as Record<string, unknown> | undefined;
    return row === undefined ? undefined : Object.values(row)[0];
  }

  /** better-sqlite3's semantics: BEGIN in the mode asked, or a savepoint inside a transaction; rolled back on a throw. */
  transaction<T>(fn: () => T): SqliteTransaction<T> {
    const run = (mode: 'DEFERRED' | 'IMMEDIATE' | 'EXCLUSIVE') => (): T => {
      const nested = this.inTransaction;
      const savepoint = `tasklatch_sp_${++this.savepoints}`;
      this.exec(nested ? `SAVEPOINT ${savepoint}` : `BEGIN ${mode}`);
      this.depth += 1;
      try {
        const result = fn();
        this.exec(nested ? `RELEASE ${savepoint}` : 'COMMIT');
        return result;
      } catch (error) {
        if (nested) {
          this.exec(`ROLLBACK TO ${savepoint}`);
          this.exec(`RELEASE ${savepoint}`);
        } else if (this.inTransaction) this.exec('ROLLBACK');
        throw error;
      } finally {
        this.depth -= 1;
      }
    };
    const deferred = run('DEFERRED');
    return Object.assign(() => deferred(), { deferred, immediate: run('IMMEDIATE') });
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.db.close();
  }
}

/** Opens `path` with Node's own SQLite, as better-sqlite3 would with the same options. */
export function openNodeSqlite(path: string, options: SqliteOpenOptions): SqliteDatabase {
  const sqlite = process.getBuiltinModule('node:sqlite') as NodeSqliteModule | undefined;
  if (sqlite === undefined) throw new Error('node:sqlite is not in this Node.js');
  if ((options.fileMustExist === true || options.readonly === true) && path !== ':memory:' && !existsSync(path)) {
    throw Object.assign(new Error(`unable to open database file: ${path} does not exist`), { code: 'SQLITE_CANTOPEN' });
  }
  // Foreign keys as better-sqlite3 leaves them (off until the store's pragma turns them on).
  const db = new NodeSqliteDatabase(
    guarded(() => new sqlite.DatabaseSync(path, { readOnly: options.readonly === true, enableForeignKeyConstraints: false }))(),
    path,
  );
  if (options.timeout !== undefined) db.exec(`PRAGMA busy_timeout = ${Math.max(0, Math.trunc(options.timeout))}`);
  return db;
}
