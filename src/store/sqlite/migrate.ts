import { createHash, randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import type Database from 'better-sqlite3';
import { TasklatchError } from '../../core/errors.js';

/**
 * The numbered SQL files. Three levels up is the package root from both `src/store/sqlite` and
 * `dist/store/sqlite`, so the same URL serves tests and the published build (which ships
 * `migrations/` next to `dist/`).
 */
const MIGRATIONS_DIR = new URL('../../../migrations/sqlite/', import.meta.url);

/** `001_init.sql`: a number, an underscore, a name. Anything else in the folder is ignored. */
const MIGRATION_FILE = /^(\d+)_[\w-]+\.sql$/;

interface MigrationFile {
  name: string;
  sql: string;
  checksum: string;
}

function readMigrations(): MigrationFile[] {
  return readdirSync(MIGRATIONS_DIR)
    .filter((name) => MIGRATION_FILE.test(name))
    .sort((a, b) => Number(MIGRATION_FILE.exec(a)![1]) - Number(MIGRATION_FILE.exec(b)![1]))
    .map((name) => {
      const sql = readFileSync(new URL(name, MIGRATIONS_DIR), 'utf8');
      return { name, sql, checksum: createHash('sha256').update(sql, 'utf8').digest('hex') };
    });
}

/**
 * Applies the pending SQLite migrations in order and returns the names it applied.
 *
 * Each file runs in its own `BEGIN IMMEDIATE` transaction that first re-reads
 * `tasklatch_migrations`: when two processes open a fresh file at once, the second waits for
 * the first's write lock (busy_timeout) and then finds the file already applied, instead of
 * running `CREATE TABLE` twice. A recorded migration this code does not know, or one whose text
 * changed since it was applied, raises `SCHEMA_MISMATCH`: the database belongs to another
 * version of tasklatch.
 */
export async function migrateSqlite(db: Database.Database): Promise<string[]> {
  const files = readMigrations();
  const applied: string[] = [];
  for (const file of files) {
    const ran = db
      .transaction(() => {
        ensureLedger(db);
        const row = db.prepare('SELECT checksum FROM tasklatch_migrations WHERE name = ?').get(file.name) as
          | { checksum: string }
          | undefined;
        if (row !== undefined) {
          if (row.checksum !== file.checksum) {
            throw new TasklatchError('SCHEMA_MISMATCH', `migration ${file.name} changed after it was applied`);
          }
          return false;
        }
        db.exec(file.sql);
        db.prepare('INSERT INTO tasklatch_migrations (name, checksum, applied_at_ms) VALUES (?, ?, ?)').run(
          file.name,
          file.checksum,
          Date.now(),
        );
        return true;
      })
      .immediate();
    if (ran) applied.push(file.name);
  }
  db.transaction(() => {
    ensureLedger(db);
    checkNoUnknown(db, files);
    // OR IGNORE: the first process to migrate picks the secret; every later one keeps it.
    db.prepare("INSERT OR IGNORE INTO tasklatch_meta (key, value) VALUES ('secret', ?)").run(randomBytes(32).toString('hex'));
  }).immediate();
  return applied;
}

function ensureLedger(db: Database.Database): void {
  db.exec(
    'CREATE TABLE IF NOT EXISTS tasklatch_migrations (name TEXT PRIMARY KEY, checksum TEXT NOT NULL, applied_at_ms INTEGER NOT NULL)',
  );
}

function checkNoUnknown(db: Database.Database, files: readonly MigrationFile[]): void {
  const known = new Set(files.map((f) => f.name));
  const recorded = db.prepare('SELECT name FROM tasklatch_migrations ORDER BY name').pluck().all() as string[];
  const unknown = recorded.filter((name) => !known.has(name));
  if (unknown.length > 0) {
    throw new TasklatchError('SCHEMA_MISMATCH', `database has migrations this tasklatch does not know: ${unknown.join(', ')}`, {
      data: { unknown },
    });
  }
}
