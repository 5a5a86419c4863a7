import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { TasklatchError } from '../core/errors.js';

/**
 * The migration planner both SQL stores share: which numbered files exist, in which order they
 * apply, which a database already has, and when a database belongs to another version of
 * tasklatch. How to lock, run a file and keep the ledger is each dialect's (`MigrationDialect`).
 */

/** One numbered SQL file of a dialect's folder. */
export interface MigrationFile {
  /** The file name, e.g. `001_init.sql`; recorded in `tasklatch_migrations`. */
  name: string;
  sql: string;
  /** Lowercase hex SHA-256 of `sql`: a recorded migration whose text changed is refused. */
  checksum: string;
}

/** A ledger row: `checksum` is null where the ledger predates checksums (PostgreSQL before 004). */
export interface AppliedMigration {
  name: string;
  checksum: string | null;
}

/** `001_init.sql`: a number, an underscore, a name. Anything else in the folder is ignored. */
const MIGRATION_FILE = /^(\d+)_[\w-]+\.sql$/;

function numberOf(name: string): number {
  return Number(MIGRATION_FILE.exec(name)![1]);
}

/** The migration files of `dir`, in the order they apply: by number, not by text (`10` after `9`). */
export async function readMigrationFiles(dir: URL): Promise<MigrationFile[]> {
  const names = (await readdir(dir)).filter((name) => MIGRATION_FILE.test(name)).sort((a, b) => numberOf(a) - numberOf(b));
  return Promise.all(
    names.map(async (name) => {
      const sql = await readFile(new URL(name, dir), 'utf8');
      return { name, sql, checksum: createHash('sha256').update(sql, 'utf8').digest('hex') };
    }),
  );
}

/**
 * The files still to apply, after checking what the ledger records: a recorded migration this
 * code does not know, or one whose text changed since it was applied, raises `SCHEMA_MISMATCH`
 * (the database belongs to another version of tasklatch).
 */
export function pendingMigrations(files: readonly MigrationFile[], applied: readonly AppliedMigration[]): MigrationFile[] {
  const byName = new Map(files.map((f) => [f.name, f]));
  const unknown = applied
    .filter((a) => !byName.has(a.name))
    .map((a) => a.name)
    .sort();
  if (unknown.length > 0) {
    throw new TasklatchError('SCHEMA_MISMATCH', `the database has migrations this tasklatch does not know: ${unknown.join(', ')}`, {
      data: { unknown },
    });
  }
  for (const row of applied) {
    if (row.checksum !== null && row.checksum !== byName.get(row.name)!.checksum) {
      throw new TasklatchError('SCHEMA_MISMATCH', `migration ${row.name} changed after it was applied`, { data: { changed: row.name } });
    }
  }
  const done = new Set(applied.map((a) => a.name));
  return files.filter((f) => !done.has(f.name));
}

/** What a dialect does inside one of its migration transactions. */
export interface MigrationSession {
  /** The ledger as it stands (creating it if needed). */
  readApplied(): Promise<AppliedMigration[]>;
  /** Runs one file and records it in the ledger. */
  runFile(file: MigrationFile): Promise<void>;
  /** Fills in the checksum of a file recorded without one. */
  recordChecksum(file: MigrationFile): Promise<void>;
  /** The last step of the run (the shared secret). */
  finish(): Promise<void>;
}

/** The per-dialect hooks of the planner. */
export interface MigrationDialect {
  /**
   * `run`: the whole migration is one transaction (PostgreSQL, whose DDL is transactional);
   * `file`: each file is a transaction of its own, and the ledger is re-read in each (SQLite).
   */
  readonly scope: 'run' | 'file';
  /** Runs `work` in one transaction under the dialect's migration lock. */
  locked<T>(work: (session: MigrationSession) => Promise<T>): Promise<T>;
}

/** Applies the pending files through `dialect` and returns the names it applied, in order. */
export async function applyMigrations(files: readonly MigrationFile[], dialect: MigrationDialect): Promise<string[]> {
  if (dialect.scope === 'run') {
    return dialect.locked(async (session) => {
      const ran = await applyPending(session, files, Infinity);
      await session.finish();
      return ran;
    });
  }
  const ran: string[] = [];
  // One file per transaction, each re-planned from the ledger: a second process opening the
  // same fresh file waits for the first's lock and then finds that file applied.
  for (;;) {
    const step = await dialect.locked((session) => applyPending(session, files, 1));
    if (step.length === 0) break;
    ran.push(...step);
  }
  await dialect.locked(async (session) => {
    pendingMigrations(files, await session.readApplied());
    await session.finish();
  });
  return ran;
}

async function applyPending(session: MigrationSession, files: readonly MigrationFile[], most: number): Promise<string[]> {
  const applied = await session.readApplied();
  const pending = pendingMigrations(files, applied).slice(0, most);
  for (const file of pending) await session.runFile(file);
  const ledger = pending.length === 0 ? applied : await session.readApplied();
  const byName = new Map(files.map((f) => [f.name, f]));
  for (const row of ledger) if (row.checksum === null) await session.recordChecksum(byName.get(row.name)!);
  return pending.map((f) => f.name);
}
