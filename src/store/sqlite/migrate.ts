import { randomBytes } from 'node:crypto';
import type { SqliteDatabase } from './driver.js';
import { applyMigrations, readMigrationFiles, type AppliedMigration, type MigrationDialect, type MigrationSession } from '../migrations.js';

/**
 * The numbered SQL files. Three levels up is the package root from both `src/store/sqlite` and
 * `dist/store/sqlite`, so the same URL serves tests and the published build (which ships
 * `migrations/` next to `dist/`).
 */
const MIGRATIONS_DIR = new URL('../../../migrations/sqlite/', import.meta.url);

/**
 * Applies the pending SQLite migrations in order and returns the names it applied.
 *
 * Each file runs in its own `BEGIN IMMEDIATE` transaction that first re-reads
 * `tasklatch_migrations`: when two processes open a fresh file at once, the second waits for
 * the first's write lock (busy_timeout) and then finds the file already applied, instead of
 * running `CREATE TABLE` twice. What is refused (`SCHEMA_MISMATCH`) is the shared planner's.
 */
export async function migrateSqlite(db: SqliteDatabase): Promise<string[]> {
  return applyMigrations(await readMigrationFiles(MIGRATIONS_DIR), sqliteDialect(db));
}

/** SQLite's hooks: the file's write lock is the migration lock, one transaction per file. */
function sqliteDialect(db: SqliteDatabase): MigrationDialect {
  const session: MigrationSession = {
    async readApplied() {
      db.exec('CREATE TABLE IF NOT EXISTS tasklatch_migrations (name TEXT PRIMARY KEY, checksum TEXT NOT NULL, applied_at_ms INTEGER NOT NULL)');
      return db.prepare('SELECT name, checksum FROM tasklatch_migrations ORDER BY name').all() as AppliedMigration[];
    },
    async runFile(file) {
      db.exec(file.sql);
      db.prepare('INSERT INTO tasklatch_migrations (name, checksum, applied_at_ms) VALUES (?, ?, ?)').run(file.name, file.checksum, Date.now());
    },
    async recordChecksum(file) {
      db.prepare('UPDATE tasklatch_migrations SET checksum = ? WHERE name = ?').run(file.checksum, file.name);
    },
    async finish() {
      // OR IGNORE: the first process to migrate picks the secret; every later one keeps it.
      db.prepare("INSERT OR IGNORE INTO tasklatch_meta (key, value) VALUES ('secret', ?)").run(randomBytes(32).toString('hex'));
    },
  };
  return {
    scope: 'file',
    // Not db.transaction(): its callback must be synchronous. Every hook above is, so nothing
    // else runs on this connection between BEGIN and COMMIT.
    async locked(work) {
      db.exec('BEGIN IMMEDIATE');
      try {
        const value = await work(session);
        db.exec('COMMIT');
        return value;
      } catch (error) {
        if (db.inTransaction) db.exec('ROLLBACK');
        throw error;
      }
    },
  };
}
